"""Laguna's pieces: a softplus output gate, one a head (attn_gate_fn, attn_gate_per_head), the sliding blocks'
own rotated share (rope_local_fraction) and the router's soft cap (router_softcap). Against transformers:
hf_models_experts' laguna variants; here a gate a head against the same gate repeated over each head's entries, the
sliding blocks' share, the cap's effect on the choice, and the keys' checks."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import SpecError, spec_from_mapping
from transformer_cli.model.transformer import Transformer
from transformer_cli.spec.stacks import decoder

BASE = dict(N=2, H=2, m=4, d=8, r=16, V=11, mask="causal", positional="rope", rope_theta=10.0, norm="pre")
GATED = BASE | {"attn_gate": True, "attn_gate_fn": "softplus"}
IDS = np.random.default_rng(3).integers(0, 11, size=(1, 9))


@pytest.mark.parametrize("fn", ["softplus", "sigmoid"])
def test_a_gate_a_head_is_the_same_gate_over_each_of_its_entries(fn):
    per_head = spec_from_mapping(GATED | {"attn_gate_per_head": True, "attn_gate_fn": fn}, "s")
    per_entry = spec_from_mapping(GATED | {"attn_gate_fn": fn}, "s")
    w = random_weights(per_head, 2, scale=3.0)  # (gates past softplus's 20 too)
    repeated = w | {
        f"blocks.{i}.attention.W_G": np.repeat(w[f"blocks.{i}.attention.W_G"][:, None], 4, 1) for i in (0, 1)
    }
    ours = Transformer(per_head, w).forward(IDS)
    assert np.allclose(ours, Transformer(per_entry, repeated).forward(IDS), rtol=0, atol=1e-12)
    other = repeated | {"blocks.0.attention.W_G": repeated["blocks.0.attention.W_G"][::-1]}  # (heads swapped)
    assert not np.allclose(ours, Transformer(per_entry, other).forward(IDS), rtol=0, atol=1e-6)


def test_the_sliding_blocks_turn_their_own_share():
    spec = spec_from_mapping(
        BASE | {"rope_fraction": 0.5, "rope_local_fraction": 1.0, "window": 3, "attention_layers": ["full", "sliding"]},
        "s",
    )
    stack = decoder(spec)
    assert (stack.layer(0).rotated_dims, stack.layer(1).rotated_dims) == (2, 4)


def test_a_capped_router_chooses_by_the_capped_logits():
    experts = BASE | {"E": 4, "k": 2, "router_score": "sigmoid", "router_renorm": True}
    w = random_weights(spec_from_mapping(experts, "s"), 5, scale=2.0)
    plain = Transformer(spec_from_mapping(experts, "s"), w).forward(IDS)
    capped = Transformer(spec_from_mapping(experts | {"router_softcap": 0.1}, "s"), w).forward(IDS)
    assert not np.allclose(plain, capped, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "keys, words",
    [
        ({"attn_gate_fn": "softplus"}, "no attn_gate_fn without attn_gate"),
        ({"attn_gate_per_head": True}, "no attn_gate_per_head without attn_gate"),
        ({"router_softcap": 2.0}, "no router_softcap without experts"),
        ({"rope_local_fraction": 0.5}, "no rope_local_fraction without attention_layers"),
    ],
)
def test_a_laguna_key_without_its_part_is_one_line_naming_it(keys, words):
    with pytest.raises(SpecError, match=words):
        spec_from_mapping(BASE | keys, "s.yaml")
