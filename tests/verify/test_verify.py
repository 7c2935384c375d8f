"""Each check holds where its property holds, fails where it must, and is inconclusive when it proves nothing."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights
from helpers_verify import PLAIN, setup_for

from transformer_cli import Spec, Transformer, make_setup
from transformer_cli import kernels as model_module
from transformer_cli.errors import ExitCode, TfmError
from transformer_cli.verify import (
    check_causality,
    check_counts,
    check_decoding,
    check_equivariance,
    check_scaling,
    check_softmax,
)

CAUSAL = Spec(N=2, H=2, m=4, d=8, r=16, scale="sqrt", mask="causal", positional="sinusoidal", norm="pre")


class PositionalModel(Transformer):
    """A plain model plus a position-dependent term: equivariance must break."""

    def forward(self, X, **kw):
        Y = super().forward(X, **kw)
        return Y + 1e-3 * np.arange(Y.shape[-1])


class ConstantModel(Transformer):
    """Ignores its input: equivariance holds vacuously, so the check must not call it a pass."""

    def forward(self, X, **kw):
        return np.ones_like(np.asarray(X, dtype=self.dtype))


# -- equivariance ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("norm", ["none", "pre", "post"])
def test_equivariance_holds_for_plain_specs(dtype, norm):
    spec = Spec(N=2, H=3, m=4, d=10, r=16, norm=norm, attention_bias=True, scale="sqrt")
    result = check_equivariance(setup_for(spec, dtype), trials=6)
    assert result.exit_code == ExitCode.OK, result.observation
    assert result.rows[0][0] == "identity" and result.rows[0][3] == 0.0  # the identity is exact
    assert result.summary["separation"] >= 1000
    assert {row[0] for row in result.rows} >= {"adjacent swap", "reversal", "cyclic shift", "derangement"}


def test_equivariance_catches_a_position_dependent_model():
    setup = setup_for(PLAIN)
    setup.model = PositionalModel(PLAIN, random_weights(PLAIN))
    result = check_equivariance(setup)
    assert result.observed is False and result.exit_code == ExitCode.VIOLATED


@pytest.mark.parametrize(
    "spec", [Spec(N=1, H=1, m=2, d=4, r=4, mask="causal"), Spec(N=1, H=1, m=2, d=4, r=4, positional="sinusoidal")]
)
def test_equivariance_breaks_with_a_mask_or_positions_and_expect_breaks_passes(spec):
    assert check_equivariance(setup_for(spec)).exit_code == ExitCode.VIOLATED
    assert check_equivariance(setup_for(spec), expect="breaks").exit_code == ExitCode.OK
    assert check_equivariance(setup_for(spec), expect="theory").exit_code == ExitCode.OK


def test_expect_breaks_on_an_equivariant_model_fails():
    assert check_equivariance(setup_for(PLAIN), expect="breaks").exit_code == ExitCode.VIOLATED


def test_equivariance_on_a_constant_model_is_inconclusive():
    setup = setup_for(PLAIN)
    setup.model = ConstantModel(PLAIN, random_weights(PLAIN))
    assert check_equivariance(setup).exit_code == ExitCode.INCONCLUSIVE


def test_equivariance_with_a_tolerance_too_loose_for_the_control_is_inconclusive():
    result = check_equivariance(setup_for(PLAIN, tol=0.5))
    assert result.exit_code == ExitCode.INCONCLUSIVE and "control" in result.reason


def test_equivariance_with_one_token_is_inconclusive():
    assert check_equivariance(setup_for(PLAIN, n=1)).exit_code == ExitCode.INCONCLUSIVE


def test_nan_output_is_a_failure_not_a_pass():
    setup = setup_for(PLAIN)

    class NaNModel(Transformer):
        def forward(self, X, **kw):
            Y = super().forward(X, **kw)
            Y[..., 1, 2] = np.nan
            return Y

    setup.model = NaNModel(PLAIN, random_weights(PLAIN))
    assert check_equivariance(setup).exit_code == ExitCode.VIOLATED


# -- causality -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_causality_holds_for_a_causal_spec_with_exactly_zero_leak(dtype):
    result = check_causality(setup_for(CAUSAL, dtype))
    assert result.exit_code == ExitCode.OK
    if dtype == "float64":
        assert result.summary["worst_leak"] == 0.0


def test_causality_reports_the_leak_of_a_spec_without_mask():
    result = check_causality(setup_for(PLAIN))
    assert result.exit_code == ExitCode.VIOLATED
    assert result.summary["leaking_positions"][0] == 0 and result.summary["worst_leak"] > 1e-3


def test_causality_catches_a_mask_that_lets_one_future_key_through(monkeypatch):
    real = model_module.causal_mask
    monkeypatch.setattr(model_module, "causal_mask", lambda q0, q1, n_k: real(q0 + 1, q1 + 1, n_k))
    result = check_causality(setup_for(CAUSAL))
    assert result.exit_code == ExitCode.VIOLATED
    assert result.summary["leaking_positions"] == list(range(CAUSAL and setup_for(CAUSAL).n - 1))


def test_causality_on_a_model_that_ignores_its_input_is_inconclusive():
    setup = setup_for(CAUSAL)
    setup.model = ConstantModel(CAUSAL, random_weights(CAUSAL))
    assert check_causality(setup).exit_code == ExitCode.INCONCLUSIVE


# -- decoding --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        CAUSAL,
        Spec(
            N=2, H=2, m=3, d=7, r=5, mask="causal", norm="post", positional="learned", max_len=20, attention_bias=True
        ),
    ],
)
def test_decoding_equals_the_parallel_pass_for_causal_specs(spec):
    result = check_decoding(setup_for(spec))
    assert result.exit_code == ExitCode.OK, result.observation
    assert all(v >= 1000 * result.summary["tolerance"] for v in result.summary["controls"].values())
    assert len(result.summary["controls"]) == 2  # stale cache and wrong position


def test_decoding_differs_without_a_causal_mask():
    assert check_decoding(setup_for(PLAIN)).exit_code == ExitCode.VIOLATED
    assert check_decoding(setup_for(PLAIN), expect="theory").exit_code == ExitCode.OK


def test_decoding_catches_a_decoder_with_a_stale_cache(monkeypatch):
    from transformer_cli.model import decoding
    from transformer_cli.verify import decoding as check_module

    monkeypatch.setattr(check_module, "decode", lambda model, X, **kw: decoding.decode(model, X, stale_at=3))
    assert check_decoding(setup_for(CAUSAL)).exit_code == ExitCode.VIOLATED


# -- scaling ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", ["none", "sqrt", 0.5])
def test_score_variance_matches_m_times_scale_squared(scale):
    result = check_scaling(setup_for(Spec(N=1, H=1, m=16, d=4, r=4, scale=scale)))
    assert result.exit_code == ExitCode.OK, result.observation


def test_scaling_catches_a_model_whose_attention_ignores_the_scale(monkeypatch):
    monkeypatch.setattr(model_module, "scaled_queries", lambda Q, scale: Q)  # the model's own attention path
    result = check_scaling(setup_for(Spec(N=2, H=2, m=16, d=8, r=4, scale="sqrt")))
    assert result.exit_code == ExitCode.VIOLATED
    assert all(row[-1] == "OUTSIDE band" for row in result.rows)  # the unit-variance row and every block's projections


def test_scaling_reads_the_blocks_own_projections_and_biases():
    spec = Spec(N=2, H=2, m=4, d=6, r=4, scale=0.5, attention_bias=True)
    weights = random_weights(spec, 3, scale=0.6)
    result = check_scaling(make_setup(spec, weights, 0, "float64", None, None), samples=60000)
    assert result.exit_code == ExitCode.OK, result.observation
    # the prediction for block 1, computed here from the weights: scale^2 (||A^T B||_F^2 + ||A^T c||^2 + ||B^T a||^2)
    A, B = weights["blocks.1.attention.W_Q"], weights["blocks.1.attention.W_K"]
    a, c = weights["blocks.1.attention.b_Q"], weights["blocks.1.attention.b_K"]
    per_head = [
        np.sum((A[h].T @ B[h]) ** 2) + np.sum((A[h].T @ c[h]) ** 2) + np.sum((B[h].T @ a[h]) ** 2) for h in range(2)
    ]
    assert result.rows[2][1] == pytest.approx(0.25 * np.mean(per_head), rel=1e-12)

    class BiasDropped(Transformer):  # projections that forget b_Q, b_K: the scores no longer fit the weights
        def qkv(self, i, X):
            return self.layers[i][0].qkv(replace(self.weights.block(i)[0], b_qkv=None), X)

    setup = make_setup(spec, weights, 0, "float64", None, None)
    setup.model = BiasDropped(spec, {k: (4 * v if ".b_" in k else v) for k, v in weights.items()})
    mismatch = check_scaling(setup, samples=60000)
    assert mismatch.exit_code == ExitCode.VIOLATED and mismatch.rows[0][-1] == "within band"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_scaling_with_m_1_and_no_scale_is_testable(dtype):
    assert check_scaling(setup_for(Spec(N=1, H=1, m=1, d=4, r=4), dtype)).exit_code == ExitCode.OK
    assert check_scaling(setup_for(Spec(N=1, H=1, m=1, d=4, r=4, scale="sqrt"), dtype)).exit_code == ExitCode.OK


def test_scaling_with_a_scale_too_close_to_1_names_the_scale_not_m():
    result = check_scaling(setup_for(Spec(N=1, H=2, m=8, d=8, r=4, scale=1.01)))
    assert result.exit_code == ExitCode.INCONCLUSIVE
    assert "scale 1.01" in result.reason and "m =" not in result.reason


def test_scaling_with_absurd_scales_measures_or_says_why_not():
    tiny = check_scaling(setup_for(Spec(N=1, H=2, m=8, d=8, r=4, scale=1e-300)))  # float64 holds 1e-300 scores
    assert tiny.exit_code == ExitCode.OK and all(row[3] > 0 for row in tiny.rows)  # a real band, not 0
    for scale, dtype in ((1e-300, "float32"), (1e300, "float32")):
        result = check_scaling(setup_for(Spec(N=1, H=2, m=8, d=8, r=4, scale=scale), dtype))
        assert result.exit_code == ExitCode.INCONCLUSIVE and "float32 can hold" in result.reason
    huge = check_scaling(setup_for(Spec(N=1, H=2, m=8, d=8, r=4, scale=1e300)))
    assert huge.exit_code == ExitCode.OK


def test_scaling_of_constant_scores_is_inconclusive():
    spec = Spec(N=1, H=2, m=4, d=6, r=4, scale="sqrt")
    weights = random_weights(spec) | {"blocks.0.attention.W_K": np.zeros((2, 4, 6))}
    result = check_scaling(make_setup(spec, weights, 0, "float64", None, None))
    assert result.exit_code != ExitCode.VIOLATED  # the unit-variance row still measures; the block says inert
    assert "inert" in result.rows[1][-1]


def test_scaling_refuses_sample_counts_it_would_not_finish():
    with pytest.raises(TfmError, match="--samples"):
        check_scaling(setup_for(PLAIN), samples=200_000_000)


# -- softmax and counts ----------------------------------------------------------------------------


def test_softmax_columns_hold_and_a_row_softmax_fails(monkeypatch):
    assert check_softmax(setup_for(CAUSAL)).exit_code == ExitCode.OK

    def over_queries(P, normalise=True):  # the softmax taken over the wrong axis (its sums: 1, already divided)
        P[...] = np.exp(P - P.max(axis=-2, keepdims=True))
        P /= P.sum(axis=-2, keepdims=True)
        return np.ones((*P.shape[:-1], 1), P.dtype)

    monkeypatch.setattr(model_module, "softmax_rows_", over_queries)
    assert check_softmax(setup_for(CAUSAL)).exit_code == ExitCode.VIOLATED


def test_counts_hold_and_a_missing_tensor_fails():
    weights = random_weights(CAUSAL)
    setup = setup_for(CAUSAL)
    assert check_counts(setup, weights).exit_code == ExitCode.OK
    del weights["final_norm.beta"]
    assert check_counts(setup, weights).exit_code == ExitCode.VIOLATED


@pytest.mark.parametrize(
    "extra, why",
    [
        ({"qk_norm": True, "norm": "pre", "norm_type": "rmsnorm"}, "queries and keys are normalised per head"),
        (
            {"attention": "latent", "positional": "rope", "kv_rank": 8, "rope_m": 4},
            "keys come from a normalised latent",
        ),
        ({"qkv_clip": 0.5}, "queries and keys are clamped to +/-0.5"),  # (DBRX's: its variance was reported broken)
    ],
)
def test_scaling_asks_each_blocks_attention_whether_its_scores_are_the_projections(extra, why):
    """A block whose attention normalises its queries or keys (the component says why) is not measured; the
    control: the same spec without it is measured block by block."""
    base = dict(N=2, H=2, m=16, d=8, r=4, scale="sqrt")
    skipped = check_scaling(setup_for(Spec(**base, **extra)), samples=2000)
    assert [row[-1] for row in skipped.rows[1:]] == [f"not measured: {why}"] * 2
    measured = check_scaling(setup_for(Spec(**base)), samples=2000)
    assert all(not str(row[-1]).startswith("not measured") for row in measured.rows)
