"""The benchmark's figures, and PyTorch as a second, independent reference for the forward pass."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, Transformer
from transformer_cli.bench import run_bench
from transformer_cli.cli import app


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


VARIANTS = [
    Spec(N=2, H=3, m=4, d=10, r=16),
    Spec(
        N=2,
        H=2,
        m=8,
        d=16,
        r=32,
        scale="sqrt",
        mask="causal",
        positional="sinusoidal",
        norm="pre",
        attention_bias=True,
        activation="gelu",
    ),
    Spec(N=1, H=2, m=5, d=9, r=12, positional="learned", max_len=16, norm="post", scale=0.3),
    Spec(
        N=2,
        H=2,
        m=4,
        d=8,
        r=12,
        scale="sqrt",
        mask="causal",
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    ),
    Spec(N=1, H=2, m=3, d=7, r=5, norm="post", norm_type="rmsnorm", feedforward="gated", activation="gelu"),
    Spec(N=1, H=1, m=4, d=6, r=9, feedforward="gated", activation="relu", ff_bias=True),
    Spec(
        N=2,
        H=4,
        G=2,
        m=4,
        d=8,
        r=12,
        scale="sqrt",
        mask="causal",
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    ),
    Spec(N=1, H=3, G=1, m=5, d=7, r=6, attention_bias=True, norm="post"),
    Spec(
        N=2, H=2, m=4, d=8, r=10, mask="causal", norm="pre", parallel=True, attention_bias=True, activation="gelu_exact"
    ),
    Spec(N=2, H=4, G=1, m=3, d=9, r=8, mask="causal", norm="pre", parallel=True, shared_norm=True, ff_bias=False),
    Spec(
        N=2,
        H=2,
        m=8,
        d=12,
        r=16,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    ),
    Spec(N=2, H=3, m=6, d=10, r=8, positional="rope", rope_pairing="interleaved", rope_theta=3.0, attention_bias=True),
    Spec(N=1, H=2, m=8, d=9, r=7, scale="sqrt", positional="rope", rope_fraction=0.25, norm="post"),
    Spec(
        N=2,
        H=2,
        m=8,
        d=12,
        r=8,
        scale="sqrt",
        mask="causal",
        positional="rope",
        rope_theta=100.0,
        rope_scaling="llama3",
        rope_original_max_len=64,
        rope_factor=4.0,
        rope_low_freq_factor=1.0,
        rope_high_freq_factor=8.0,
        norm="pre",
    ),
    Spec(
        N=2,
        H=4,
        G=2,
        m=6,
        d=12,
        r=10,
        V=19,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    ),  # LLaMA's shape, small
    Spec(
        N=2,
        H=4,
        G=2,
        m=4,
        d=8,
        r=10,
        scale="sqrt",
        mask="causal",
        window=3,
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    ),  # Mistral's shape, small
    Spec(
        N=2,
        H=4,
        G=2,
        m=4,
        d=8,
        r=10,
        V=13,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="silu",
        ff_bias=False,
        attention_bias=True,
        out_bias=False,
    ),  # Qwen2's shape, small: biases on q, k, v only
    Spec(
        N=2,
        H=2,
        G=1,
        m=6,
        d=8,
        r=10,
        V=13,
        tie_embeddings=True,
        embed_scale="sqrt",
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        norm_plus_one=True,
        feedforward="gated",
        activation="gelu",
        ff_bias=False,
    ),  # Gemma's shape, small
    Spec(
        N=2,
        H=4,
        G=2,
        m=4,
        d=8,
        r=10,
        E=4,
        k=2,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    ),  # Mixtral's shape, small
    Spec(N=1, H=2, m=3, d=6, r=5, E=3, k=1, norm="post"),  # plain experts with biases, top-1
    Spec(
        N=2,
        H=2,
        m=4,
        d=8,
        r=12,
        V=17,
        head=False,
        type_vocab=2,
        embed_norm=True,
        pooler=True,
        scale="sqrt",
        positional="learned",
        max_len=16,
        norm="post",
        norm_eps=1e-12,
        attention_bias=True,
        activation="gelu_exact",
    ),  # BERT's shape, small
    Spec(
        N=2,
        H=4,
        G=2,
        m=6,
        d=8,
        r=10,
        V=13,
        qk_norm=True,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    ),  # Qwen3's shape
    Spec(N=1, H=2, m=4, d=8, r=6, qk_norm=True, norm="post", attention_bias=True),  # layernorm on q and k
    Spec(N=2, H=2, m=4, d=8, r=6, qk_norm=True, norm="pre", norm_bias=False, mask="causal"),  # layernorm, no bias
    Spec(
        N=2, H=4, G=2, m=4, d=8, r=6, qk_norm=True, qk_norm_over="per_head", norm="pre", parallel=True, mask="causal"
    ),  # StableLM's per-head layer norms (gains only) in a parallel block
    Spec(
        N=2,
        H=2,
        G=1,
        m=6,
        d=8,
        r=10,
        V=13,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="sandwich",
        norm_type="rmsnorm",
        norm_plus_one=True,
        feedforward="gated",
        activation="gelu",
        ff_bias=False,
    ),  # Gemma 2's
    Spec(N=1, H=2, m=4, d=8, r=6, norm="sandwich", attention_bias=True),  # sandwich of layer norms
]


TOKEN_MODELS = [
    Spec(
        N=2,
        H=2,
        m=4,
        d=8,
        r=12,
        V=23,
        tie_embeddings=True,
        scale="sqrt",
        mask="causal",
        positional="learned",
        max_len=16,
        norm="pre",
        attention_bias=True,
        activation="gelu",
    ),  # GPT-2's shape
    Spec(
        N=1,
        H=4,
        G=2,
        m=3,
        d=10,
        r=7,
        V=17,
        head_bias=True,
        embed_scale="sqrt",
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="gelu",
        ff_bias=False,
    ),
]


@pytest.mark.parametrize("spec", TOKEN_MODELS, ids=["gpt2-like-tied", "untied-head-bias-embed-scale"])
def test_pytorch_computes_the_same_logits_from_token_ids(spec):
    """Token ids in, logits (b, V, n) out: PyTorch's F.embedding and F.linear head against tfm's."""
    pytest.importorskip("torch", reason="PyTorch runs the reference (the test extra)")
    from torch_reference import torch_forward

    w = random_weights(spec)
    ids = np.random.default_rng(1).integers(0, spec.V, size=(2, 11))
    ours, theirs = Transformer(spec, w)(ids), torch_forward(spec, w, "float64")(ids)
    assert ours.shape == (2, spec.V, 11)
    assert np.max(np.abs(ours - theirs)) / np.max(np.abs(ours)) < 1e-12
    one = Transformer(spec, w)(ids[1])  # (n,) ids give (V, n) logits, the same as the batch's row
    assert one.shape == (spec.V, 11) and np.allclose(one, ours[1], rtol=0, atol=1e-12 * np.max(np.abs(ours)))


@pytest.mark.parametrize(
    "spec",
    VARIANTS,
    ids=[
        "seed",
        "pre-causal",
        "post-learned",
        "swiglu-rmsnorm",
        "geglu-post-rmsnorm",
        "gated-relu-biased",
        "gqa-llama-like",
        "multi-query-biased",
        "parallel-two-norms-neox",
        "parallel-shared-norm-falcon",
        "rope-half-llama-style",
        "rope-interleaved",
        "rope-quarter",
        "rope-llama3",
        "llama-like-gqa-rope",
        "mistral-like-window",
        "qwen2-like-qkv-bias",
        "gemma-like-plus-one",
        "mixtral-like-experts",
        "plain-experts-top-1",
        "bert-like",
        "qwen3-like-qk-norm",
        "qk-layernorm",
        "layernorm-without-bias",
        "stablelm-like-per-head-qk-norm",
        "gemma2-like-sandwich",
        "sandwich-layernorm",
    ],
)
def test_pytorch_computes_the_same_function(spec):
    """PyTorch (when installed) is an independent implementation: its output must match tfm's."""
    pytest.importorskip("torch", reason="PyTorch runs the reference (the test extra)")
    from torch_reference import torch_forward

    w = random_weights(spec)
    X = np.random.default_rng(0).normal(size=(2, spec.d, 11))
    ours, theirs = Transformer(spec, w)(X), torch_forward(spec, w, "float64")(X)
    assert np.max(np.abs(ours - theirs)) / np.max(np.abs(ours)) < 1e-12


def test_bench_names_the_blas_kernel_and_warns_when_the_environment_forces_a_lower_one(monkeypatch):
    from transformer_cli import bench

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
