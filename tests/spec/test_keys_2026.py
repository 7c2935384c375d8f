"""Issue 44's spec keys. rope_query_beta and rope_query_len (Ministral 3's and Llama 4's attention scaling): each
query, after its rotation, times 1 + beta ln(1 + floor(t / L)); against transformers: hf_models' ministral3 variants;
here the scale itself, its keys' checks, and the theory verify states: a shift of positions leaves the model
unchanged while every position stays below L, and changes it once one reaches L; decoding step by step equals the
pass. shared_scale (Cohere2-MoE's average); attn_gate (AFMoE's gated attention); Llama 4's chunk and
nope_query_beta."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights

import transformer_cli as tfm
from transformer_cli import SpecError, spec_from_mapping
from transformer_cli.components.positional import Rotary
from transformer_cli.model.transformer import Transformer

BASE = dict(N=2, H=2, m=4, d=8, r=16, V=11, mask="causal", positional="rope", rope_theta=10.0)
IDS = np.random.default_rng(5).integers(0, 11, size=(1, 9))


def test_the_scale_is_one_before_L_and_grows_by_the_log_of_the_steps():
    spec = spec_from_mapping(BASE | {"rope_query_beta": 0.5, "rope_query_len": 3}, "s")
    expected = [1 + 0.5 * math.log(1 + t // 3) for t in range(2, 11)]
    assert np.allclose(Rotary(spec).query_scales(2, 9), expected, rtol=0, atol=1e-15)
    assert np.all(Rotary(spec).query_scales(0, 3) == 1.0)


@pytest.mark.parametrize(
    "keys, words",
    [
        ({"rope_query_beta": 0.1}, "'rope_query_len': missing"),
        ({"rope_query_len": 8}, "'rope_query_beta': missing"),
        ({"positional": "learned", "max_len": 16, "rope_query_beta": 0.1}, "no rope_query_beta unless positional"),
    ],
)
def test_a_half_given_scaling_is_one_line_naming_the_key(keys, words):
    base = {k: v for k, v in BASE.items() if k != "rope_theta"}
    with pytest.raises(SpecError, match=words):
        spec_from_mapping(base | keys, "s.yaml")


def test_the_scale_changes_the_model_only_from_position_L_on():
    plain = spec_from_mapping(BASE, "s")
    w = random_weights(plain, 2)
    ours = Transformer(plain, w).forward(IDS)
    scaled = Transformer(replace(plain, rope_query_beta=0.5, rope_query_len=4), w).forward(IDS)
    assert np.array_equal(scaled[..., :4], ours[..., :4])  # (positions 0..3: a scale of 1)
    assert not np.allclose(scaled[..., 4:], ours[..., 4:])  # (the control: from t = 4 on it counts)


@pytest.mark.parametrize("L, relative", [(64, "PASS"), (4, "PASS")])
def test_verify_predicts_the_shift_from_L_and_decoding_matches_the_pass(tmp_path, L, relative):
    """Positions below L: a shift changes nothing, predicted and observed; one reaching L: predicted to break and
    observed breaking (a PASS both ways: the verdict is theory against observation). Decoding equals the pass."""
    spec = spec_from_mapping(BASE | {"rope_query_beta": 0.5, "rope_query_len": L}, "s")
    model = tfm.Model(spec, "s", None, None)
    checks = {c.name: c for c in model.verify(n=8)}
    assert checks["relative"].verdict == relative
    assert checks["relative"].predicted == (L == 64)
    assert checks["decoding"].verdict == "PASS"


def test_a_shared_scale_needs_a_shared_expert():
    """shared_scale (Cohere2-MoE's average; against transformers: hf_models_experts' cohere2_moe) scales a shared
    expert's output: without one it is refused in one line."""
    experts = dict(E=4, k=2, feedforward="gated", activation="silu")
    spec_from_mapping(BASE | experts | {"shared_r": 8, "shared_scale": 0.5}, "s")  # (the control: accepted)
    with pytest.raises(SpecError, match="no shared_scale without a shared expert"):
        spec_from_mapping(BASE | experts | {"shared_scale": 0.5}, "s.yaml")


def test_the_attention_gate_scales_each_heads_output_by_the_sigmoid_of_its_projection():
    """attn_gate (AFMoE's; against transformers: hf_models_experts' afmoe): W_G = 0 halves each head's output
    (sigmoid 0 = 1/2), so the model equals the ungated one with W_O halved; decoding step by step equals the pass."""
    gated = spec_from_mapping(BASE | {"attn_gate": True}, "s")
    w = random_weights(gated, 3)
    plain = {k: v for k, v in w.items() if not k.endswith("W_G")}
    zero = {k: (np.zeros_like(v) if k.endswith("W_G") else v) for k, v in w.items()}
    halved = {k: (v / 2 if k.endswith("W_O") else v) for k, v in plain.items()}
    ours = Transformer(gated, zero).forward(IDS)
    assert np.allclose(ours, Transformer(replace(gated, attn_gate=False), halved).forward(IDS), rtol=1e-12, atol=1e-12)
    assert not np.allclose(Transformer(gated, w).forward(IDS), ours)  # (the control: the gate's weights count)
    checks = {c.name: c for c in tfm.Model(gated, "s", None, None).verify(n=8)}
    assert checks["decoding"].verdict == "PASS"


def test_a_chunked_pass_is_its_chunks_run_apart_and_decoding_matches_it():
    """chunk (Llama 4's chunked attention): every block sees only the keys of its query's chunk, so the whole model
    on a chunk's columns (at their positions) is the pass on them alone; a pass within one chunk is the causal
    model; decoding step by step (the cache keeps one chunk) equals the pass, and verify says so."""
    spec = spec_from_mapping(BASE | {"chunk": 4}, "s")
    w = random_weights(spec, 4)
    ids = np.random.default_rng(7).integers(0, 11, size=(1, 11))
    model = Transformer(spec, w)
    whole = model.forward(ids)
    for start in (0, 4, 8):
        alone = model.forward(ids[:, start : start + 4], start=start)
        assert np.allclose(whole[..., start : start + 4], alone, rtol=1e-12, atol=1e-12)
    causal = Transformer(replace(spec, chunk=None), w).forward(ids)
    assert np.allclose(whole[..., :4], causal[..., :4], rtol=1e-12, atol=1e-12)
    assert not np.allclose(whole[..., 4:], causal[..., 4:])  # (the control: past the first chunk it counts)
    checks = {c.name: c for c in tfm.Model(spec, "s", None, None).verify(n=9)}
    assert checks["decoding"].verdict == "PASS" and checks["relative"].verdict == "PASS"
    assert checks["relative"].predicted is False  # (chunks start at absolute positions)


def test_the_nope_blocks_temperature_scales_their_queries_from_position_L_minus_one():
    """nope_query_beta (Llama 4's attn_temperature_tuning): in the blocks without positions, the query at t times
    1 + beta ln(1 + floor((t + 1) / L)); the turning blocks untouched."""
    keys = BASE | {"positional_layers": ["rope", "nope"], "nope_query_beta": 0.5, "nope_query_len": 3}
    spec = spec_from_mapping(keys, "s")
    w = random_weights(spec, 5)
    plain = replace(spec, nope_query_beta=None, nope_query_len=None)
    ours, theirs = Transformer(spec, w).forward(IDS), Transformer(plain, w).forward(IDS)
    assert np.array_equal(ours[..., :2], theirs[..., :2])  # (t + 1 < 3: a scale of 1)
    assert not np.allclose(ours[..., 2:], theirs[..., 2:])
    checks = {c.name: c for c in tfm.Model(spec, "s", None, None).verify(n=8)}
    assert checks["decoding"].verdict == "PASS"
