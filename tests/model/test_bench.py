"""The benchmark's figures, and PyTorch as a second, independent reference for the forward pass."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, Transformer
from transformer_cli.cli import app
from transformer_cli.tasks.bench import run_bench


def test_run_bench_reports_every_figure():
    spec = Spec(N=1, H=2, m=4, d=8, r=16)
    data = run_bench(spec, random_weights(spec), 2, 16, "float64", repeat=2).to_dict()
    assert "torch" not in data and data["flops"] == sum(data["flops_by_component"].values())
    assert data["tfm"]["median_s"] > 0 and data["tfm"]["peak_bytes"] > 0 and data["gemm_gflops"] > 0
    assert data["tfm"]["tokens_per_s"] == pytest.approx(32 / data["tfm"]["median_s"])


def test_a_peer_is_timed_beside_tfm_and_its_output_compared():
    """benchmarks/run.py passes PyTorch as the peer; here a NumPy one: the same model agrees, a wrong one does not."""
    spec = Spec(N=1, H=2, m=4, d=8, r=16, mask="causal", norm="pre")
    w = random_weights(spec)
    same = Transformer(spec, w, "float64")
    data = run_bench(spec, w, 2, 16, "float64", repeat=2, peer=("same", same)).to_dict()
    assert data["peer"]["name"] == "same" and data["peer"]["max_rel_diff"] < 1e-15 and len(data["tfm"]) > 0
    assert data["ratio_tfm_over_peer"] == pytest.approx(data["tfm"]["median_s"] / data["peer"]["median_s"])
    wrong = run_bench(spec, w, 2, 16, "float64", repeat=1, peer=("doubled", lambda X: 2 * same(X))).to_dict()
    assert wrong["peer"]["max_rel_diff"] == pytest.approx(1.0)


def test_bench_command_json(runner):
    result = runner.invoke(app, ["bench", "--seq-len", "8", "--repeat", "2", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["seq_len"] == 8 and data["batch"] == 1 and data["flops"] == sum(data["flops_by_component"].values())


def test_bench_no_longer_runs_pytorch_and_says_where_the_comparison_is(runner):
    """tfm never imports torch: --torch is refused in one line naming benchmarks/peers.py; --no-torch still works."""
    result = runner.invoke(app, ["bench", "--seq-len", "8", "--repeat", "1", "--torch"])
    assert result.exit_code == 2 and "benchmarks/peers.py" in result.output and "Traceback" not in result.output
    assert runner.invoke(app, ["bench", "--seq-len", "8", "--repeat", "1", "--no-torch", "--json"]).exit_code == 0


def test_bench_names_the_blas_kernel_and_warns_when_the_environment_forces_a_lower_one(monkeypatch):
    from transformer_cli.tasks import bench

    monkeypatch.setattr(bench, "_cpu_flags", lambda: {"avx2", "avx512f"})
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setattr(
        "threadpoolctl.threadpool_info",
        lambda: [
            {
                "user_api": "blas",
                "internal_api": "openblas",
                "version": "0.3.31",
                "architecture": "Haswell",
                "num_threads": 2,
            }
        ],
    )
    info = bench.blas_info()
    assert info["kernel"] == "Haswell" and "OPENBLAS_CORETYPE=Haswell" in info["warning"]
    monkeypatch.delenv("OPENBLAS_CORETYPE")
    assert bench.blas_info()["warning"] is None  # chosen by OpenBLAS itself: nothing to warn about
    monkeypatch.setenv("OPENBLAS_CORETYPE", "SkylakeX")
    monkeypatch.setattr(
        "threadpoolctl.threadpool_info",
        lambda: [
            {
                "user_api": "blas",
                "internal_api": "openblas",
                "version": "0.3.31",
                "architecture": "SkylakeX",
                "num_threads": 2,
            }
        ],
    )
    assert bench.blas_info()["warning"] is None  # forced, but to the best kernel


def test_the_benchmarks_profile_counts_each_product_once_in_its_kind():
    """benchmarks/peers.py's profile of a pass: the products it files as projections and as attention's own add up
    to the FLOPs counted from the spec (a non-causal spec computes every score), and the wrapped functions are
    restored afterwards (the next pass runs unwrapped)."""
    import sys
    from pathlib import Path

    import transformer_cli.kernels as layers

    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    from peers import profile_prefill

    spec = Spec(
        N=2,
        H=4,
        G=2,
        m=8,
        d=32,
        r=48,
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="silu",
        positional="rope",
    )
    b, n, H, G, m, d, r = 1, 16, spec.H, 2, spec.m, spec.d, spec.r
    X = np.random.default_rng(0).standard_normal((b, d, n))
    before = (np.matmul, layers.rms_norm, dict(layers.ACTIVATIONS))
    profile = profile_prefill(spec, random_weights(spec), "float64", X, rounds=2)
    projections = 2 * spec.N * n * d * ((H + 2 * G) * m + H * m + 3 * r)  # Q K V, W_O, W1 W3 and W2
    attention = 2 * spec.N * H * n * n * m * 2  # scores and A V, every pair
    assert profile["flops"] == {"projections (GEMM)": projections, "attention (GEMM)": attention}
    assert profile["ms"]["norms"] > 0 and profile["ms"]["activation"] > 0 and profile["ms"]["rotary"] > 0
    assert (np.matmul, layers.rms_norm, dict(layers.ACTIVATIONS)) == before
