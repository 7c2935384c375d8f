"""Errors every command shares: usage errors and --json, seeds, sequence lengths, option spellings, output paths."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA, EXAMPLES, invoke, one_line_error

TINY = next(p for p in EXAMPLES if p.name == "tiny-causal.yaml")
GPT2 = next(p for p in EXAMPLES if p.name == "gpt2-small.yaml")
LEARNED = DATA / "post-learned-odd-d" / "spec.yaml"  # max_len: 16, d = 9


def json_error(result, code=2):
    """Under --json: the error object on stdout, the same one line on stderr."""
    line = one_line_error(result, code)
    data = json.loads(result.stdout)
    assert data == {"error": line.removeprefix("error: "), "exit_code": code}
    return data["error"]


# -- 10: usage errors honour --json and are one line ---------------------------------------------------


@pytest.mark.parametrize(
    "args, words",
    [
        (["count", TINY, "--seq-len", 0], "--seq-len"),
        (["run", TINY], "--input"),
        (["count", "--bogus"], "--bogus"),
        (["verify-equivariance", "--expect", "maybe"], "maybe"),
        (["nonsense-command"], "nonsense-command"),
        (["diff", TINY], "argument"),
    ],
)
def test_usage_errors_are_json_under_json(runner, args, words):
    message = json_error(invoke(runner, *args, "--json"))
    assert words in message


def test_usage_errors_without_json_are_one_line_naming_the_help(runner):
    line = one_line_error(invoke(runner, "count", "--bogus"))
    assert "--bogus" in line and "tfm count --help" in line


def test_help_and_no_arguments_still_show_the_help(runner):
    assert invoke(runner, "count", "--help").exit_code == 0
    result = invoke(runner)
    assert "Usage" in result.output and "count" in result.output


# -- 7: negative seeds --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "run",
        "init",
        "attention",
        "verify",
        "verify-equivariance",
        "verify-causality",
        "verify-decoding",
        "verify-scaling",
        "bench",
        "sample",
    ],
)
def test_a_negative_seed_is_refused_on_one_line(runner, tmp_path, command):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((32, 3)))
    extra = {
        "run": ["-i", x],
        "attention": ["-i", x],
        "init": ["-o", tmp_path / "w.npz"],
        "sample": ["-o", tmp_path / "s.npy"],
    }.get(command, [])
    message = json_error(invoke(runner, command, *extra, "--seed", -1, "--json"))
    assert "--seed" in message and "-1" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]


# -- 8: n > max_len is refused by every command that takes n -------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["bench", GPT2, "-n", 1025, "--no-torch", "-k", 1],
        ["bench", LEARNED, "-n", 17, "--no-torch", "-k", 1],
        ["count", LEARNED, "-n", 17],
        ["diff", LEARNED, LEARNED, "-n", 17],
        ["verify", LEARNED, "-n", 17],
        ["sample", LEARNED, "-n", 17, "-o", "never.npy"],
    ],
)
def test_n_beyond_max_len_is_refused(runner, args):
    message = json_error(invoke(runner, *args, "--json"))
    assert "17" in message or "1025" in message
    assert "max_len = 16" in message or "max_len = 1024" in message


def test_attention_refuses_an_input_beyond_max_len(runner, tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((9, 17)))
    assert "max_len = 16" in json_error(invoke(runner, "attention", LEARNED, "-i", x, "--json"))


# -- 23: options that were silently ignored or wrongly refused ---------------------------------------------


@pytest.mark.parametrize("option", [["--batch", 4], ["-b", 4], ["--dtype", "float64"]])
def test_count_cost_options_need_seq_len(runner, option):
    message = json_error(invoke(runner, "count", TINY, *option, "--json"))
    assert "needs --seq-len" in message


@pytest.mark.parametrize("budget", ["1e6", "1.5e9", "2E5"])
def test_max_params_takes_scientific_notation(runner, budget):
    result = invoke(runner, "check", TINY, "--no-verify", "--max-params", budget, "--json")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", ["w.NPZ", "w.SafeTensors"])
def test_weight_extensions_are_case_insensitive(runner, tmp_path, name):
    result = invoke(runner, "init", TINY, "-o", tmp_path / name)
    assert result.exit_code == 0, result.output
    assert invoke(runner, "run", TINY, "-w", tmp_path / name, "-i", _x(tmp_path)).exit_code == 0


def _x(tmp_path, d=16, n=4):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((d, n)))
    return x


@pytest.mark.parametrize("command", ["run", "attention", "sample"])
def test_array_outputs_must_be_npy(runner, tmp_path, command):
    x = _x(tmp_path)
    args = ["-o", tmp_path / "out.txt"] + ([] if command == "sample" else ["-i", x])
    message = json_error(invoke(runner, command, TINY, *args, "--json"))
    assert "out.txt" in message and ".npy" in message
    assert not (tmp_path / "out.txt").exists()


def test_npy_output_extension_is_case_insensitive(runner, tmp_path):
    result = invoke(runner, "run", TINY, "-i", _x(tmp_path), "-o", tmp_path / "y.NPY")
    assert result.exit_code == 0, result.output


# -- reliability round 3: absurd sizes, token ids that are not integers, running out of memory ------------------


def test_plan_of_a_size_beyond_a_float_is_one_line(runner, tmp_path):
    config = json.loads((DATA.parent.parent / "examples" / "hf" / "tiny-llama" / "config.json").read_text())
    spec = tmp_path / "huge"
    spec.mkdir()
    (spec / "config.json").write_text(json.dumps(config | {"hidden_size": 10**200}))
    error = one_line_error(invoke(runner, "plan", spec))
    assert (
        error == "error: huge: d = 1.00e+200 is too large to plan: its times overflow a float (at most about 1.8e+308)"
    )
    assert invoke(runner, "count", spec).exit_code == 0  # counting stays exact


@pytest.mark.parametrize("shape", [(5,), (2, 5)])
@pytest.mark.parametrize("dtype", [np.float64, np.bool_])
def test_token_ids_that_are_not_integers_blame_the_dtype(runner, tmp_path, shape, dtype):
    spec = tmp_path / "lm.yaml"
    spec.write_text("N: 1\nH: 2\nm: 4\nd: 8\nr: 16\nV: 50\n")
    np.save(tmp_path / "ids.npy", np.ones(shape, dtype))
    error = one_line_error(invoke(runner, "run", spec, "-i", tmp_path / "ids.npy"))
    assert f"ids.npy: dtype {np.dtype(dtype)}, expected integers for token ids (shape {shape})" in error


def test_count_out_of_memory_says_what_count_holds_not_batches(runner, monkeypatch):
    import transformer_cli.analysis.params as params

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(params, "count_params", exhausted)
    error = one_line_error(invoke(runner, "count", TINY))
    assert error.startswith("error: ran out of memory") and "tfm count holds the name and shape of each tensor" in error
    assert "batch" not in error and "sequence length" not in error


# -- issue 22: paper cuts -----------------------------------------------------------------------------------------

HF_TINY = DATA.parent.parent / "examples" / "hf" / "tiny-llama"


@pytest.mark.parametrize(
    "args",
    [
        ["plan", HF_TINY, "--memory", "80"],
        ["verify", "--max-memory", "512"],
        ["convert", "w.safetensors", "-o", "d", "--shard-size", "5"],
    ],
)
def test_a_size_without_its_unit_is_refused(runner, args):
    option, value = args[-2:]
    error = one_line_error(invoke(runner, *args))
    assert error == (
        f"error: {option}: got '{value}', expected a size with its unit such as {value}G or {value}M "
        f"(write {value}B for bytes)"
    )


def test_a_size_in_bytes_is_written_with_b(runner):
    result = invoke(runner, "plan", HF_TINY, "--memory", "80B", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["fits"]["fused_attention"]["memory"] == 80


def test_convert_of_weights_without_a_spec_says_what_convert_needs(runner, tmp_path):
    weights = tmp_path / "l.npz"
    assert invoke(runner, "init", HF_TINY, "-o", weights).exit_code == 0
    error = one_line_error(invoke(runner, "convert", weights, "-o", tmp_path / "out"))
    assert "l.npz: carries no tfm spec" in error and "-w" not in error


@pytest.mark.parametrize("command", ["run", "attention", "verify"])
def test_a_folder_without_weights_says_on_stderr_that_weights_are_seeded(runner, tmp_path, command):
    folder = tmp_path / "config-only"
    folder.mkdir()
    (folder / "config.json").write_text((HF_TINY / "config.json").read_text())
    np.save(tmp_path / "ids.npy", np.arange(4))
    args = [command, folder] + (["-i", tmp_path / "ids.npy"] if command != "verify" else [])
    result = invoke(runner, *args)
    assert result.exit_code == 0, result.stderr
    assert "config-only holds no checkpoint (model.safetensors or its index): seeded random weights" in result.stderr
    assert invoke(runner, "init", HF_TINY, "-o", tmp_path / "m").exit_code == 0
    with_weights = invoke(runner, command, tmp_path / "m", *args[2:])
    assert with_weights.exit_code == 0 and "holds no checkpoint" not in with_weights.stderr
