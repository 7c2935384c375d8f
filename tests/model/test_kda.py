"""Kimi Delta Attention (components/kda.py): its chunked delta rule against the recurrence with a decay per channel
written out here column by column, decoding against the parallel pass, its cache and its count; each with a case
where the property must break. The model against transformers' own: tests/formats/test_hf_mixers.py."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, Transformer, count_params, make_setup
from transformer_cli.analysis.kv_cache import kv_cache_bytes, state_bytes
from transformer_cli.components.kda import KimiDeltaAttention
from transformer_cli.errors import ExitCode, SpecError
from transformer_cli.model.decoding import decode
from transformer_cli.spec.validate import spec_from_mapping
from transformer_cli.verify import check_causality, check_decoding, check_equivariance

KIMI = Spec(
    N=3, H=4, m=12, d=32, r=40, V=37, mask="causal", scale="sqrt", norm="pre", norm_type="rmsnorm",
    feedforward="gated", activation="silu", ff_bias=False, positional="none", attention="latent", kv_rank=8,
    rope_m=4, v_m=8, mixer_layers=("kda", "latent", "kda"), linear_v_heads=4, linear_v_dim=8, conv_kernel=4,
)  # fmt: skip


def recurrence(q, k, v, beta, g):
    """The rule written out, per head: S <- Diag(exp(g)) S; S <- S + k (beta (v - S^T k))^T; o = S^T q."""
    b, h, n, D = k.shape
    o = np.zeros_like(v)
    for i in range(b):
        for j in range(h):
            S = np.zeros((D, v.shape[-1]))
            for t in range(n):
                S = np.exp(g[i, j, t])[:, None] * S
                S = S + np.outer(k[i, j, t], beta[i, j, t] * (v[i, j, t] - S.T @ k[i, j, t]))
                o[i, j, t] = S.T @ q[i, j, t]
    return o


@pytest.mark.parametrize("chunk", [1, 5, 64])
def test_the_chunked_rule_is_the_recurrence_with_a_decay_per_channel(chunk):
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(2, 3, 23, 6)) for _ in range(3))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    beta, g = rng.uniform(0.1, 0.9, size=(2, 3, 23)), -rng.uniform(0.01, 2.0, size=(2, 3, 23, 6))
    o, _ = KimiDeltaAttention.chunked(q, k, v, beta, g, chunk=chunk)
    expected = recurrence(q, k, v, beta, g)
    assert np.abs(o - expected).max() < 1e-12 * np.abs(expected).max()
    per_head = np.repeat(g.mean(-1, keepdims=True), 6, axis=-1)  # (one decay a head: Gated DeltaNet's)
    assert np.abs(KimiDeltaAttention.chunked(q, k, v, beta, per_head, chunk=chunk)[0] - expected).max() > 1e-3


@pytest.mark.parametrize("prompt", [0, 1, 9])
def test_decoding_step_by_step_is_the_parallel_pass(prompt):
    model = Transformer(KIMI, random_weights(KIMI, seed=3))
    ids = np.random.default_rng(1).integers(0, KIMI.V, size=(2, 70))  # (two of the prefill's chunks)
    full = model(ids)
    assert np.abs(decode(model, ids, prompt=prompt) - full).max() < 1e-11 * np.abs(full).max()
    stale = decode(model, ids, prompt=prompt, stale_at=prompt + 1)
    assert np.abs(stale - full)[..., prompt + 2 :].max() > 1e-3


def test_counts_name_every_tensor_and_the_closed_form_agrees():
    d, H, D, K = 32, 4, 8, 4
    kda = (4 * H * D + 2 * D + H) * d + 2 * H * D * D + 3 * K * H * D + H * D + H + D
    latent = 4 * 12 * d + (8 + 4) * d + 8 + 4 * (12 - 4 + 8) * 8 + 4 * 8 * d  # W_Q, W_KVA, its norm, W_KVB, W_O
    feedforward, norms = 3 * 40 * d, 2 * d
    expected = 2 * kda + latent + 3 * (feedforward + norms) + 2 * 37 * d + d
    assert count_params(KIMI).total == expected == count_params(KIMI).closed_total


def test_the_cache_is_the_latent_layers_tokens_and_the_linear_layers_states():
    state = 3 * 32 * 4 * 8 + 4 * 8 * 8 * 4  # [q; k; v]'s last 4 columns (float64), each head's S (float32)
    assert state_bytes(KIMI, 2, "float64") == 2 * 2 * state
    per_token = (8 + 4) * 8  # the latent and the shared key part
    assert kv_cache_bytes(KIMI, 2, 10, "float64") == 2 * (2 * state + 10 * per_token)


def test_it_is_causal_and_no_position_is_seen_but_through_the_recurrence():
    setup = lambda: make_setup(KIMI, random_weights(KIMI), 0, "float64", None, None)  # noqa: E731
    assert check_causality(setup()).exit_code == ExitCode.OK
    assert check_decoding(setup()).exit_code == ExitCode.OK  # (its controls caught, or not OK)
    assert check_equivariance(setup()).exit_code == ExitCode.VIOLATED
    assert check_equivariance(setup(), expect="theory").exit_code == ExitCode.OK


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"linear_v_dim": None}, "key 'linear_v_dim': missing, expected a positive integer with a kda block"),
        ({"linear_k_heads": 2}, "expected no linear_k_heads without a deltanet block"),
    ],
)
def test_its_keys_are_checked_in_one_line(changed, said):
    keys = {k: v for k, v in (KIMI.to_dict() | changed).items() if v is not None}
    with pytest.raises(SpecError, match=re.escape(said)):
        spec_from_mapping(keys, "x.yaml")


def test_the_latent_layers_see_no_positions_unless_turned():
    weights = random_weights(KIMI, seed=4)
    ids = np.random.default_rng(2).integers(0, KIMI.V, size=(1, 12))
    turned = replace(KIMI, positional="rope")
    assert np.abs(Transformer(KIMI, weights)(ids) - Transformer(turned, weights)(ids)).max() > 1e-3


@pytest.mark.parametrize("Q", [64, 37, 16, 5])
def test_the_decays_made_a_block_at_a_time_are_the_decays_made_whole(Q):
    """`decayed` (sub-blocks of 16 columns, products of matrices between them) equals the (Q, Q, D) decays made whole,
    with decays of up to e^-30 a step in float32, where decaying from the chunk's start (exp(cum_t) exp(-cum_j))
    overflows: the control."""
    from transformer_cli.components.kda import decayed

    rng = np.random.default_rng(Q)
    X, K = (rng.normal(size=(2, 3, Q, 8)).astype(np.float32) for _ in range(2))
    cum = np.cumsum(-rng.uniform(0, 30, size=(2, 3, Q, 8)), axis=2).astype(np.float32)
    lower = np.tril(np.ones((Q, Q), dtype=bool))[..., None]
    gaps = cum[:, :, :, None, :].astype(np.float64) - cum[:, :, None, :, :]
    whole = np.einsum("bhtjd,bhtd,bhjd->bhtj", np.exp(np.where(lower, gaps, -np.inf)), X, K)
    np.testing.assert_allclose(decayed(X, K, cum), whole, rtol=1e-4, atol=1e-6 * np.abs(whole).max())
    with np.errstate(over="ignore", invalid="ignore"):
        from_start = np.matmul(X * np.exp(cum), (K * np.exp(-cum)).swapaxes(-1, -2))
    assert Q <= 5 or not np.isfinite(from_start).all()
