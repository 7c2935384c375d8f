"""Every command through Typer's CliRunner: exit codes, stdout data, one-line errors, and files written or not."""

from __future__ import annotations

import json

import numpy as np
import pytest
import typer
from conftest import DATA, EXAMPLES, invoke, reference

from transformer_cli import Transformer, load_spec, load_weights
from transformer_cli.cli import app

COMMANDS = sorted(typer.main.get_command(app).commands)  # every registered command: a new one cannot skip help
TINY = next(p for p in EXAMPLES if p.name == "tiny-causal.yaml")
SEED_PLAIN = DATA / "seed-plain"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(runner, command):
    result = invoke(runner, command, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout and "tfm " + command in result.stdout


def test_top_level_help_documents_the_exit_codes(runner):
    result = invoke(runner, "--help")
    assert result.exit_code == 0
    assert all(c in result.stdout for c in COMMANDS) and "Exit codes" in result.stdout


def test_the_command_list_is_complete():
    expected = {
        "count",
        "init",
        "run",
        "verify",
        "verify-equivariance",
        "verify-causality",
        "verify-decoding",
        "verify-scaling",
        "bench",
        "schema",
        "diff",
        "attention",
        "check",
        "sample",
    }
    assert set(COMMANDS) >= expected


@pytest.mark.parametrize("args", [["count"], ["verify"], ["count", "--seq-len", "64"]])
def test_no_color_and_pipes_give_plain_text(runner, args):
    """CliRunner is not a terminal: no escape codes; NO_COLOR is honoured as well."""
    for env in ({}, {"NO_COLOR": "1"}):
        result = runner.invoke(app, args, env=env)
        assert "\x1b[" not in result.stdout and "\x1b[" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["count"],
        ["verify", "-n", "4"],
        ["verify-scaling", "--samples", "500"],
        ["bench", "-n", "4", "-k", "1", "--no-torch"],
        ["diff", str(TINY), str(TINY)],
        ["schema"],
    ],
)
def test_json_is_the_only_thing_on_stdout(runner, args):
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code in (0, 1)
    json.loads(result.stdout)


def test_version(runner):
    assert invoke(runner, "--version").stdout.startswith("tfm ")


# -- count -----------------------------------------------------------------------------------------


def test_count_default_spec_says_so(runner):
    result = invoke(runner, "count")
    assert result.exit_code == 0
    assert "built-in default spec" in result.stderr
    assert "16,576" in result.stdout and "4Hmd + 2rd + r + d" in result.stdout


def test_count_json_is_the_reference_figures(runner):
    result = invoke(runner, "count", SEED_PLAIN / "spec.yaml", "--json")
    (data,) = json.loads(result.stdout)["specs"]  # one shape for one spec or many
    expected = reference("seed-plain")["expected"]
    assert data["per_block"] == data["closed_form"]["per_block"] == expected["params_per_block"]
    assert data["total"] == data["closed_form"]["total"] == expected["params_total"]
    assert {"name", "tensors"} <= set(data) and data["tensors"][0] == {
        "name": "blocks.{i}.attention.W_Q",
        "shape": [3, 4, 10],
        "count": 120,
        "copies": 2,
        "component": "attention",
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_counts(runner, path):
    result = invoke(runner, "count", path)
    assert result.exit_code == 0 and "agrees" in result.stdout


def test_count_several_specs_side_by_side(runner):
    result = invoke(runner, "count", *EXAMPLES)
    assert result.exit_code == 0 and "side by side" in result.stdout
    assert "85,842,432" in result.stdout  # gpt2-small
    data = json.loads(invoke(runner, "count", *EXAMPLES, "--json").stdout)
    assert list(data) == ["specs"] and len(data["specs"]) == len(EXAMPLES)


def test_count_huge_spec(runner, tmp_path):
    spec = tmp_path / "big.yaml"
    spec.write_text("N: 96\nH: 96\nm: 128\nd: 12288\nr: 49152\n")
    (data,) = json.loads(invoke(runner, "count", spec, "--json").stdout)["specs"]
    assert data["total"] == 96 * (4 * 96 * 128 * 12288 + 2 * 49152 * 12288 + 49152 + 12288)


# -- init and run ----------------------------------------------------------------------------------


def test_init_then_run_with_the_file_matches_the_library(runner, tmp_path):
    weights, x, y = tmp_path / "w.npz", tmp_path / "x.npy", tmp_path / "y.npy"
    assert invoke(runner, "init", TINY, "--seed", 3, "-o", weights).exit_code == 0
    X = np.random.default_rng(0).normal(size=(2, 16, 5))
    np.save(x, X)
    result = invoke(runner, "run", TINY, "--input", x, "--weights", weights, "-o", y, "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    spec = load_spec(TINY)
    expected = Transformer(spec, load_weights(weights, spec))(X)
    assert np.array_equal(np.load(y), expected)
    assert data["output_shape"] == [2, 16, 5] and data["weights"] == str(weights)
    assert len(data["activation_rms"]) == spec.N + 1 and data["output_stats"]["finite"] is True


def test_run_reference_case_from_the_command_line(runner, tmp_path):
    out = tmp_path / "y.npy"
    case = DATA / "standard-pre-causal"
    result = invoke(runner, "run", case / "spec.yaml", "-i", case / "x.npy", "-w", case / "weights.npz", "-o", out)
    assert result.exit_code == 0
    ref = np.load(case / "y.npy")
    assert np.max(np.abs(np.load(out) - ref)) / np.max(np.abs(ref)) < 1e-12


def test_run_default_spec_float32(runner, tmp_path):
    x, y = tmp_path / "x.npy", tmp_path / "y.npy"
    np.save(x, np.random.default_rng(0).normal(size=(32, 7)))
    result = invoke(runner, "run", "--input", x, "--dtype", "float32", "-o", y)
    assert result.exit_code == 0 and "float32" in result.stdout and "RMS after block 2" in result.stdout
    assert np.load(y).dtype == np.float32


def test_integer_input_is_cast_and_says_so(runner, tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.arange(32 * 3).reshape(32, 3) % 5)
    result = invoke(runner, "run", "--input", x)
    assert result.exit_code == 0 and "cast to float64" in result.stderr


# -- verify commands -------------------------------------------------------------------------------


def test_verify_equivariance_default_spec_holds(runner):
    result = invoke(runner, "verify-equivariance", "--json")
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and data["verdict"] == "PASS"
    assert data["summary"]["separation"] >= 1000
    assert data["trials"][0]["permutation"] == "identity" and data["trials"][0]["rel_error"] == 0


def test_verify_equivariance_table(runner):
    result = invoke(runner, "verify-equivariance", "--trials", 3, "--dtype", "float32")
    assert result.exit_code == 0
    for word in ("identity", "adjacent swap", "reversal", "cyclic shift", "derangement", "verdict", "PASS"):
        assert word in result.stdout


def test_verify_equivariance_causal_spec_exit_codes(runner):
    """The single-property command predicts from the spec as `tfm verify` does (it defaulted to holds: FAIL)."""
    assert invoke(runner, "verify-equivariance", TINY).exit_code == 0  # the theory: a causal mask breaks it
    assert invoke(runner, "verify", TINY).exit_code == 0
    assert invoke(runner, "verify-equivariance", TINY, "--expect", "holds").exit_code == 1
    assert invoke(runner, "verify-equivariance", TINY, "--expect", "breaks").exit_code == 0
    assert invoke(runner, "verify-equivariance", "--expect", "breaks").exit_code == 1  # the seed's holds


def test_verify_equivariance_loose_tolerance_is_inconclusive(runner):
    assert invoke(runner, "verify-equivariance", "--tol", "0.9").exit_code == 3


@pytest.mark.parametrize("command", ["verify-causality", "verify-decoding"])
def test_causal_checks(runner, command):
    assert invoke(runner, command, TINY).exit_code == 0
    result = invoke(runner, command, "--json")  # the default spec has no mask: the theory predicts a break
    assert result.exit_code == 0 and json.loads(result.stdout)["observed"] == "breaks"
    result = invoke(runner, command, "--json", "--expect", "holds")
    assert result.exit_code == 1 and json.loads(result.stdout)["observed"] == "breaks"


def test_verify_scaling(runner, tmp_path):
    result = invoke(runner, "verify-scaling", TINY, "--json")
    assert result.exit_code == 0
    first = json.loads(result.stdout)["trials"][0]  # unit-variance q, k with m = 8 and scale 1/sqrt(8)
    assert first["predicted_variance"] == pytest.approx(1.0) and first["if_the_scale_were_ignored"] == 8.0
    weights = tmp_path / "w.npz"
    assert invoke(runner, "init", TINY, "-o", weights, "--seed", 3).exit_code == 0
    with_weights = invoke(runner, "verify-scaling", TINY, "-w", weights, "--json")
    data = json.loads(with_weights.stdout)
    assert with_weights.exit_code == 0 and data["weights"] == str(weights)
    assert len(data["trials"]) == 1 + 2  # the unit-variance row and one per block, through the loaded weights


def test_verify_option_limits_are_one_line_errors(runner):
    for args in (["verify-equivariance", "--trials", "1000000000"], ["verify-scaling", "--samples", "200000000"]):
        result = invoke(runner, *args)
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=[pytest.mark.slow] if p.name == "gpt2-small.yaml" else []) for p in EXAMPLES],
    ids=lambda p: p.name,
)
def test_verify_every_example(runner, path):
    result = invoke(runner, "verify", path, "--seq-len", 6, "--json")
    assert result.exit_code == 0, result.stdout
    assert len(json.loads(result.stdout)["checks"]) == 7


def test_verify_table_shows_prediction_and_observation(runner):
    result = invoke(runner, "verify", TINY)
    assert result.exit_code == 0 and "causal mask" in result.stdout
    row = next(line for line in result.stdout.splitlines() if "Transformer(XP)" in line)
    cells = [cell.strip() for cell in row.split("│")]
    assert cells[2:5] == ["breaks", "breaks", "PASS: as expected"]  # expected breaks, observed breaks: agrees
