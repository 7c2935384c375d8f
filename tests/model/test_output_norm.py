"""OLMo 2's block: X + N1o(Attn(X)), then + N2o(FF(.)), a final norm after the last block (norm: output), and the
query and key norms over all heads' projections together (qk_norm_over: all); against the plain reference model
(tests/reference_model.py), with the controls that each matters."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from conftest import random_weights, reference_error, rel, variant_specs
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_model import reference_forward

from transformer_cli import Spec, count_params
from transformer_cli.model.transformer import Transformer

OLMO2 = Spec(
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
    norm="output",
    norm_type="rmsnorm",
    feedforward="gated",
    activation="silu",
    ff_bias=False,
    qk_norm=True,
    qk_norm_over="all",
)


@settings(max_examples=30, deadline=None)
@given(
    variant_specs().map(lambda s: replace(s, norm="output", parallel=False, shared_norm=False)),
    st.integers(1, 2),
    st.integers(1, 9),
    st.integers(0, 99),
)
def test_the_output_layout_runs_as_the_plain_reference(spec, b, n, seed):
    # (1e-10: a drawn LayerNorm of each head's query over m = 2 entries amplifies the two float64 passes' different
    # orders of additions by the inverse of its deviation, 6.7e-12 in one drawn case)
    assert reference_error(spec, b, n, seed) < 1e-10


@settings(max_examples=30, deadline=None)
@given(
    variant_specs().map(lambda s: replace(s, qk_norm=True, qk_norm_over="all")),
    st.integers(1, 2),
    st.integers(1, 9),
    st.integers(0, 99),
)
def test_query_and_key_norms_over_all_heads_run_as_the_plain_reference(spec, b, n, seed):
    assert reference_error(spec, b, n, seed) < 1e-12


def test_each_of_olmo2s_steps_matters():
    """The controls: per-head query/key norms (their gains cut to one head's) or pre-norm placement differ."""
    w = random_weights(OLMO2)
    ids = np.random.default_rng(0).integers(0, OLMO2.V, size=(2, 9))
    ours = Transformer(OLMO2, w)(ids)
    assert rel(ours, reference_forward(OLMO2, w, ids)) < 1e-12
    per_head = {k: (v[: OLMO2.m] if k.endswith(("q_norm.gamma", "k_norm.gamma")) else v) for k, v in w.items()}
    assert rel(Transformer(replace(OLMO2, qk_norm_over="head"), per_head)(ids), ours) > 1e-3
    pre = {k.replace("_out.", "."): v for k, v in w.items()}
    assert rel(Transformer(replace(OLMO2, norm="pre"), pre)(ids), ours) > 1e-3


def test_olmo2s_block_counts_its_norms():
    counted = count_params(OLMO2)
    H, G, m, d = OLMO2.H, OLMO2.kv_heads, OLMO2.m, OLMO2.d
    assert counted.per_block == 2 * H * m * d + 2 * G * m * d + 3 * OLMO2.r * d + 2 * d + (H + G) * m
    assert counted.total == counted.closed_total
    names = [t.name for t in counted.block if "norm" in t.name]
    assert names == [
        "blocks.0.attention.q_norm.gamma",
        "blocks.0.attention.k_norm.gamma",
        "blocks.0.norm1_out.gamma",
        "blocks.0.norm2_out.gamma",
    ]
