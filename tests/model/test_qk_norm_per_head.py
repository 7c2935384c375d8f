"""Query and key norms with gains of each head's own (qk_norm_over: per_head; StableLM's qk_layernorm, Cohere's
use_qk_norm): against the plain reference model (tests/reference_model.py), counted, with the control that the
heads' own gains matter."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from conftest import random_weights, reference_error, rel, variant_specs
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_model import reference_forward

from transformer_cli import Spec, count_params
from transformer_cli.model.transformer import Transformer

COHERE_LIKE = Spec(
    N=2,
    H=4,
    G=2,
    m=4,
    d=16,
    r=12,
    V=13,
    scale="sqrt",
    mask="causal",
    positional="rope",
    norm="pre",
    norm_bias=False,
    parallel=True,
    shared_norm=True,
    feedforward="gated",
    activation="silu",
    ff_bias=False,
    qk_norm=True,
    qk_norm_over="per_head",
)


@settings(max_examples=30, deadline=None)
@given(
    variant_specs().map(lambda s: replace(s, qk_norm=True, qk_norm_over="per_head")),
    st.integers(1, 2),
    st.integers(1, 9),
    st.integers(0, 99),
)
def test_per_head_query_and_key_norms_run_as_the_plain_reference(spec, b, n, seed):
    assert reference_error(spec, b, n, seed) < 1e-12


def test_each_heads_own_gains_matter():
    """The control: the same model with every head given head 0's gains (qk_norm_over: head) differs."""
    w = random_weights(COHERE_LIKE)
    ids = np.random.default_rng(0).integers(0, COHERE_LIKE.V, size=(2, 9))
    ours = Transformer(COHERE_LIKE, w)(ids)
    assert rel(ours, reference_forward(COHERE_LIKE, w, ids)) < 1e-12
    shared = {k: (v[0] if k.endswith(("q_norm.gamma", "k_norm.gamma")) else v) for k, v in w.items()}
    assert rel(Transformer(replace(COHERE_LIKE, qk_norm_over="head"), shared)(ids), ours) > 1e-3


def test_per_head_norms_are_gains_only_and_counted():
    """A gain per head and entry, (H + G)m a block, and no beta even where the block's layer norms have one."""
    spec = replace(COHERE_LIKE, norm_bias=True)
    counted = count_params(spec)
    H, G, m, d, r = spec.H, spec.kv_heads, spec.m, spec.d, spec.r
    assert counted.per_block == 2 * H * m * d + 2 * G * m * d + 3 * r * d + 2 * d + (H + G) * m
    assert counted.total == counted.closed_total
    shapes = {t.name: t.shape for t in counted.block if "_norm." in t.name}
    assert shapes == {"blocks.0.attention.q_norm.gamma": (H, m), "blocks.0.attention.k_norm.gamma": (G, m)}
