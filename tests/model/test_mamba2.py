"""Mamba-2's state space mixer (components/mamba2.py): its chunked scan against the recurrence written out here
column by column, its decoding state against the parallel pass, its memory figures and the seed's properties it
keeps or breaks, each with a case where the property must break."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, Transformer, count_params, make_setup
from transformer_cli.analysis.kv_cache import kv_cache_bytes, state_bytes
from transformer_cli.components.mamba2 import Mamba2
from transformer_cli.errors import ExitCode, SpecError
from transformer_cli.model.decoding import decode
from transformer_cli.spec.validate import spec_from_mapping
from transformer_cli.verify import check_causality, check_decoding, check_equivariance

MAMBA = Spec(
    N=2, H=4, m=6, d=16, r=24, V=53, mask="causal", norm="pre", norm_type="rmsnorm", feedforward="none",
    attention="mamba2", ssm_heads=4, ssm_head_dim=6, ssm_state=5, ssm_groups=2, conv_kernel=3, conv_bias=True,
)  # fmt: skip
HYBRID = replace(MAMBA, feedforward="gated", mixer_layers=("mamba2", "standard", "mamba2"), N=3, scale="sqrt")


def recurrence(x, B, C, dt, A):
    """S_t = exp(dt_t A) S_{t-1} + dt_t x_t B_t^T, y_t = S_t C_t, head by head and column by column: x (H, P, b, n),
    B and C (G, N, b, n), dt (H, b, n)."""
    H, P, b, n = x.shape
    G = B.shape[0]
    y = np.zeros_like(x)
    for h in range(H):
        g = h // (H // G)
        for j in range(b):
            S = np.zeros((P, B.shape[1]))
            for t in range(n):
                S = np.exp(dt[h, j, t] * A[h]) * S + dt[h, j, t] * np.outer(x[h, :, j, t], B[g, :, j, t])
                y[h, :, j, t] = S @ C[g, :, j, t]
    return y


@pytest.mark.parametrize("chunk", [1, 4, 64])
def test_the_chunked_scan_is_the_recurrence(chunk):
    mixer = Mamba2(MAMBA)
    rng = np.random.default_rng(0)
    H, P, N, G, _ = mixer.sizes
    x, B, C = rng.normal(size=(H, P, 2, 19)), rng.normal(size=(G, N, 2, 19)), rng.normal(size=(G, N, 2, 19))
    dt, A = rng.uniform(0.05, 1.0, size=(H, 2, 19)), -np.exp(rng.normal(size=H))
    y, _ = mixer.scan(x, B, C, dt, A, chunk=chunk)
    expected = recurrence(x, B, C, dt, A)
    assert np.abs(y - expected).max() < 1e-12 * np.abs(expected).max()
    backwards, _ = mixer.scan(x[..., ::-1], B[..., ::-1], C[..., ::-1], dt[..., ::-1], A, chunk=chunk)
    assert np.abs(backwards[..., ::-1] - expected).max() > 1e-2  # (the order of the columns matters)


def test_counts_name_every_tensor_and_the_closed_form_agrees():
    d, H, P, N, G, K = 16, 4, 6, 5, 2, 3
    inner, conv = H * P, H * P + 2 * G * N
    block = (inner + conv + H) * d + conv * K + conv + 3 * H + inner + d * inner + d  # + its norm's gain
    assert count_params(MAMBA).total == 2 * block + 53 * d + d + 53 * d  # the embedding, final norm, untied head


@pytest.mark.parametrize("spec", [MAMBA, HYBRID])
@pytest.mark.parametrize("prompt", [0, 1, 9])
def test_decoding_step_by_step_equals_the_parallel_pass(spec, prompt):
    model = Transformer(spec, random_weights(spec, 3))
    ids = np.random.default_rng(1).integers(0, spec.V, size=(2, 70))  # (two of the prefill's chunks)
    full = model(ids)
    assert np.abs(decode(model, ids, prompt=prompt) - full).max() < 1e-11
    stale = decode(model, ids, prompt=prompt, stale_at=prompt + 1)
    assert np.abs(stale - full)[..., prompt + 2 :].max() > 1e-3


def test_the_plans_state_is_the_convolutions_columns_and_the_heads_float32_states():
    inner, conv = 4 * 6, 4 * 6 + 2 * 2 * 5
    per_block = conv * 3 * 2 + 4 * 6 * 5 * 4  # (bfloat16 columns, float32 states)
    assert state_bytes(MAMBA, 3, "bfloat16") == 3 * 2 * per_block
    assert kv_cache_bytes(MAMBA, 3, 10, "bfloat16") == kv_cache_bytes(MAMBA, 3, 10_000, "bfloat16")  # (no tokens)
    one_attention = 2 * 4 * 6 * 2 * 3  # HYBRID's attention block: keys and values of G = H heads of m, a token
    assert kv_cache_bytes(HYBRID, 3, 11, "bfloat16") - kv_cache_bytes(HYBRID, 3, 10, "bfloat16") == one_attention
    assert inner == 24


@pytest.mark.parametrize("spec", [MAMBA, HYBRID])
def test_the_mixer_is_causal_and_tells_positions_apart(spec):
    setup = lambda: make_setup(spec, random_weights(spec), 0, "float64", None, None)  # noqa: E731
    assert check_causality(setup()).exit_code == ExitCode.OK
    assert check_decoding(setup()).exit_code == ExitCode.OK
    assert check_equivariance(setup()).exit_code == ExitCode.VIOLATED  # (theory says it breaks: it does)
    assert check_equivariance(setup(), expect="theory").exit_code == ExitCode.OK


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"ssm_state": None}, "key 'ssm_state': missing, expected a positive integer with a mamba2 block"),
        ({"ssm_groups": 3}, "key 'ssm_groups': got 3, expected a divisor of ssm_heads = 4"),
        (
            {"attention": "standard", "feedforward": "gated"},
            "expected no conv_bias without a short_conv or mamba2 or attention_mamba2 or mamba2_memory or mamba block",
        ),
    ],
)
def test_the_state_spaces_keys_are_checked_in_one_line(changed, said):
    keys = {k: v for k, v in (MAMBA.to_dict() | changed).items() if v is not None}
    with pytest.raises(SpecError, match=re.escape(said)):
        spec_from_mapping(keys, "x.yaml")


def test_what_fits_a_budget_grows_with_the_state_spaces_in_place_of_attention():
    """Three of four blocks keep a fixed state instead of keys and values: at the same budget the hybrid serves a
    longer context and more sequences than the same stack attending in every block (the prefill's transient peak,
    one block's at a time, is the mixer's wider projections either way)."""
    from transformer_cli.analysis.serving import fits

    kinds = ("mamba2", "mamba2", "mamba2", "standard")
    big = replace(HYBRID, N=12, d=1024, H=16, m=64, r=2816, ssm_heads=16, ssm_head_dim=64, ssm_state=64, V=32000)
    big = replace(big, mixer_layers=kinds)
    attending = replace(big, mixer_layers=None, attention="standard")
    budget = 2 * 1024**3
    ours, theirs = fits(big, budget, 4, 4096), fits(attending, budget, 4, 4096)
    assert ours.max_context_at_batch > 1.5 * theirs.max_context_at_batch
    assert ours.max_batch_at_context > theirs.max_batch_at_context
