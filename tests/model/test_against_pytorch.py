"""The forward pass against PyTorch: the same function of every variant, and the same logits from token ids."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, Transformer

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
