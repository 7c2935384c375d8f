"""ALiBi (BLOOM): head h's score of query t and key s gets slope_h (s - t), the slopes the paper's geometric
sequence; against the plain reference model (tests/reference_model.py) on random specs, with the controls that
the bias matters and that the theory's predictions (shift invariance, decoding) hold for it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights, reference_error, rel, variant_specs
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_cli import Spec, SpecError, kernels, make_setup, spec_from_mapping
from transformer_cli.errors import ExitCode
from transformer_cli.model.transformer import Transformer
from transformer_cli.verify import check_decoding, check_equivariance, check_relative

ALIBI = Spec(N=2, H=6, m=4, d=12, r=16, V=13, scale="sqrt", mask="causal", positional="alibi", norm="pre")


def test_the_slopes_are_the_papers_for_eight_heads_and_blooms_between_powers_of_two():
    assert np.allclose(kernels.alibi_slopes(8), [2.0**-k for k in range(1, 9)], rtol=0, atol=0)
    assert np.allclose(kernels.alibi_slopes(6), [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3], atol=0)


@settings(max_examples=30, deadline=None)
@given(
    variant_specs(rope=False).map(lambda s: replace(s, positional="alibi", max_len=None, position_offset=None)),
    st.integers(1, 2),
    st.integers(1, 9),
    st.integers(0, 99),
)
def test_alibi_runs_as_the_plain_reference(spec, b, n, seed):
    assert reference_error(spec, b, n, seed) < 1e-12


def test_the_bias_matters_and_the_theory_holds():
    w = random_weights(ALIBI)
    ids = np.random.default_rng(0).integers(0, ALIBI.V, size=(2, 9))
    assert rel(Transformer(replace(ALIBI, positional="none"), w)(ids), Transformer(ALIBI, w)(ids)) > 1e-3
    for check, holds in ((check_relative, True), (check_decoding, True), (check_equivariance, False)):
        result = check(make_setup(ALIBI, w, 0, "float64", 8, None), expect="theory")
        assert result.predicted is holds and result.observed is holds and result.exit_code == ExitCode.OK, check


def test_alibi_is_one_line_in_an_encoder_decoder():
    with pytest.raises(SpecError, match="key 'positional': got 'alibi', expected none, sinusoidal, learned, rope"):
        spec_from_mapping(
            {"N": 1, "H": 1, "m": 2, "d": 2, "r": 2, "N_enc": 1, "mask": "causal", "positional": "alibi"}, "s.yaml"
        )
