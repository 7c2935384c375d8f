"""Mamba-1's selective state space (components/mamba.py): its chunked scan against the recurrence written out here
column by column (decays steep enough to cut the chunks at every column, and shallow ones), its decoding state
against the parallel pass, and its cache; each with a case where the property must break."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, Transformer, count_params
from transformer_cli.analysis.kv_cache import kv_cache_bytes, state_bytes
from transformer_cli.components.mamba import Mamba
from transformer_cli.errors import SpecError
from transformer_cli.families.jamba import config as jamba_config
from transformer_cli.model.decoding import decode

MAMBA = Spec(
    N=2, H=1, m=1, d=12, r=24, V=41, mask="causal", norm="pre", norm_type="rmsnorm", feedforward="none",
    attention="mamba", ssm_inner=24, ssm_state=5, ssm_dt_rank=3, conv_kernel=4, conv_bias=True,
    ssm_bcdt_norm="affine",
)  # fmt: skip


def recurrence(x, B, C, dt, A):
    """s_t = exp(dt_t A) * s_{t-1} + dt_t x_t B_t, y_t = s_t C_t, column by column: x, dt (I, b, n), B, C (N, b, n)."""
    inner, b, n = x.shape
    y = np.zeros_like(x)
    for j in range(b):
        s = np.zeros(A.shape)
        for t in range(n):
            s = np.exp(dt[:, j, t, None] * A) * s + (dt[:, j, t] * x[:, j, t])[:, None] * B[None, :, j, t]
            y[:, j, t] = s @ C[:, j, t]
    return y


@pytest.mark.parametrize("steepness", [0.01, 1.0, 40.0])  # (40: every column a chunk of its own)
def test_the_chunked_scan_is_the_recurrence(steepness):
    rng = np.random.default_rng(0)
    x, B, C = rng.normal(size=(24, 2, 33)), rng.normal(size=(5, 2, 33)), rng.normal(size=(5, 2, 33))
    dt = rng.uniform(0.1, 1.0, size=(24, 2, 33)) * steepness
    A = -np.exp(rng.normal(size=(24, 5)))
    y, final = Mamba.scan(x, B, C, dt, A)
    expected = recurrence(x, B, C, dt, A)
    assert np.isfinite(y).all() and np.abs(y - expected).max() < 1e-12 * np.abs(expected).max()
    shuffled, _ = Mamba.scan(x, B[..., ::-1], C, dt, A)
    assert np.abs(shuffled - expected).max() > 1e-3  # (B's columns matter, in their order)


def test_counts_name_every_tensor_and_the_closed_form_agrees():
    inner, N, R, d, K = 24, 5, 3, 12, 4
    block = 3 * inner * d + K * inner + inner + (R + 2 * N) * inner + inner * R + inner * (N + 2) + R + 2 * N + d
    assert count_params(MAMBA).total == 2 * block + 41 * d + d + 41 * d


@pytest.mark.parametrize("norm", ["affine", "plain", "none"])
def test_decoding_step_by_step_equals_the_parallel_pass(norm):
    spec = replace(MAMBA, ssm_bcdt_norm=norm)
    model = Transformer(spec, random_weights(spec, 2))
    ids = np.random.default_rng(1).integers(0, spec.V, size=(2, 25))
    full = model(ids)
    assert np.abs(decode(model, ids, prompt=6) - full).max() < 1e-12
    assert np.abs(decode(model, ids, prompt=6, stale_at=8) - full)[..., 9:].max() > 1e-3


def test_the_state_is_the_convolutions_columns_and_the_channels_states_whatever_the_context():
    per_block = 24 * (4 + 5) * 2  # (bfloat16)
    assert state_bytes(MAMBA, 3, "bfloat16") == 3 * 2 * per_block
    assert kv_cache_bytes(MAMBA, 3, 7, "bfloat16") == kv_cache_bytes(MAMBA, 3, 7000, "bfloat16") == 3 * 2 * per_block


def test_jambas_config_says_its_layers_as_periods_or_refuses_in_one_line():
    jamba = replace(MAMBA, N=4, H=2, m=6, feedforward="gated", scale="sqrt", mixer_layers=("mamba", "standard"))
    assert jamba_config(jamba)["attn_layer_period"] == 2 and jamba_config(jamba)["attn_layer_offset"] == 1
    odd = replace(jamba, mixer_layers=("mamba", "standard", "standard", "mamba"))
    with pytest.raises(SpecError, match="layers \\[1, 2\\] are no attn_layer_period and offset"):
        jamba_config(odd)
