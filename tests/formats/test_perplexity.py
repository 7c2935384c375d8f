"""Issue 43, item 4: a model's perplexity over a token stream, as llama-perplexity computes it, against transformers'
own cross entropy in float64 (its float32 internals recomputed in float64: hf_exact), chunk by chunk; and the
refusals, each one line."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
from helpers_hf_transformers import build
from hf_exact import exact

import transformer_cli as tfm
from transformer_cli.errors import TfmError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

IDS = np.random.default_rng(43).integers(0, 97, size=50)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    model = build("llama")  # float64, every parameter random
    folder = tmp_path_factory.mktemp("perplexity") / "llama"
    model.save_pretrained(folder)
    return folder, exact(model)


def _theirs(model, ids: np.ndarray, ctx: int | None) -> tuple[float, float, int]:
    """transformers' cross entropy of the scored next tokens, each chunk run alone, and llama-perplexity's error."""
    n = ids.size
    spans = [(0, n, 0)] if ctx is None else [(i * ctx, (i + 1) * ctx, ctx // 2) for i in range(n // ctx)]
    nll: list[float] = []
    for start, stop, first in spans:
        with torch.no_grad():
            logits = model(torch.from_numpy(ids[start:stop])[None]).logits[0].double()  # (c, V)
        targets = torch.from_numpy(ids[start + first + 1 : stop])
        nll += torch.nn.functional.cross_entropy(logits[first:-1], targets, reduction="none").tolist()
    mean = sum(nll) / len(nll)
    var = sum(x * x for x in nll) / len(nll) - mean * mean
    return math.exp(mean), math.exp(mean) * math.sqrt(var / (len(nll) - 1)), len(nll)


@pytest.mark.parametrize("ctx", [None, 8, 16])
def test_perplexity_is_transformers_cross_entropy_over_the_positions_llama_perplexity_scores(llama, ctx):
    folder, model = llama
    got = tfm.load(folder).perplexity(IDS, ctx=ctx, dtype="float64")
    value, err, positions = _theirs(model, IDS, ctx)
    assert got.perplexity.positions == positions == (49 if ctx is None else (50 // ctx) * (ctx - 1 - ctx // 2))
    assert got.perplexity.value == pytest.approx(value, rel=1e-10)
    assert got.perplexity.err == pytest.approx(err, rel=1e-8)
    data = got.to_dict()
    assert data["chunks"] == (1 if ctx is None else 50 // ctx) and data["ctx"] == ctx
    assert data["ppl"] == got.perplexity.value and ("second half" in data["scored"]) == (ctx is not None)


def test_the_chunks_are_run_alone_so_the_context_changes_the_perplexity(llama):
    """The control: scoring the same positions with less context before them is another figure."""
    folder, _ = llama
    whole, chunked = (tfm.load(folder).perplexity(IDS, ctx=c, dtype="float64").perplexity.value for c in (None, 25))
    assert whole != pytest.approx(chunked, rel=1e-6)


@pytest.mark.parametrize(
    "ids, ctx, message",
    [
        (IDS.reshape(2, 25), None, r"expected one stream of token ids \(n,\) or \(1, n\), got int64 \(2, 25\)"),
        (np.array([3, 97, 5]), None, r"token id 97 at 1 is outside 0 \.\. 96"),
        (IDS, 1, r"--ctx: got 1, expected at least 2"),
        (IDS, 64, r"50 token\(s\): --ctx 64 needs at least 64"),
        (IDS[:1], None, r"1 token\(s\): at least 2 are needed"),
    ],
)
def test_a_stream_the_perplexity_cannot_score_is_refused_in_one_line(llama, ids, ctx, message):
    with pytest.raises(TfmError, match=message):
        tfm.load(llama[0]).perplexity(ids, ctx=ctx)


def test_a_model_that_is_not_a_causal_language_model_has_no_perplexity(tmp_path):
    bert = build("bert")
    bert.save_pretrained(tmp_path / "bert")
    with pytest.raises(TfmError, match="perplexity is a causal language model's"):
        tfm.load(tmp_path / "bert").perplexity(IDS)


def _invoke(*args):
    from typer.testing import CliRunner

    from transformer_cli.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


def test_the_command_gives_the_librarys_figure_from_ids_or_from_text_through_the_tokenizer(llama, tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers library reads tokenizer.json")
    folder, _ = llama
    np.save(tmp_path / "ids.npy", IDS)
    done = _invoke("perplexity", folder, "-i", tmp_path / "ids.npy", "--ctx", "16", "--json", "--dtype", "float64")
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    expected = tfm.load(folder).perplexity(IDS, ctx=16, dtype="float64").perplexity
    assert (data["ppl"], data["ppl_err"], data["positions"]) == (expected.value, expected.err, expected.positions)
    worded = tmp_path / "worded"
    shutil.copytree(folder, worded)
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel({f"w{i}": i for i in range(97)}, unk_token="w0"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(str(worded / "tokenizer.json"))
    (tmp_path / "text.txt").write_text(" ".join(f"w{i}" for i in IDS))
    text = _invoke("perplexity", worded, "--text", tmp_path / "text.txt", "--json", "--dtype", "float64")
    assert text.exit_code == 0, text.output
    assert json.loads(text.stdout)["ppl"] == tfm.load(folder).perplexity(IDS, dtype="float64").perplexity.value
    prompt = _invoke("perplexity", worded, "--prompt", " ".join(f"w{i}" for i in IDS), "--json", "--dtype", "float64")
    assert prompt.exit_code == 0 and json.loads(prompt.stdout)["ppl"] == json.loads(text.stdout)["ppl"]
    other = _invoke("perplexity", worded, "--prompt", " ".join(f"w{i}" for i in IDS[::-1]), "--json")
    assert json.loads(other.stdout)["ppl"] != json.loads(text.stdout)["ppl"]  # (the control: other tokens)
    plain = _invoke("perplexity", folder, "-i", tmp_path / "ids.npy")
    assert plain.exit_code == 0 and "perplexity " in plain.stdout and "49 of 50 tokens scored, 1 chunk" in plain.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "give the tokens as ids (--input ids.npy), a text file (--text FILE) or text (--prompt TEXT), one of"),
        (("--text", "TEXT", "--prompt", "w1"), "give the tokens as ids (--input ids.npy), a text file"),
        (("--text", "TEXT"), "--text: "),  # the folder has no tokenizer.json
        (("--prompt", "w1 w2"), "--prompt: "),
    ],
)
def test_the_command_refuses_in_one_line_with_exit_code_2(llama, tmp_path, args, message):
    (tmp_path / "text.txt").write_text("w1 w2")
    done = _invoke("perplexity", llama[0], *(a.replace("TEXT", str(tmp_path / "text.txt")) for a in args))
    assert done.exit_code == 2 and message in done.stderr and "Traceback" not in done.output
    assert len(done.stderr.strip().splitlines()) == 1
