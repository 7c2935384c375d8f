"""The three multipliers Granite and Cohere add (embed_scale as a number, residual_scale, logit_scale): tfm's pass
against the plain reference model (tests/reference_model.py), each with its control, their flops, and their keys'
rules on bad input."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights, reference_error, rel, variant_specs
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_model import reference_forward

from transformer_cli import Spec
from transformer_cli.analysis.flops import forward_flops
from transformer_cli.errors import SpecError
from transformer_cli.model.transformer import Transformer
from transformer_cli.spec.validate import spec_from_mapping

GRANITE_LIKE = Spec(
    N=2,
    H=4,
    G=2,
    m=4,
    d=16,
    r=12,
    V=13,
    scale=0.3,
    mask="causal",
    positional="rope",
    norm="pre",
    norm_type="rmsnorm",
    feedforward="gated",
    activation="silu",
    ff_bias=False,
    embed_scale=12.0,
    residual_scale=0.22,
    logit_scale=0.125,
)


@settings(max_examples=30, deadline=None)
@given(variant_specs(), st.floats(0.05, 3.0), st.integers(1, 2), st.integers(1, 9), st.integers(0, 99))
def test_a_residual_scale_runs_as_the_plain_reference_in_every_layout(spec, s, b, n, seed):
    assert reference_error(replace(spec, residual_scale=s), b, n, seed) < 1e-12


@pytest.mark.parametrize("key", ["embed_scale", "residual_scale", "logit_scale"])
def test_each_multiplier_is_the_references_and_matters(key):
    """Token ids in, logits out, against the reference; the control: the same weights without the multiplier."""
    w = random_weights(GRANITE_LIKE)
    ids = np.random.default_rng(0).integers(0, GRANITE_LIKE.V, size=(2, 9))
    ours = Transformer(GRANITE_LIKE, w)(ids)
    assert rel(ours, reference_forward(GRANITE_LIKE, w, ids)) < 1e-12
    plain = replace(GRANITE_LIKE, **{key: "none" if key == "embed_scale" else 1.0})
    assert rel(Transformer(plain, w)(ids), ours) > 1e-3


def test_the_multipliers_count_their_flops():
    spec, plain = GRANITE_LIKE, replace(GRANITE_LIKE, embed_scale="none", residual_scale=1.0, logit_scale=1.0)
    b, n = 2, 5
    extra = sum(forward_flops(spec, b, n).values()) - sum(forward_flops(plain, b, n).values())
    assert extra == (spec.d + 2 * spec.N * spec.d + spec.V) * b * n  # one multiply per entry scaled


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"embed_scale": -2.0, "V": 9}, "key 'embed_scale': got -2.0, expected none, sqrt or a positive number"),
        ({"embed_scale": 2.0}, "no embed_scale unless the spec has a vocabulary V"),
        ({"logit_scale": 0.5}, "no logit_scale unless the spec has a vocabulary V"),
        ({"logit_scale": 0.5, "V": 9, "head": False}, "a head for tie_embeddings, head_bias, logit_scale"),
        ({"residual_scale": 0}, "key 'residual_scale': got 0, expected a positive number"),
    ],
)
def test_bad_multipliers_are_one_line_naming_the_key(data, says):
    with pytest.raises(SpecError) as error:
        spec_from_mapping({"N": 1, "H": 2, "m": 2, "d": 4, "r": 4} | data, "s.yaml")
    assert says in str(error.value) and "\n" not in str(error.value)


OPT_350M_LIKE = Spec(
    N=2,
    H=4,
    m=4,
    d=16,
    r=12,
    V=13,
    embed_dim=6,
    tie_embeddings=True,
    scale="sqrt",
    mask="causal",
    positional="learned",
    max_len=16,
    position_offset=2,
    norm="post",
    attention_bias=True,
)


@pytest.mark.parametrize(
    "spec", [OPT_350M_LIKE, replace(OPT_350M_LIKE, norm="pre", tie_embeddings=False)], ids=["post-tied", "pre-untied"]
)
def test_a_narrower_embedding_is_projected_in_and_out_as_the_reference(spec):
    """OPT-350m's project_in after the lookup and project_out before the head; counted as V d_e + 2 d d_e (+ V d_e
    untied); the control: the same weights without the projections cannot even be shaped into the model."""
    from transformer_cli import count_params

    w = random_weights(spec)
    ids = np.random.default_rng(0).integers(0, spec.V, size=(2, 9))
    ours = Transformer(spec, w)(ids)
    assert ours.shape == (2, spec.V, 9) and rel(ours, reference_forward(spec, w, ids)) < 1e-12
    counted = count_params(spec)
    outside = spec.V * 6 * (1 if spec.tie_embeddings else 2) + 2 * spec.d * 6
    assert counted.total == counted.closed_total and w["embedding.E"].shape == (6, spec.V)
    assert counted.total - spec.N * counted.per_block - outside == sum(
        np.size(v) for k, v in w.items() if not k.startswith(("blocks.", "embedding.", "head."))
    )
    swapped = dict(w, **{"head.W_out": w["head.W_out"][::-1]})  # the control: project_out's rows matter
    assert rel(Transformer(spec, swapped)(ids), ours) > 1e-3
