"""Weights as safetensors: the same tensors as .npz, the spec in the metadata, and the same checks on load."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import EXAMPLES

from transformer_cli import ArrayError, Spec, init_weights, load_spec, load_weights, save_weights
from transformer_cli.cli import app
from transformer_cli.weights import spec_of_weights

TINY = next(p for p in EXAMPLES if p.name == "tiny-causal.yaml")


def test_round_trip_is_exact_and_keeps_the_spec(tmp_path):
    spec = load_spec(TINY)
    weights = init_weights(spec, seed=4)
    path = tmp_path / "w.safetensors"
    save_weights(path, weights, spec)
    loaded = load_weights(path, spec)
    assert loaded.keys() == weights.keys()
    assert all(np.array_equal(loaded[k], weights[k]) and loaded[k].dtype == np.float64 for k in weights)
    assert spec_of_weights(path) == spec


def test_same_tensor_names_as_npz(tmp_path):
    spec = Spec(N=1, H=2, m=3, d=4, r=5, attention_bias=True, norm="pre")
    weights = init_weights(spec)
    save_weights(tmp_path / "w.npz", weights)
    save_weights(tmp_path / "w.safetensors", weights, spec)
    assert load_weights(tmp_path / "w.npz", spec).keys() == load_weights(tmp_path / "w.safetensors", spec).keys()


def test_a_file_for_another_spec_is_refused(tmp_path):
    spec = Spec(N=1, H=2, m=3, d=4, r=5)
    path = tmp_path / "w.safetensors"
    save_weights(path, init_weights(spec), spec)
    with pytest.raises(ArrayError, match="written for another spec .*r differ"):
        load_weights(path, Spec(N=1, H=2, m=3, d=4, r=6))


def test_without_stored_spec_the_layout_is_still_checked(tmp_path):
    spec = Spec(N=1, H=2, m=3, d=4, r=5)
    path = tmp_path / "w.safetensors"
    weights = init_weights(spec)
    weights["blocks.0.ff.W1"] = np.zeros((5, 5))
    save_weights(path, weights)  # no spec in the metadata
    with pytest.raises(ArrayError, match=r"wrong shape blocks.0.ff.W1 \(5, 5\)"):
        load_weights(path, spec)


def test_corrupt_and_unknown_files(tmp_path):
    spec = Spec(N=1, H=1, m=1, d=1, r=1)
    bad = tmp_path / "w.safetensors"
    bad.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}")
    with pytest.raises(ArrayError, match="not a readable .safetensors"):
        load_weights(bad, spec)
    with pytest.raises(ArrayError, match="expected a .npz or .safetensors"):
        load_weights(tmp_path / "w.pt", spec)


def test_init_then_run_and_verify_without_a_spec(runner, tmp_path):
    weights, x = tmp_path / "w.safetensors", tmp_path / "x.npy"
    assert runner.invoke(app, ["init", str(TINY), "-o", str(weights)]).exit_code == 0
    np.save(x, np.random.default_rng(0).normal(size=(16, 5)))
    result = runner.invoke(app, ["run", "-i", str(x), "-w", str(weights), "--json"])
    assert result.exit_code == 0, result.output
    assert "spec stored in" in result.stderr and json.loads(result.stdout)["name"] == "tiny-causal"
    assert runner.invoke(app, ["verify", "-w", str(weights), "-n", "6"]).exit_code == 0
    changed = tmp_path / "changed.yaml"
    changed.write_text(TINY.read_text().replace("r: 32", "r: 33"))
    other = runner.invoke(app, ["run", "-i", str(x), "-w", str(weights), str(changed)])
    assert other.exit_code == 2 and "written for another spec" in other.stderr


def test_init_refuses_an_unknown_extension_before_work(runner, tmp_path):
    result = runner.invoke(app, ["init", "-o", str(tmp_path / "w.bin")])
    assert result.exit_code == 2 and "expected a .npz or .safetensors" in result.stderr
    assert list(tmp_path.iterdir()) == []
