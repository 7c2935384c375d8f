"""The commands on bad input, and what they import: one line, exit 2, nothing written; start-up stays light."""

from __future__ import annotations

import json

import numpy as np
import pytest
import typer
from conftest import DATA, EXAMPLES, invoke

from transformer_cli.cli import app

COMMANDS = sorted(typer.main.get_command(app).commands)  # every registered command: a new one cannot skip help
TINY = next(p for p in EXAMPLES if p.name == "tiny-causal.yaml")
SEED_PLAIN = DATA / "seed-plain"


# -- bad input: exit 2, one line naming the problem, no output written -----------------------------


@pytest.fixture
def files(tmp_path):
    good = tmp_path / "x.npy"
    np.save(good, np.zeros((32, 4)))
    return tmp_path, good


BAD_CASES = {
    "missing spec": (lambda t, g: ["run", t / "none.yaml", "-i", g], ["none.yaml", "no such spec file"]),
    "bad yaml": (lambda t, g: ["run", _write(t / "s.yaml", "N: [1"), "-i", g], ["s.yaml", "invalid YAML", "line"]),
    "bad value": (lambda t, g: ["run", _write(t / "s.yaml", "N: 0\nH: 1\nm: 1\nd: 1\nr: 1"), "-i", g], ["key 'N'"]),
    "missing input": (lambda t, g: ["run", "-i", t / "nope.npy"], ["nope.npy", "no such file"]),
    "pickled input": (lambda t, g: ["run", "-i", _pickled(t / "p.npy")], ["p.npy", "pickled"]),
    "wrong d": (lambda t, g: ["run", "-i", _array(t / "w.npy", np.zeros((31, 4)))], ["w.npy", "(31, 4)", "d = 32"]),
    "1-d input": (lambda t, g: ["run", "-i", _array(t / "v.npy", np.zeros(32))], ["v.npy", "(32,)"]),
    "string input": (lambda t, g: ["run", "-i", _array(t / "s.npy", np.full((32, 2), "a"))], ["s.npy", "dtype"]),
    "nan input": (lambda t, g: ["run", "-i", _array(t / "n.npy", _nan_at((32, 4), (3, 2)))], ["n.npy", "(3, 2)"]),
    "not npy": (lambda t, g: ["run", "-i", _write(t / "t.npy", "hello")], ["t.npy", "not a valid .npy"]),
    "weights for another spec": (
        lambda t, g: ["run", "-i", g, "-w", SEED_PLAIN / "weights.npz"],
        ["weights.npz", "wrong shape", "expected (4, 8, 32)"],
    ),
    "output is input": (lambda t, g: ["run", "-i", g, "-o", g, "--force"], ["x.npy", "is also an input"]),
    "output folder missing": (lambda t, g: ["run", "-i", g, "-o", t / "no" / "y.npy"], ["does not exist"]),
    "seq-len too long": (
        lambda t, g: ["verify", DATA / "post-learned-odd-d" / "spec.yaml", "-n", 17],
        ["max_len = 16"],
    ),
    "bad expect": (lambda t, g: ["verify-equivariance", "--expect", "maybe"], ["maybe"]),
}


def _write(path, text):
    path.write_text(text)
    return path


def _array(path, array):
    np.save(path, array)
    return path


def _pickled(path):
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return path


def _nan_at(shape, index):
    a = np.zeros(shape)
    a[index] = np.nan
    return a


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_bad_input_exits_2_with_one_line_and_writes_nothing(runner, files, case):
    tmp_path, good = files
    make_args, words = BAD_CASES[case]
    args = make_args(tmp_path, good)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    if "-o" not in args and args[0] == "run":
        args += ["-o", tmp_path / "out.npy"]
    result = invoke(runner, *args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    message = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else result.output
    for word in words:
        assert word in result.stderr or word in result.output, (word, result.stderr, result.output)
    assert "Traceback" not in result.output
    if case != "bad expect":  # click's own usage errors are boxed; ours are one line
        assert message.startswith("error:") and len(result.stderr.strip().splitlines()) <= 2
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written, no temp files


def test_json_errors_are_json_on_stdout(runner, tmp_path):
    result = invoke(runner, "count", tmp_path / "missing.yaml", "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout) == {"error": f"{tmp_path / 'missing.yaml'}: no such spec file", "exit_code": 2}


def test_existing_output_needs_force(runner, files):
    tmp_path, good = files
    out = tmp_path / "y.npy"
    out.write_bytes(b"keep me")
    assert invoke(runner, "run", "-i", good, "-o", out).exit_code == 2
    assert out.read_bytes() == b"keep me"
    assert invoke(runner, "run", "-i", good, "-o", out, "--force").exit_code == 0
    assert np.load(out).shape == (32, 4)


def test_python_dash_m_works():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "transformer_cli", "count", "--json"], capture_output=True, text=True
    )
    assert result.returncode == 0 and json.loads(result.stdout)["specs"][0]["total"] == 16576


def test_count_and_help_never_import_the_model():
    """Start-up: a command loads only its own module and the core it uses (see the README's Performance)."""
    import subprocess
    import sys

    code = (
        "import sys; from transformer_cli.cli import load_commands; from typer.testing import CliRunner; "
        "r = CliRunner().invoke(load_commands(['count']), ['count']); assert r.exit_code == 0, r.output; "
        "print(sorted(m for m in sys.modules if m.startswith(('transformer_cli', 'threadpoolctl', 'pydantic'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    heavy_modules = ("transformer_cli.model.transformer", "transformer_cli.verify", "threadpoolctl", "pydantic")
    for heavy in (*heavy_modules, "verify_commands"):
        assert heavy not in loaded, loaded


def test_run_takes_token_ids_and_writes_logits(runner, tmp_path):
    spec = tmp_path / "lm.yaml"
    spec.write_text("N: 1\nH: 2\nm: 4\nd: 8\nr: 8\nV: 11\ntie_embeddings: true\nmask: causal\n")
    ids, logits = tmp_path / "ids.npy", tmp_path / "logits.npy"
    assert invoke(runner, "sample", spec, "-n", 5, "-b", 2, "-o", ids).exit_code == 0
    sampled = np.load(ids)
    assert sampled.dtype == np.int64 and sampled.shape == (2, 5) and 0 <= sampled.min() and sampled.max() < 11
    assert invoke(runner, "run", spec, "-i", ids, "-o", logits).exit_code == 0
    assert np.load(logits).shape == (2, 11, 5)
    bad = tmp_path / "bad.npy"
    np.save(bad, np.array([[1, 2, 11, 3]]))
    result = invoke(runner, "run", spec, "-i", bad)
    assert result.exit_code == 2 and "token id 11 at index (0, 2), expected 0 .. 10 (V = 11)" in result.output


def test_vocabulary_keys_need_a_vocabulary(runner, tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("N: 1\nH: 2\nm: 4\nd: 8\nr: 8\ntie_embeddings: true\n")
    result = invoke(runner, "count", spec)
    assert result.exit_code == 2 and "no tie_embeddings unless the spec has a vocabulary V" in result.output


def test_help_imports_no_analysis_beyond_the_option_lists():
    """`tfm --help` builds every command: their modules may name choices (dtypes, presets) but must not pull in
    the components, the model or the costs (start-up, issue 15)."""
    import subprocess
    import sys

    code = (
        "import sys; from transformer_cli.cli import load_commands; load_commands(); "
        "print(sorted(m for m in sys.modules if m.startswith('transformer_cli')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    for heavy in (
        "transformer_cli.components",
        "transformer_cli.analysis.costs",
        "transformer_cli.model",
        "transformer_cli.cli.render",
        "transformer_cli.analysis.memory",
    ):
        assert heavy not in loaded, (heavy, loaded)


def test_the_help_listed_without_the_commands_is_the_help_with_them():
    """`tfm --help` loads no command (start-up): its list comes from SUMMARIES, which must be each command's first
    paragraph, in order; the two helps are then the same text at any width."""
    import inspect
    import os
    import subprocess
    import sys

    import typer.main

    from transformer_cli.cli import SUMMARIES, load_commands

    group = typer.main.get_command(load_commands())
    real = {
        name: " ".join(inspect.cleandoc(group.get_command(None, name).help).split("\n\n")[0].split())
        for name in group.list_commands(None)
    }
    assert list(SUMMARIES.items()) == list(real.items())
    full = "import sys; sys.argv = ['tfm', '--help']; from transformer_cli.cli import load_commands; load_commands()()"
    for width in ("60", "100", "160"):
        env = {**os.environ, "COLUMNS": width}
        lazy = subprocess.run(
            [sys.executable, "-m", "transformer_cli", "--help"], capture_output=True, text=True, env=env
        )
        loaded = subprocess.run([sys.executable, "-c", full], capture_output=True, text=True, env=env)
        assert lazy.stdout == loaded.stdout and "verify-equivariance" in lazy.stdout, width


def test_the_helps_say_what_goes_in_and_comes_out(runner):
    """Issue 22 (15): run's help named neither token ids nor logits; the 6N rule hid what N leaves out."""
    words = lambda *args: " ".join(runner.invoke(app, list(args)).stdout.split())  # noqa: E731
    run = words("run", "--help")
    assert "integer token ids (n,) or (b, n)" in run and "the logits (V, n)" in run
    assert "tfm plan gives serving in bfloat16" in words("count", "--help")
    plan = words("plan", str(TINY.parent.parent / "hf" / "tiny-llama"))
    assert "by the 6N rule (N: the weights a token multiplies by, the head included, the embedding table" in plan


def test_diff_of_two_real_models_shows_only_what_applies_and_can_show_only_differences(runner):
    """Issue 22 (13): Llama-2-7b vs Mistral-7B listed 52 spec rows, rope and relative keys of neither among
    them, and 'G: - vs 8' for the key Llama leaves at H."""
    hf = TINY.parent.parent / "hf"
    result = runner.invoke(app, ["diff", str(hf / "Llama-2-7b"), str(hf / "Mistral-7B-v0.1"), "--json"])
    rows = json.loads(result.stdout)["rows"]
    spec_rows = {r["name"]: r for r in rows if r["section"] == "spec"}
    assert result.exit_code == 1
    assert not {"rel_buckets", "rel_max_distance", "rope_factor", "max_len", "cross_H", "E"} & set(spec_rows)
    assert (spec_rows["G"]["a"], spec_rows["G"]["b"]) == (32, 8)  # Llama's G by its effect, H
    assert spec_rows["out_bias"]["a"] is False and not spec_rows["out_bias"]["differs"]
    only = runner.invoke(app, ["diff", str(hf / "Llama-2-7b"), str(hf / "Mistral-7B-v0.1"), "-d", "--json"])
    assert only.exit_code == 1
    names = [r["name"] for r in json.loads(only.stdout)["rows"] if r["section"] == "spec"]
    assert names == ["r", "G", "window"] and all(r["differs"] for r in json.loads(only.stdout)["rows"])
    same = runner.invoke(
        app, ["diff", str(hf / "Llama-2-7b"), str(TINY.parent.parent / "models" / "Llama-2-7b.yaml"), "-d", "--json"]
    )
    assert same.exit_code == 0 and json.loads(same.stdout)["rows"] == []
