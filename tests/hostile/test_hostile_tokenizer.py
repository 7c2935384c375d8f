"""Hostile tokenizers (issue 40, items 13a and 15): a big tokenizer.json is never read for token ids and is capped
like config.json where text needs it, a regex that panics the Rust library and a tokenizer.json or
tokenizer_config.json of the wrong shape are one line naming the file, exit 2. Peak RSS is measured in a
subprocess."""

from __future__ import annotations

import itertools
import json
import os
import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import invoke, one_line_error

from transformer_cli.gguf.vocab import MAX_TOKENIZER_BYTES

tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers library reads tokenizer.json (the text extra)")
TINY = Path(__file__).parents[2] / "examples" / "hf" / "tiny-llama"
ROOT = Path(__file__).parents[2]


def _peak(*args: object) -> tuple[int, str, int]:
    """`tfm ARGS` in a subprocess: its exit code, its stderr and its peak RSS in MiB (a fresh parent per run, so
    RUSAGE_CHILDREN is that one process's)."""
    code = (
        "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "sys.stdout.write(r.stderr)"
    )
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code, sys.executable, "-m", "transformer_cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    first, _, stderr = done.stdout.partition("\n")
    rc, kib = map(int, first.split())
    return rc, stderr, kib // 1024


def _big_bpe(path: Path) -> None:
    """A valid byte-level BPE tokenizer.json of 475,254 tokens and merges (12 MB; the library holds about 200 MiB)."""
    vocab, merges = {c: i for i, c in enumerate(string.ascii_lowercase)}, []
    for length in (2, 3, 4):
        for word in map("".join, itertools.product(string.ascii_lowercase, repeat=length)):
            vocab[word] = len(vocab)
            merges.append(f"{word[:-1]} {word[-1]}")
    tok = {
        "model": {"type": "BPE", "vocab": vocab, "merges": merges},
        "decoder": {"type": "ByteLevel"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
    }
    path.write_text(json.dumps(tok))


@pytest.fixture
def folder(runner, tmp_path) -> Path:
    out = tmp_path / "m"
    assert invoke(runner, "init", TINY, "-o", out).exit_code == 0
    np.save(tmp_path / "ids.npy", np.array([1, 2, 3]))
    return out


def test_token_ids_never_read_a_big_tokenizer(tmp_path, folder):
    """The control is the same run without the tokenizer: with it, tfm read it (about 200 MiB more) before."""
    args = ("generate", folder, "-i", tmp_path / "ids.npy", "-k", "2", "--json")
    rc, stderr, without = _peak(*args)
    assert rc == 0, stderr
    _big_bpe(folder / "tokenizer.json")
    rc, stderr, with_it = _peak(*args)
    assert rc == 0, stderr
    assert with_it - without < 50, (without, with_it)


def test_a_tokenizer_over_the_cap_is_one_line_naming_it(tmp_path, folder):
    big = folder / "tokenizer.json"
    with big.open("wb") as f:  # sparse: no disk used
        f.truncate(MAX_TOKENIZER_BYTES + 1)
    limit = MAX_TOKENIZER_BYTES
    said = f"error: {big}: {limit + 1} bytes, expected a tokenizer.json of at most {limit} bytes"
    for args in (("generate", folder, "--prompt", "hello"), ("convert", folder, "-o", tmp_path / "x.gguf")):
        rc, stderr, peak = _peak(*args)
        assert (rc, stderr.strip()) == (2, said)
        assert peak < 400, peak  # the cap's bytes at most, beside tfm itself
    assert not (tmp_path / "x.gguf").exists()


def test_a_regex_that_panics_the_rust_tokenizer_is_one_line(runner, folder):
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(30)} | {"[UNK]": 30}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("((a+)+)+b"), behavior="isolated")  # backtracks past onig's limit
    tok.save(str(folder / "tokenizer.json"))
    error = one_line_error(invoke(runner, "generate", folder, "--prompt", "a" * 50, "-k", "1"))
    assert error == (
        f"error: {folder / 'tokenizer.json'}: the tokenizer fails on the prompt (the tokenizers library "
        "panicked: Onig: Regex search error: retry-limit-in-match over)"
    )
    rc, stderr, _ = _peak("generate", folder, "--prompt", "a" * 50, "-k", "1")  # Rust's own panic lines held back
    assert rc == 2 and stderr.strip() == error


# -- convert -o x.gguf: the files llama.cpp's converter reads ------------------------------------------------

GOOD = {
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
    "decoder": {"type": "ByteLevel"},
    "pre_tokenizer": {"type": "ByteLevel"},
    "added_tokens": [],
}
DEEP = "[" * 100_000 + "]" * 100_000


def _with(key: str, value: object) -> str:
    data = json.loads(json.dumps(GOOD))
    data[key] = value if key != "model" else data["model"] | value
    return json.dumps(data)


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("tokenizer.json", DEEP, "not JSON: nested too deeply"),
        ("tokenizer.json", "{'model': 1}", "not JSON: Expecting property name enclosed in double quotes"),
        ("tokenizer.json", "[1, 2]", "expected a JSON object, got list"),
        ("tokenizer.json", _with("model", {"merges": 5}), "key 'model.merges': expected a list of merges"),
        ("tokenizer.json", _with("added_tokens", 7), "key 'added_tokens': expected a list of tokens"),
        (
            "tokenizer.json",
            _with("pre_tokenizer", {"type": "Sequence", "pretokenizers": [1, 2]}),
            "key 'pre_tokenizer.pretokenizers': expected a list of objects",
        ),
        ("tokenizer.json", _with("post_processor", [1]), "key 'post_processor': expected an object"),
        (
            "tokenizer.json",
            _with("post_processor", {"type": "TemplateProcessing", "single": ["$A"]}),
            "key 'post_processor.single': expected a list of template pieces",
        ),
        ("tokenizer_config.json", DEEP, "not JSON: nested too deeply"),
        ("tokenizer_config.json", "{", "not JSON: Expecting property name enclosed in double quotes"),
        ("tokenizer_config.json", '["bos"]', "expected a JSON object, got list"),
    ],
)
def test_a_hostile_tokenizer_file_in_convert_to_gguf_is_one_line_naming_it(runner, tmp_path, folder, name, text, said):
    (folder / "tokenizer.json").write_text(json.dumps(GOOD))
    (folder / name).write_text(text)
    error = one_line_error(invoke(runner, "convert", folder, "-o", tmp_path / "x.gguf"))
    assert error.startswith(f"error: {folder / name}: {said}"), error
    assert not (tmp_path / "x.gguf").exists()


def test_the_same_folder_with_good_files_converts(runner, tmp_path, folder):
    """The control: GOOD as it is is written (so each case above fails for its one change)."""
    (folder / "tokenizer.json").write_text(json.dumps(GOOD))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "a"}))
    result = invoke(runner, "convert", folder, "-o", tmp_path / "x.gguf")
    assert result.exit_code == 0, result.output
