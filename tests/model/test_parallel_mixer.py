"""Attention and Mamba-2 side by side (components/parallel_mixer.py, Falcon-H1's blocks): the multipliers against
weights scaled by hand, the state space's norms, decoding against the parallel pass, the cache and the count; each
with a case where the property must break. The block against transformers' own: tests/formats/test_hf_mixers.py."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, Transformer, count_params, make_setup
from transformer_cli.analysis.kv_cache import kv_cache_bytes, state_bytes
from transformer_cli.errors import ExitCode, SpecError
from transformer_cli.model.decoding import decode
from transformer_cli.spec.validate import spec_from_mapping
from transformer_cli.verify import check_causality, check_decoding, check_equivariance

HYBRID = Spec(
    N=2, H=4, G=2, m=8, d=32, r=40, V=41, mask="causal", scale="sqrt", norm="pre", norm_type="rmsnorm",
    feedforward="gated", activation="silu", ff_bias=False, positional="rope", attention="attention_mamba2",
    ssm_heads=4, ssm_head_dim=8, ssm_state=6, ssm_groups=2, conv_kernel=4, conv_bias=True,
)  # fmt: skip
SCALED = replace(
    HYBRID,
    parallel_scales=(1.3, 0.6, 0.8, 1.25, 0.7),
    ssm_scales=(0.35, 0.25, 0.7, 0.5, 1.4),
    ff_scales=(0.9, 0.5),
    ssm_norm="before_gate",
)
IDS = np.random.default_rng(0).integers(0, 41, size=(2, 11))


def by_hand(weights: dict, spec: Spec) -> dict:
    """The weights with every multiplier of `spec` multiplied in, as Falcon-H1's GGUF converter does."""
    s_a, s_k, s_o, s_m, s_y = spec.parallel_scales
    inner, GN, H = 32, 2 * 6, 4
    rows = np.repeat(spec.ssm_scales, (inner, inner, GN, GN, H))
    out = dict(weights)
    for i in range(spec.N):
        p = f"blocks.{i}."
        out[p + "attention.W_Q"] = weights[p + "attention.W_Q"] * s_a
        out[p + "attention.W_K"] = weights[p + "attention.W_K"] * s_a * s_k
        out[p + "attention.W_V"] = weights[p + "attention.W_V"] * s_a
        out[p + "attention.W_O"] = weights[p + "attention.W_O"] * s_o
        out[p + "mamba.W_in"] = weights[p + "mamba.W_in"] * s_m * rows[:, None]
        out[p + "mamba.W_out"] = weights[p + "mamba.W_out"] * s_y
        out[p + "ff.W1"] = weights[p + "ff.W1"] * spec.ff_scales[0]
        out[p + "ff.W2"] = weights[p + "ff.W2"] * spec.ff_scales[1]
    return out


def test_the_multipliers_are_the_weights_scaled_by_hand():
    weights = random_weights(SCALED, seed=1)
    plain = replace(SCALED, parallel_scales=None, ssm_scales=None, ff_scales=None)
    ours = Transformer(SCALED, weights)(IDS)
    assert np.abs(ours - Transformer(plain, by_hand(weights, SCALED))(IDS)).max() < 1e-12 * np.abs(ours).max()
    assert np.abs(ours - Transformer(plain, weights)(IDS)).max() > 1e-2 * np.abs(ours).max()


@pytest.mark.parametrize("norm", ["gated", "before_gate", "none"])
def test_decoding_step_by_step_is_the_parallel_pass(norm):
    spec = replace(SCALED, ssm_norm=norm)
    model = Transformer(spec, random_weights(spec, seed=3))
    ids = np.random.default_rng(4).integers(0, spec.V, size=(2, 70))  # (two of the scan's chunks)
    full = model(ids)
    assert np.abs(decode(model, ids, prompt=9) - full).max() < 1e-11 * np.abs(full).max()
    stale = decode(model, ids, prompt=9, stale_at=10)  # (step 10's keys, values and state never stored)
    assert np.abs(stale - full)[..., 11:].max() > 1e-3 * np.abs(full).max()


def test_the_state_spaces_norms_differ():
    weights = random_weights(SCALED, seed=5)
    runs = {norm: Transformer(replace(SCALED, ssm_norm=norm), weights)(IDS) for norm in ("gated", "before_gate")}
    assert np.abs(runs["gated"] - runs["before_gate"]).max() > 1e-3 * np.abs(runs["gated"]).max()
    assert "blocks.0.mamba.norm.gamma" not in random_weights(replace(SCALED, ssm_norm="none"))


def test_counts_name_every_tensor_and_the_closed_form_agrees():
    d, inner, K, H, GN = 32, 32, 4, 4, 12
    conv = inner + 2 * GN
    mamba = (inner + conv + H) * d + inner * d + K * conv + conv + 3 * H + inner  # W_in, W_out, kernel, its bias,
    # dt A D, the norm's gain
    attention = (4 * 8 + 2 * 2 * 8) * d + 4 * 8 * d  # W_Q, W_K, W_V, W_O
    expected = 2 * (mamba + attention + 3 * 40 * d + 2 * d) + 2 * 41 * d + d
    assert count_params(HYBRID).total == expected == count_params(HYBRID).closed_total
    assert count_params(replace(HYBRID, ssm_norm="none")).total == expected - 2 * inner


def test_the_cache_is_the_attentions_tokens_and_the_state_spaces_state():
    tokens = 2 * 2 * 8 * 8  # K and V of G = 2 heads of 8, float64
    state = (32 + 2 * 12) * 4 * 8 + 4 * 8 * 6 * 4  # the convolution's 4 columns (float64), S (float32)
    assert state_bytes(HYBRID, 3, "float64") == 3 * 2 * state
    assert kv_cache_bytes(HYBRID, 3, 10, "float64") == 3 * 2 * (10 * tokens + state)


def test_the_block_is_causal_and_decodes_as_it_runs():
    setup = lambda: make_setup(SCALED, random_weights(SCALED), 0, "float64", None, None)  # noqa: E731
    assert check_causality(setup()).exit_code == ExitCode.OK
    assert check_decoding(setup()).exit_code == ExitCode.OK  # (its controls caught, or not OK)
    assert check_equivariance(setup()).exit_code == ExitCode.VIOLATED
    assert check_equivariance(setup(), expect="theory").exit_code == ExitCode.OK


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"parallel_scales": [1.0, 2.0]}, "key 'parallel_scales': got [1.0, 2.0], expected a list of 5 numbers"),
        ({"ssm_scales": [1.0]}, "key 'ssm_scales': got [1.0], expected a list of 5 numbers"),
        ({"ff_scales": [1.0, 2.0, 3.0]}, "key 'ff_scales': got [1.0, 2.0, 3.0], expected a list of 2 numbers"),
        ({"ssm_heads": None}, "key 'ssm_heads': missing, expected a positive integer with a mamba2 block"),
    ],
)
def test_its_keys_are_checked_in_one_line(changed, said):
    keys = {k: v for k, v in (SCALED.to_dict() | changed).items() if v is not None}
    with pytest.raises(SpecError, match=re.escape(said)):
        spec_from_mapping(keys, "x.yaml")


def test_the_attention_maps_are_its_attentions_weights():
    """The block's attention beside its state space: its weights shown, each query's a causal distribution; a block
    of the state space alone has none to show."""
    from transformer_cli.components import attends

    weights = Transformer(SCALED, random_weights(SCALED, seed=6)).attention_weights(IDS)
    A = weights[0]  # (b, H, n_k, n_q)
    assert attends(SCALED, 0) and not attends(replace(SCALED, attention="mamba2"), 0)
    assert np.allclose(A.sum(axis=2), 1.0) and np.all(np.tril(A[0, 0], k=-1) == 0)  # (key k > query q: 0)
    assert np.tril(A[0, 0]).min() < 1.0 and np.triu(A[0, 0]).max() > 0.0  # (weights, not a mask)
