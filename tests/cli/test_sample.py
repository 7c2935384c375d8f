"""`tfm sample`: a seeded input of the spec's shape that `tfm run` accepts, written only where asked."""

from __future__ import annotations

import json

import numpy as np
from conftest import EXAMPLES

from transformer_cli.cli import app

TINY = next(p for p in EXAMPLES if p.name == "tiny-causal.yaml")


def test_sample_writes_an_input_run_accepts(runner, tmp_path):
    x = tmp_path / "x.npy"
    result = runner.invoke(app, ["sample", str(TINY), "-n", "12", "-b", "3", "--seed", "4", "-o", str(x), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["shape"] == [3, 16, 12]
    assert np.array_equal(np.load(x), np.random.default_rng(4).standard_normal((3, 16, 12)))
    assert runner.invoke(app, ["run", str(TINY), "-i", str(x)]).exit_code == 0


def test_sample_default_is_the_default_specs_d_by_16(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["sample"])
    assert result.exit_code == 0 and "x.npy" in result.stdout
    assert np.load(tmp_path / "x.npy").shape == (32, 16)


def test_sample_keeps_an_existing_file_without_force(runner, tmp_path):
    x = tmp_path / "x.npy"
    x.write_bytes(b"keep me")
    assert runner.invoke(app, ["sample", "-o", str(x)]).exit_code == 2 and x.read_bytes() == b"keep me"
    assert runner.invoke(app, ["sample", "-o", str(x), "--force"]).exit_code == 0 and np.load(x).shape == (32, 16)


def test_sample_refuses_what_no_forward_pass_could_hold(runner, tmp_path):
    result = runner.invoke(
        app, ["sample", "-n", "100000", "-b", "1000", "-o", str(tmp_path / "x.npy"), "--max-memory", "10M"]
    )
    assert result.exit_code == 2 and "--max-memory" in result.stderr
    assert list(tmp_path.iterdir()) == []
