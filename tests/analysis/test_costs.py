"""FLOPs against a direct count of what the forward pass computes; memory by dtype and for Adam."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_weights
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_cli import Spec, Transformer, count_params
from transformer_cli import kernels as layers
from transformer_cli.analysis.costs import (
    ACTIVATION_PER_ENTRY,
    NORM_PER_ENTRY,
    SOFTMAX_PER_SCORE,
    costs,
    forward_flops,
    multiply_adds,
)
from transformer_cli.components import residual
from transformer_cli.components.norm import RMS_PER_ENTRY


def direct_count(monkeypatch, model, X) -> dict[str, int]:
    """Run the model with its matrix products, softmax, norms, activations and residuals counted as they happen."""
    done = {"matmul": 0, "softmax": 0, "norms": 0, "activation": 0, "residuals": 0, "gating": 0}
    real = {
        "matmul": np.matmul,
        "softmax": layers.softmax_rows_,
        "norms": layers.layer_norm,
        "rms": layers.rms_norm,
        "residuals": residual._residual,
    }
    activation = layers.ACTIVATIONS[model.spec.activation]

    def matmul(a, b, *args, **kwargs):
        out = real["matmul"](a, b, *args, **kwargs)
        done["matmul"] += 2 * out.size * a.shape[-1]
        return out

    def counted(key, fn, per_entry):
        def wrapper(X, *args, **kwargs):
            done[key] += per_entry * X.size
            return fn(X, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(np, "matmul", matmul)
    monkeypatch.setattr(layers, "softmax_rows_", counted("softmax", real["softmax"], SOFTMAX_PER_SCORE))
    monkeypatch.setattr(layers, "layer_norm", counted("norms", real["norms"], NORM_PER_ENTRY))  # the norm component
    monkeypatch.setattr(layers, "rms_norm", counted("norms", real["rms"], RMS_PER_ENTRY))  # calls these kernels
    monkeypatch.setattr(residual, "_residual", counted("residuals", real["residuals"], 1))
    per = ACTIVATION_PER_ENTRY[model.spec.activation]
    gated = model.spec.feedforward == "gated"

    def activation_and_gate(X):  # a gated feedforward multiplies the activation by the up projection: 1 per entry
        done["gating"] += X.size if gated else 0
        return counted("activation", activation, per)(X)

    monkeypatch.setitem(layers.ACTIVATIONS, model.spec.activation, activation_and_gate)
    model(X)
    monkeypatch.undo()
    return done


def formula(spec: Spec, b: int, n: int, causal_pairs: bool = False) -> dict[str, int]:
    """The same categories from forward_flops, with the bias adds taken out (not instrumented; nor is the scaling,
    which has its own row, outside the products)."""
    f = forward_flops(spec, b, n, causal_pairs)
    matmul = sum(f[k] for k in ("Q/K/V projections", "scores K^T Q", "weights x V", "output projection", "feedforward"))
    bias = spec.attention_bias
    tokens = spec.N * b * n
    gated = spec.feedforward == "gated"
    ff_bias = spec.ff_bias * ((1 + gated) * spec.r + spec.d)
    matmul -= tokens * (bias * (3 * spec.H * spec.m + spec.d) + ff_bias)  # bias adds, counted by formula
    activation = tokens * spec.r * ACTIVATION_PER_ENTRY[spec.activation]
    gating = tokens * spec.r * gated
    matmul -= activation + gating
    return {
        "matmul": matmul,
        "softmax": f["softmax"],
        "norms": f["norms"],
        "activation": activation,
        "residuals": f["residuals"],
        "gating": gating,
    }


specs = st.builds(
    Spec,
    N=st.integers(1, 3),
    H=st.integers(1, 4),
    m=st.integers(1, 6),
    d=st.integers(1, 9),
    r=st.integers(1, 9),
    scale=st.sampled_from(["none", "sqrt"]),
    norm=st.sampled_from(["none", "pre", "post"]),
    attention_bias=st.booleans(),
    activation=st.sampled_from(["relu", "gelu", "gelu_exact", "silu"]),
    norm_type=st.sampled_from(["layernorm", "rmsnorm"]),
    feedforward=st.sampled_from(["plain", "gated"]),
    ff_bias=st.booleans(),
)


@settings(max_examples=40, deadline=None)
@given(specs, st.integers(1, 3), st.integers(1, 12))
def test_flops_equal_a_direct_count_of_the_forward_pass(spec, b, n):
    with pytest.MonkeyPatch.context() as monkeypatch:
        model = Transformer(spec, random_weights(spec), workers=1)
        X = np.random.default_rng(0).normal(size=(b, spec.d, n))
        assert direct_count(monkeypatch, model, X) == formula(spec, b, n)


@settings(max_examples=20, deadline=None)
@given(specs, st.integers(1, 3), st.integers(1, 12))
def test_multiply_adds_are_half_the_products_flops_counted_as_they_run(spec, b, n):
    """One definition: multiply-adds are the matrix products' multiply-adds, whatever else the pass does."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        model = Transformer(spec, random_weights(spec), workers=1)
        X = np.random.default_rng(0).normal(size=(b, spec.d, n))
        assert 2 * sum(multiply_adds(spec, b, n).values()) == direct_count(monkeypatch, model, X)["matmul"]
    assert costs(spec, b, n).to_dict()["multiply_adds"]["total"] == sum(multiply_adds(spec, b, n).values())


def test_the_scores_row_is_the_pure_product_and_the_scale_has_its_own_row():
    scaled, unscaled = Spec(N=2, H=3, m=8, d=16, r=8, scale="sqrt"), Spec(N=2, H=3, m=8, d=16, r=8)
    for spec in (scaled, unscaled):
        flops = forward_flops(spec, 1, 10)
        assert flops["scores K^T Q"] == flops["weights x V"] == 2 * 3 * 100 * 2 * 8
    assert forward_flops(scaled, 1, 10)["score scaling"] == 2 * 3 * 8 * 10  # the m x n queries, not the n^2 scores
    assert forward_flops(unscaled, 1, 10)["score scaling"] == 0


def test_causal_pairs_are_what_one_query_chunks_compute(monkeypatch):
    """With one query per chunk, a causal pass computes exactly the allowed pairs; with one chunk, all n^2."""
    spec = Spec(N=1, H=2, m=4, d=8, r=8, mask="causal")
    X = np.random.default_rng(0).normal(size=(1, 8, 20))
    per_query = Transformer(spec, random_weights(spec), chunk_bytes=1, workers=1)
    assert direct_count(monkeypatch, per_query, X)["softmax"] == forward_flops(spec, 1, 20, True)["softmax"]
    whole = Transformer(spec, random_weights(spec), chunk_bytes=1 << 30, workers=1)
    assert direct_count(monkeypatch, whole, X)["softmax"] == forward_flops(spec, 1, 20)["softmax"]


def test_a_miscounted_component_would_be_caught(monkeypatch):
    spec = Spec(N=1, H=2, m=3, d=4, r=5, norm="pre")
    model = Transformer(spec, random_weights(spec), workers=1)
    X = np.random.default_rng(0).normal(size=(1, 4, 6))
    wrong = formula(Spec(N=1, H=2, m=3, d=4, r=5, norm="post"), 1, 6)  # post has no final norm
    assert direct_count(monkeypatch, model, X) != wrong


def test_memory_by_dtype_and_adam():
    spec = Spec(N=2, H=4, m=8, d=32, r=64)
    params = count_params(spec).total
    memory = costs(spec, 1, 16).to_dict()["memory"]
    assert memory["weights"] == {
        "float64": 8 * params,
        "float32": 4 * params,
        "float16": 2 * params,
        "bfloat16": 2 * params,
    }
    assert memory["training_adam"]["float32"] == 16 * params
    assert memory["forward_peak"]["total"] > memory["weights"]["float64"]


def test_causal_figures_only_for_causal_specs():
    assert "flops_causal_pairs" not in costs(Spec(N=1, H=1, m=1, d=1, r=1), 1, 4).to_dict()
    c = costs(Spec(N=1, H=1, m=1, d=1, r=1, mask="causal"), 1, 4)
    assert c.flops_causal_pairs.by_component["softmax"] == 10 * SOFTMAX_PER_SCORE


def test_a_window_counts_only_the_pairs_it_scores():
    spec = Spec(N=1, H=1, m=2, d=4, r=4, mask="causal", window=3)
    pairs = 3 * 4 // 2 + (10 - 3) * 3  # the first w queries see 1 .. w keys, the other 7 see w
    assert forward_flops(spec, 1, 10, causal_pairs=True)["softmax"] == pairs * SOFTMAX_PER_SCORE
    assert forward_flops(spec, 1, 2, causal_pairs=True)["softmax"] == 3 * SOFTMAX_PER_SCORE  # n <= w: all causal


def test_soft_capping_is_counted_where_the_pass_caps(monkeypatch):
    """Gemma 2's caps: 3 FLOPs a capped score (its own row) and 3 a capped logit (in the head's row), counted as
    the pass calls the cap: over every score it computes (causal chunks, windows) and every logit."""
    spec = Spec(
        N=2,
        H=2,
        m=4,
        d=8,
        r=12,
        V=11,
        mask="causal",
        positional="rope",
        norm="sandwich",
        attn_softcap=2.0,
        logit_softcap=3.0,
        window=3,
        attention_layers=["sliding", "full"],
    )
    capped = {"entries": 0}
    real = layers.soft_cap_

    def counted(X, cap):
        capped["entries"] += X.size
        return real(X, cap)

    monkeypatch.setattr(layers, "soft_cap_", counted)
    b, n = 2, 7
    Transformer(spec, random_weights(spec), workers=1)(np.zeros((b, n), dtype=np.int64))
    f, plain = (
        forward_flops(spec, b, n, causal_pairs=True),
        forward_flops(Spec(**{**spec.to_dict(), "logit_softcap": None, "attn_softcap": None}), b, n, causal_pairs=True),
    )
    scores = f["score soft-capping"]
    logits = f["output head"] - plain["output head"]
    assert "score soft-capping" not in plain and logits == 3 * spec.V * b * n
    # the pass caps whole chunks of scores (each query's keys from its window's start to the chunk's end), at most
    # the causal pairs' count plus the masked corner of each chunk: the row counts the pairs attention scores
    assert scores == 3 * (spec.H * (b * (3 * 4 // 2 + 4 * 3)) + spec.H * b * n * (n + 1) // 2)
    assert 3 * capped["entries"] >= scores + logits


@pytest.mark.parametrize("shared_gate", [False, True])
def test_multiply_adds_of_routed_and_shared_experts_are_counted_as_they_run(monkeypatch, shared_gate):
    """Qwen-MoE's layout: experts of their own size, a shared expert (gated or not), a dense block beside routed
    ones: the matrix products the pass runs are the multiply-adds the costs say (each column through k experts)."""
    spec = Spec(
        N=3,
        H=2,
        m=4,
        d=8,
        r=10,
        E=4,
        k=2,
        expert_r=6,
        shared_r=5,
        shared_gate=shared_gate,
        router_renorm=False,
        feedforward="gated",
        activation="silu",
        norm="pre",
        mask="causal",
        feedforward_layers=["routed", "dense"],
    )
    model = Transformer(spec, random_weights(spec), workers=1)
    X = np.random.default_rng(0).normal(size=(2, spec.d, 5))
    assert 2 * sum(multiply_adds(spec, 2, 5).values()) == direct_count(monkeypatch, model, X)["matmul"]
