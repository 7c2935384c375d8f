"""Gated DeltaNet (components/deltanet.py): its chunked delta rule against the recurrence written out here column by
column, its decoding state against the parallel pass, its cache; each with a case where the property must break."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, Transformer, count_params, make_setup
from transformer_cli.analysis.kv_cache import kv_cache_bytes, state_bytes
from transformer_cli.components.deltanet import GatedDeltaNet
from transformer_cli.errors import ExitCode
from transformer_cli.model.decoding import decode
from transformer_cli.verify import check_causality, check_equivariance

HYBRID = Spec(
    N=3, H=4, G=2, m=8, d=24, r=40, V=37, mask="causal", scale="sqrt", norm="pre", norm_type="rmsnorm",
    feedforward="gated", activation="silu", ff_bias=False, positional="rope", rope_fraction=0.5, qk_norm=True,
    attn_gate=True,
    attention="deltanet", mixer_layers=("deltanet", "standard", "deltanet"), linear_k_heads=2, linear_k_dim=6,
    linear_v_heads=4, linear_v_dim=5, conv_kernel=3,
)  # fmt: skip


def recurrence(q, k, v, beta, g):
    """The delta rule written out: S <- exp(g) S; S <- S + k (beta (v - S^T k))^T; o = S^T q, head by head."""
    b, h, n, dk = k.shape
    o = np.zeros_like(v)
    for i in range(b):
        for j in range(h):
            S = np.zeros((dk, v.shape[-1]))
            for t in range(n):
                S = np.exp(g[i, j, t]) * S
                S = S + np.outer(k[i, j, t], beta[i, j, t] * (v[i, j, t] - S.T @ k[i, j, t]))
                o[i, j, t] = S.T @ q[i, j, t]
    return o


@pytest.mark.parametrize("chunk", [1, 5, 64])
def test_the_chunked_delta_rule_is_the_recurrence(chunk):
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(2, 3, 23, 6)), rng.normal(size=(2, 3, 23, 6)), rng.normal(size=(2, 3, 23, 4))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    beta, g = rng.uniform(0.1, 0.9, size=(2, 3, 23)), -rng.uniform(0.01, 2.0, size=(2, 3, 23))
    o, _ = GatedDeltaNet.chunked(q, k, v, beta, g, chunk=chunk)
    expected = recurrence(q, k, v, beta, g)
    assert np.abs(o - expected).max() < 1e-12 * np.abs(expected).max()
    plain, _ = GatedDeltaNet.chunked(q, k, v, np.ones_like(beta), g, chunk=chunk)  # (beta: how much each writes)
    assert np.abs(plain - expected).max() > 1e-2


def test_counts_name_every_tensor_and_the_closed_form_agrees():
    nk, dk, nv, dv, d, K = 2, 6, 4, 5, 24, 3
    mixer = (2 * nk * dk + 3 * nv * dv + 2 * nv) * d + K * (2 * nk * dk + nv * dv) + 2 * nv + dv
    feedforward, norms = 3 * 40 * d, 2 * d
    attention = (2 * 4 * 8 + 2 * 2 * 8) * d + 4 * 8 * d + 2 * 8  # W_Q, W_O, W_K, W_V, the gate, q/k norms
    expected = 2 * (mixer + feedforward + norms) + attention + feedforward + norms + 2 * 37 * d + d
    assert count_params(HYBRID).total == expected


@pytest.mark.parametrize("prompt", [0, 1, 8])
def test_decoding_step_by_step_equals_the_parallel_pass(prompt):
    model = Transformer(HYBRID, random_weights(HYBRID, 4))
    ids = np.random.default_rng(1).integers(0, HYBRID.V, size=(2, 70))  # (two of the prefill's chunks)
    full = model(ids)
    assert np.abs(decode(model, ids, prompt=prompt) - full).max() < 1e-11
    assert np.abs(decode(model, ids, prompt=prompt, stale_at=prompt + 1) - full)[..., prompt + 2 :].max() > 1e-3


def test_the_state_is_the_convolutions_columns_and_the_heads_float32_states():
    conv = 2 * 2 * 6 + 4 * 5
    per_block = conv * 3 * 2 + 4 * 6 * 5 * 4  # (bfloat16 columns, float32 states)
    assert state_bytes(HYBRID, 3, "bfloat16") == 3 * 2 * per_block
    token = 2 * 2 * 8 * 2  # the attention block's keys and values
    assert kv_cache_bytes(HYBRID, 3, 11, "bfloat16") - kv_cache_bytes(HYBRID, 3, 10, "bfloat16") == 3 * token


def test_the_mixer_is_causal_and_tells_positions_apart():
    spec = replace(HYBRID, mixer_layers=None, positional="none", qk_norm=False, attn_gate=False, rope_fraction=1.0)
    setup = lambda: make_setup(spec, random_weights(spec), 0, "float64", None, None)  # noqa: E731
    assert check_causality(setup()).exit_code == ExitCode.OK
    assert check_equivariance(setup()).exit_code == ExitCode.VIOLATED
    assert check_equivariance(setup(), expect="theory").exit_code == ExitCode.OK
