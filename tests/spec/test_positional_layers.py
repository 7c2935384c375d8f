"""positional_layers (issue 44: SmolLM3's and Llama 4's NoPE layers): which blocks of a rotary stack turn their
queries and keys and which attend without positions. Against transformers: hf_models' smollm3 variants; here the
spec's checks, and the layers' kinds against models that hold one kind throughout."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, SpecError, spec_from_mapping
from transformer_cli.model.transformer import Transformer
from transformer_cli.spec.stacks import decoder

BASE = dict(N=3, H=2, m=4, d=8, r=16, V=11, mask="causal", positional="rope", rope_theta=10.0)
IDS = np.random.default_rng(3).integers(0, 11, size=(2, 7))


def test_the_kinds_are_a_pattern_and_a_nope_block_has_no_positions():
    spec = spec_from_mapping(BASE | {"positional_layers": ["rope", "nope", "rope"]}, "s")
    assert spec.positional_layers == ("rope", "nope")  # (the shortest pattern that repeats to the three)
    assert [decoder(spec).layer(i).positional for i in range(3)] == ["rope", "none", "rope"]
    assert spec_from_mapping(BASE | {"positional_layers": ["rope"] * 3}, "s").positional_layers is None  # (all rope)


@pytest.mark.parametrize(
    "keys, words",
    [
        ({"positional": "sinusoidal"}, "no positional_layers without positional rope"),
        ({"positional_layers": ["rope", "nope", "rope", "nope"]}, "at most N = 3 kinds"),
        ({"positional_layers": ["rope", "alibi"]}, "positional_layers"),
    ],
)
def test_a_bad_positional_layers_is_one_line_naming_the_key(keys, words):
    with pytest.raises(SpecError, match=words):
        spec_from_mapping(BASE | {"positional_layers": ["nope"]} | keys, "s.yaml")


def test_every_block_nope_is_the_model_without_positions_and_one_nope_block_differs():
    rope = spec_from_mapping(BASE, "s")
    w = random_weights(rope, 4)
    none = Transformer(replace(rope, positional="none"), w).forward(IDS)
    all_nope = Transformer(replace(rope, positional_layers=("nope",)), w).forward(IDS)
    assert np.array_equal(all_nope, none)
    one = Transformer(replace(rope, positional_layers=("rope", "nope", "rope")), w).forward(IDS)
    full = Transformer(rope, w).forward(IDS)
    assert not np.allclose(one, full) and not np.allclose(one, none)  # (the control: each kind counts)
    assert np.allclose(one[:, :, 0], full[:, :, 0], rtol=1e-12, atol=1e-14)  # the first token: no offset to turn by


def test_a_spec_keeps_its_kinds_through_its_mapping():
    spec = spec_from_mapping(BASE | {"positional_layers": ["nope", "rope", "rope"]}, "s")
    assert Spec(**{k: getattr(spec, k) for k in spec.__dataclass_fields__}) == spec
    assert spec_from_mapping(spec.to_dict(), "again") == spec
