"""The library's surface: docs/library.md runs as written (doctest, in a folder holding only examples/), the names
in transformer_cli.__all__ stay, and tfm.load takes every input a command takes, with the CLI's one-line errors."""

from __future__ import annotations

import doctest
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import transformer_cli as tfm

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from readme_examples import scratch  # noqa: E402

PAGE = ROOT / "docs" / "library.md"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# The public names: a name may be added, never taken away (docs/library.md shows them).
STABLE = """
    load Model load_spec load_weights DEFAULT_SPEC Spec spec_from_mapping spec_schema
    ParamCount all_tensors count_params Costs costs estimate_forward Plan plan Adapters adapters Split compare
    Transformer EncoderDecoder sinusoidal_positions softmax_columns RunResult check_input random_input run_forward
    Decoder decode Generation Sampling generate
    CheckResult check_causality check_counts check_decoding check_equivariance check_scaling check_softmax make_setup
    verify_all Budgets SpecCheck check_specs
    check_weights init_weights save_weights Written convert init run_bench
    ArrayError ExitCode OptionError OutputError SpecError TfmError __version__
""".split()


def _run_page(text: str, folder: Path, monkeypatch) -> doctest.TestResults:
    monkeypatch.chdir(folder)
    page = folder / "library.md"
    page.write_text(text)
    return doctest.testfile(str(page), module_relative=False, optionflags=FLAGS, verbose=False, report=False)


@pytest.mark.slow
def test_the_library_page_runs_as_written(monkeypatch):
    with scratch() as folder:
        result = _run_page(PAGE.read_text(), folder, monkeypatch)
    assert result.failed == 0
    assert result.attempted >= 40  # every example, not a page that lost its code


def test_a_page_whose_output_is_wrong_fails(monkeypatch, capsys):
    text = PAGE.read_text()
    start = text.index("```pycon")
    first = text[start : text.index("```\n", text.index("\n", start)) + 4]  # the first block: init and load
    assert "(['lib-llama'], 21, 123712)" in first
    with scratch() as folder:
        assert _run_page(first, folder, monkeypatch).failed == 0
    wrong = first.replace("(['lib-llama'], 21, 123712)", "(['lib-llama'], 21, 123713)")
    with scratch() as folder:
        assert _run_page(wrong, folder, monkeypatch).failed == 1
    assert "123713" in capsys.readouterr().out  # doctest's report names what the page claimed


def missing(names: list[str], module=tfm) -> list[str]:
    return [name for name in STABLE if name not in names or getattr(module, name, None) is None]


def test_every_stable_name_is_exported_and_resolves():
    assert missing(tfm.__all__) == []
    assert sorted(dir(tfm)) == sorted(tfm.__all__)
    assert len(set(tfm.__all__)) == len(tfm.__all__)


def test_a_name_taken_away_is_caught():
    assert missing([n for n in tfm.__all__ if n != "load"]) == ["load"]
    with pytest.raises(AttributeError, match="no attribute 'loads'"):
        tfm.loads  # noqa: B018


def test_the_page_names_every_export_it_documents():
    text = PAGE.read_text()
    shown = {"load", "Model", "init", "convert", "diff", "compare", "perplexity", "check_specs", "Budgets", "TfmError"}
    assert all(f"tfm.{name}" in text or f"`{name}`" in text for name in shown)


# -- tfm.load: every input a command takes --------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path):
    tfm.init(ROOT / "examples" / "hf" / "tiny-llama", tmp_path / "llama", seed=3)
    return tmp_path / "llama"


def test_load_reads_the_spec_at_once_and_the_weights_when_used(folder):
    model = tfm.load(folder)
    assert model.spec.N == 2 and model.weights_path == folder and model.notes == []
    assert model.count().total == 123712
    assert "weights" not in vars(model)  # counting reads no tensor
    assert set(model.weights) >= {"embedding.E", "blocks.0.attention.W_Q"}
    assert "weights" in vars(model)


def test_load_takes_every_input_a_command_takes(folder, tmp_path):
    ids = np.arange(6) % 256
    logits = tfm.load(folder).run(ids).output
    config = tfm.load(folder / "config.json")  # the config alone: seeded weights
    assert config.spec == tfm.load(folder).spec and config.weights_path is None
    tfm.convert(folder, tmp_path / "w.safetensors")
    stored = tfm.load(tmp_path / "w.safetensors")  # the spec from the file's metadata
    assert stored.spec == config.spec and stored.path is None and stored.notes
    np.testing.assert_array_equal(stored.run(ids, dtype="float32").output, logits)
    tfm.convert(folder, tmp_path / "w.npz")
    npz = tfm.load(folder / "config.json", weights=tmp_path / "w.npz")
    np.testing.assert_array_equal(npz.run(ids, dtype="float32").output, logits)
    tfm.convert(folder, tmp_path / "w.gguf", gguf_type="f32")
    gguf = tfm.load(tmp_path / "w.gguf")
    assert gguf.spec.N == 2 and gguf.weights_path == tmp_path / "w.gguf"
    np.testing.assert_allclose(gguf.run(ids, dtype="float32").output, logits, rtol=0, atol=1e-5)
    yaml = tfm.load(ROOT / "examples" / "configs" / "tiny-causal.yaml")
    assert yaml.spec.label == "tiny-causal" and yaml.weights_path is None
    (tmp_path / "spec.json").write_text(json.dumps(yaml.spec.to_dict()))  # a tfm spec written as JSON
    assert tfm.load(tmp_path / "spec.json").spec == yaml.spec
    default = tfm.load()
    assert default.spec == tfm.DEFAULT_SPEC and "built-in default" in default.notes[0]
    assert tfm.load_spec(folder) == config.spec  # load_spec takes a folder now (it refused one)


def test_a_folder_without_a_checkpoint_says_so(tmp_path):
    model = tfm.load(ROOT / "examples" / "hf" / "tiny-llama")
    assert model.weights_path is None and "holds no checkpoint" in model.notes[0]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("missing.yaml", "missing.yaml: no such spec file"),
        ("w.npz", "w.npz: tfm's .npz weights keep no spec; name the spec too"),
        ("empty", "empty: is a directory with no config.json in it"),
    ],
)
def test_bad_paths_are_the_cli_s_one_line_errors(tmp_path, monkeypatch, path, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(tfm.TfmError) as caught:
        tfm.load(path)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    assert caught.value.exit_code == tfm.ExitCode.BAD_INPUT


def test_library_options_are_checked_as_the_command_checks_them(folder, tmp_path):
    model = tfm.load(folder)
    with pytest.raises(tfm.TfmError, match="--weights q9: expected one of"):
        model.plan(weights="q9")
    with pytest.raises(tfm.TfmError, match="--tensor-parallel 3: "):
        model.plan(tensor_parallel=3)  # H = 4 is not split over 3
    with pytest.raises(tfm.TfmError, match="--dtype float8: expected one of"):
        tfm.convert(folder, tmp_path / "x.safetensors", dtype="float8")
    with pytest.raises(tfm.TfmError, match="token ids must be in 0 .. 255"):
        model.generate([1, 256])
    with pytest.raises(tfm.TfmError, match="has no tokenizer.json"):
        model.generate("Once upon a time")
    with pytest.raises(tfm.OutputError):
        tfm.convert(folder, folder)  # never over its input
