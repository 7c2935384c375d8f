"""The benchmark's FLOP count against a direct count of the multiply-adds done, and PyTorch as a second reference."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_weights
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_cli import Spec, Transformer
from transformer_cli.bench import matmul_flops, run_bench, torch_forward
from transformer_cli.cli import app


def counted_flops(monkeypatch, model, X) -> int:
    """Run the model with np.matmul wrapped to add up 2 * M * K * N for every product it computes."""
    total = 0
    real = np.matmul

    def counting(a, b, *args, **kwargs):
        nonlocal total
        out = real(a, b, *args, **kwargs)
        total += 2 * out.size * a.shape[-1]  # every output entry is a dot product of length K
        return out

    monkeypatch.setattr(np, "matmul", counting)
    model(X)
    monkeypatch.setattr(np, "matmul", real)
    return total


specs = st.builds(
    Spec, N=st.integers(1, 3), H=st.integers(1, 4), m=st.integers(1, 6), d=st.integers(1, 9), r=st.integers(1, 9),
    norm=st.sampled_from(["none", "pre", "post"]), attention_bias=st.booleans(),
    activation=st.sampled_from(["relu", "gelu"]),
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(specs, st.integers(1, 3), st.integers(1, 12))
def test_matmul_flops_equal_the_products_the_model_computes(spec, b, n):
    with pytest.MonkeyPatch.context() as monkeypatch:
        model = Transformer(spec, random_weights(spec), workers=1)
        X = np.random.default_rng(0).normal(size=(b, spec.d, n))
        assert counted_flops(monkeypatch, model, X) == sum(matmul_flops(spec, b, n).values())


def test_causal_chunks_skip_work_the_full_count_includes(monkeypatch):
    spec = Spec(N=1, H=2, m=4, d=8, r=8, mask="causal")
    X = np.random.default_rng(0).normal(size=(1, 8, 64))
    full = sum(matmul_flops(spec, 1, 64).values())
    one_chunk = Transformer(spec, random_weights(spec), chunk_bytes=1 << 30)
    assert counted_flops(monkeypatch, one_chunk, X) == full
    chunked = Transformer(spec, random_weights(spec), chunk_bytes=8 * 2 * 64 * 8)  # 8 queries a chunk
    assert counted_flops(monkeypatch, chunked, X) < full


def test_run_bench_without_torch_reports_every_figure():
    spec = Spec(N=1, H=2, m=4, d=8, r=16)
    data = run_bench(spec, random_weights(spec), 2, 16, "float64", repeat=2, torch=False).to_dict()
    assert data["torch"] is None and len(data["flops_by_component"]) == 5
    assert data["tfm"]["median_s"] > 0 and data["tfm"]["peak_bytes"] > 0 and data["gemm_gflops"] > 0
    assert data["tfm"]["tokens_per_s"] == pytest.approx(32 / data["tfm"]["median_s"])


def test_bench_command_json(runner):
    result = runner.invoke(app, ["bench", "--seq-len", "8", "--repeat", "2", "--no-torch", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["seq_len"] == 8 and data["batch"] == 1 and data["flops"] == sum(data["flops_by_component"].values())


VARIANTS = [
    Spec(N=2, H=3, m=4, d=10, r=16),
    Spec(N=2, H=2, m=8, d=16, r=32, scale="sqrt", mask="causal", positional="sinusoidal", norm="pre",
         attention_bias=True, activation="gelu"),
    Spec(N=1, H=2, m=5, d=9, r=12, positional="learned", max_len=16, norm="post", scale=0.3),
]  # fmt: skip


@pytest.mark.parametrize("spec", VARIANTS, ids=["seed", "pre-causal", "post-learned"])
def test_pytorch_computes_the_same_function(spec):
    """PyTorch (when installed) is an independent implementation: its output must match tfm's."""
    pytest.importorskip("torch")
    w = random_weights(spec)
    X = np.random.default_rng(0).normal(size=(2, spec.d, 11))
    ours, theirs = Transformer(spec, w)(X), torch_forward(spec, w, "float64")(X)
    assert np.max(np.abs(ours - theirs)) / np.max(np.abs(ours)) < 1e-12
