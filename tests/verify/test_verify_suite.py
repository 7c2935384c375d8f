"""verify, continued: the suite against the theory on random specs, the tolerance from the measured noise, inert
parts, distinct permutations, the decoding controls, absurd scales, sliding windows, relative positions, experts."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_weights, variant_specs
from helpers_verify import PLAIN, setup_for
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_cli import DEFAULT_SPEC, Spec, Transformer, init_weights, make_setup, verify_all
from transformer_cli import kernels as model_module
from transformer_cli.errors import ExitCode, TfmError
from transformer_cli.verify import (
    check_causality,
    check_decoding,
    check_equivariance,
    default_tol,
    overall_exit,
)
from transformer_cli.verify.common import FLOOR_FACTOR
from transformer_cli.verify.equivariance import permutations

# -- the suite -------------------------------------------------------------------------------------


# d >= 4: with d = 2 a layer norm maps every column to +-gamma + beta, and the checks rightly say "inconclusive".
SUITE_SPECS = variant_specs(m_min=2, d_min=4, max_len=12, rope=False)


@settings(max_examples=25, deadline=None, derandomize=True)  # fixed examples: the scaling check is statistical
@given(SUITE_SPECS, st.integers(0, 2**16))
def test_verify_agrees_with_the_theory_on_random_specs(spec, seed):
    results = verify_all(spec, random_weights(spec, seed), seed=seed, n=8)
    by_name = {r.name: r for r in results}
    for name in ("counts", "softmax", "equivariance", "causality", "decoding", "scaling"):
        assert by_name[name].exit_code == ExitCode.OK, (name, by_name[name].observation, by_name[name].reason)
    assert by_name["equivariance"].predicted == (spec.mask == "none" and spec.positional == "none")


ROPE_SUITE_SPECS = variant_specs(m_min=2, d_min=4, rope=True).filter(lambda s: s.positional == "rope")


@settings(max_examples=8, deadline=None, derandomize=True)
@given(ROPE_SUITE_SPECS, st.integers(0, 2**16))
def test_verify_agrees_with_the_theory_on_random_rope_specs(spec, seed):
    results = {r.name: r for r in verify_all(spec, random_weights(spec, seed), seed=seed, n=8)}
    for name, result in results.items():
        assert result.exit_code == ExitCode.OK, (name, result.observation, result.reason)
    assert results["equivariance"].predicted is False and results["equivariance"].observed is False
    assert results["decoding"].predicted == (spec.mask == "causal")


def test_overall_exit_prefers_violations_then_inconclusive():
    results = verify_all(PLAIN, random_weights(PLAIN))
    assert overall_exit(results) == ExitCode.OK
    results[2].observed = None
    assert overall_exit(results) == ExitCode.INCONCLUSIVE
    results[3].observed = not results[3].observed
    assert overall_exit(results) == ExitCode.VIOLATED


def test_bad_check_options_are_user_errors():
    with pytest.raises(TfmError, match="--seq-len"):
        setup_for(PLAIN, n=0)
    with pytest.raises(TfmError, match="max_len"):
        setup_for(Spec(N=1, H=1, m=1, d=2, r=1, positional="learned", max_len=4), n=5)
    with pytest.raises(TfmError, match="--tol"):
        setup_for(PLAIN, tol=-1.0)


# -- tolerance from the measured rounding noise (issue: no false FAIL on sharp attention) ----------------


class OneColumnMoved(Transformer):
    """A genuine break of `size` relative: a term added to output column 0 only (a position-dependent model)."""

    size = 1e-4

    def forward(self, X, **kw):
        Y = super().forward(X, **kw)
        Y[..., 0] += self.size * np.max(np.abs(Y), axis=(-2, -1))[..., None]  # per sequence
        return Y


def _sharpened(spec, factor):
    weights = init_weights(spec, 0)
    for i in range(spec.N):
        for name in ("W_Q", "W_K"):
            weights[f"blocks.{i}.attention.{name}"] = weights[f"blocks.{i}.attention.{name}"] * factor
    return weights


def _largest_score(spec, weights, X):
    found = []
    model = Transformer(spec, weights)
    for i in range(spec.N):  # block 0's scores are exact here; deeper blocks see the earlier ones' output
        Q, K, _ = model.qkv(i, X[:, None, :])
        model.attend(Q, K, K, model_module.Attend(spec.score_scale, softcap=spec.attn_softcap, scores_out=found))
    return max(float(np.max(np.abs(s))) for s in found)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sharp_attention_never_gives_a_false_fail_and_a_small_break_is_still_caught(dtype):
    spec = DEFAULT_SPEC
    largest_tol = 0.0
    for factor in (1, 3, 7, 10, 15, 20, 30):
        weights = _sharpened(spec, factor)
        for n, seed in ((7, 0), (16, 1), (23, 0), (23, 2)):  # n = 7, 23: columns on BLAS edge kernels
            setup = make_setup(spec, weights, seed, dtype, n, None)
            honest = check_equivariance(setup)
            assert honest.exit_code == ExitCode.OK, (factor, n, honest.observation)
            broken = make_setup(spec, weights, seed, dtype, n, None)
            broken.model = OneColumnMoved(spec, weights, dtype)
            broken.reference = OneColumnMoved(spec, weights) if broken.reference is not None else None
            caught = check_equivariance(broken)
            X = np.random.default_rng([seed, 1]).standard_normal((spec.d, n))
            if _largest_score(spec, weights, X) < 1e3:  # float32 can still see a 1e-4 break through such scores
                assert caught.exit_code == ExitCode.VIOLATED, (factor, n, caught.observation)
                largest_tol = max(largest_tol, honest.summary["tolerance"])
    assert 0 < largest_tol < 1e-4


def test_the_tolerance_follows_the_measured_noise_and_says_how():
    setup = make_setup(DEFAULT_SPEC, _sharpened(DEFAULT_SPEC, 10), 1, "float32", 23, None)
    result = check_equivariance(setup)
    noise = result.summary["rounding_noise"]
    assert result.summary["tolerance"] == max(default_tol(np.float32, 23, 2), FLOOR_FACTOR * noise)
    assert 0 < noise < 1e-4 and "rounding noise" in result.summary["tolerance_rule"]
    given = check_equivariance(make_setup(DEFAULT_SPEC, _sharpened(DEFAULT_SPEC, 10), 1, "float32", 23, 1e-3))
    assert given.summary["tolerance"] == 1e-3 and given.summary["tolerance_rule"] == "--tol"


# -- inert parts: INCONCLUSIVE, never FAIL -----------------------------------------------------------------


def test_dead_attention_makes_every_order_check_inconclusive_not_fail():
    spec = Spec(N=2, H=2, m=4, d=8, r=16, scale="sqrt", mask="causal")
    weights = random_weights(spec)
    for i in range(spec.N):
        weights[f"blocks.{i}.attention.W_O"] = np.zeros((2, 8, 4))
    results = {r.name: r for r in verify_all(spec, weights)}
    for name in ("equivariance", "causality", "decoding"):
        assert results[name].exit_code == ExitCode.INCONCLUSIVE, (name, results[name].reason)
    assert "inert" in results["equivariance"].reason and "inert" in results["causality"].reason
    assert overall_exit(list(results.values())) == ExitCode.INCONCLUSIVE


# -- distinct permutations ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "distinct", "short"), [(2, 1, True), (3, 5, True), (4, 11, False)])
def test_permutations_are_distinct_and_counted_honestly(n, distinct, short):
    result = check_equivariance(setup_for(PLAIN, n=n), trials=8)
    listed = [tuple(p) for _, p in result.to_dict()["permutations"]]
    assert len(set(listed)) == len(listed) == distinct + 1  # the identity and the distinct others
    assert result.summary["permutations"] == distinct
    assert f"over {distinct} permutations" in result.observation
    assert ("fewer than" in result.observation) == short


def test_permutations_for_large_n_are_derangements_without_repeats():
    perms = permutations(np.random.default_rng(0), 64, 200)
    assert len({tuple(p) for _, p in perms}) == len(perms) == 204
    assert all(not np.any(p == np.arange(64)) for kind, p in perms if kind == "derangement")


def test_too_many_trials_are_refused_before_anything_is_built():
    with pytest.raises(TfmError, match="--trials"):
        check_equivariance(setup_for(PLAIN), trials=1_000_000_000)


# -- the decoding controls are never dropped silently -----------------------------------------------------


def test_wrong_position_control_runs_when_n_equals_max_len():
    spec = Spec(N=1, H=2, m=3, d=6, r=5, mask="causal", positional="learned", max_len=8)
    result = check_decoding(setup_for(spec, n=8))
    assert "wrong position (t + 1)" in result.summary["controls"]
    assert result.exit_code == ExitCode.OK


def test_a_control_that_cannot_run_is_listed_with_its_reason():
    spec = Spec(N=1, H=2, m=3, d=6, r=5, mask="causal", positional="learned", max_len=1)
    result = check_decoding(setup_for(spec, n=1))
    data = result.to_dict()
    assert set(data["summary"]["controls_not_run"]) == {"stale cache (step 0 not stored)", "wrong position (t + 1)"}
    assert any(str(row[-1]).startswith("not run") for row in result.rows)
    assert result.exit_code == ExitCode.INCONCLUSIVE


# -- absurd scales ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_verify_survives_absurd_scales(scale):
    spec = Spec(N=1, H=2, m=4, d=8, r=4, scale=scale)
    results = verify_all(spec, random_weights(spec))
    assert {r.name for r in results} >= {"equivariance", "scaling"}  # no OverflowError on the way


# -- sliding windows: the receptive field, both ways -----------------------------------------------------------

WINDOWED = Spec(N=2, H=2, m=4, d=8, r=12, scale="sqrt", mask="causal", window=3, norm="pre")


def test_a_window_bounds_the_receptive_field_both_ways():
    result = check_causality(setup_for(WINDOWED, n=12))
    assert result.exit_code == ExitCode.OK, result.reason
    assert result.summary["receptive_field"] == 4  # N (w - 1)
    influence = {row[0]: row[3] for row in result.rows}
    assert min(influence[t] for t in range(5)) > 1e-3 and max(influence[t] for t in range(5, 12)) == 0.0


def test_a_window_one_key_too_wide_is_caught(monkeypatch):
    real = model_module.window_mask
    monkeypatch.setattr(
        model_module, "window_mask", lambda q0, q1, k0, k1, w, causal=True: real(q0, q1, k0, k1, w + 1, causal)
    )
    result = check_causality(setup_for(WINDOWED, n=12))
    assert result.exit_code == ExitCode.VIOLATED and result.summary["leaking_positions"][0] == 5


def test_decoding_with_a_window_keeps_at_most_w_keys(monkeypatch):
    widths = []
    real = Transformer.attend

    def attend(self, Q, K, V, how, **kw):
        widths.append(K.shape[-1])
        return real(self, Q, K, V, how, **kw)

    monkeypatch.setattr(Transformer, "attend", attend)
    result = check_decoding(setup_for(WINDOWED, n=10))
    assert result.exit_code == ExitCode.OK and max(widths[-10 * WINDOWED.N :]) == 3  # the last decode: w keys


def test_a_window_of_one_leaves_the_model_equivariant():
    spec = Spec(N=1, H=2, m=3, d=6, r=5, mask="causal", window=1)
    result = check_equivariance(setup_for(spec))
    assert result.predicted is True and result.exit_code == ExitCode.OK


# -- relative positions ---------------------------------------------------------------------------------------

from transformer_cli.verify import check_relative  # noqa: E402


@pytest.mark.parametrize(
    ("positional", "holds"), [("none", True), ("rope", True), ("sinusoidal", False), ("learned", False)]
)
def test_shifting_every_position_changes_nothing_exactly_when_positions_are_relative(positional, holds):
    spec = Spec(
        N=2,
        H=2,
        m=4,
        d=8,
        r=12,
        scale="sqrt",
        mask="causal",
        positional=positional,
        norm="pre",
        max_len=64 if positional == "learned" else None,
    )
    result = check_relative(setup_for(spec, n=8))
    assert result.predicted is holds and result.observed is holds and result.exit_code == ExitCode(0 if holds else 1)


@pytest.mark.parametrize(
    ("positional", "why"),
    [
        ("none", "nothing sees a position"),
        ("rope", "rotary scores depend on t - s only"),
        ("alibi", "the ALiBi bias depends on s - t only"),
    ],
)
def test_the_reason_a_shift_changes_nothing_names_the_specs_own_positions(positional, why):
    """Issue 40, item 23: the default spec (no positions) was told 'rotary scores depend on t - s only'."""
    spec = Spec(N=1, H=2, m=4, d=8, r=12, scale="sqrt", mask="causal", positional=positional, norm="pre")
    result = check_relative(setup_for(spec, n=8))
    assert result.predicted is True and why in result.reason, result.reason
    assert ("rotary" in result.reason) is (positional == "rope")


def test_rotary_positions_that_are_not_relative_are_caught(monkeypatch):
    real = Transformer.rotate
    monkeypatch.setattr(
        Transformer, "rotate", lambda self, Q, K, start, key_start=None, **kw: real(self, Q, K, start, 0, **kw)
    )
    spec = Spec(N=1, H=2, m=4, d=8, r=12, mask="causal", positional="rope")
    assert check_relative(setup_for(spec, n=8)).exit_code == ExitCode.VIOLATED  # keys always at 0: absolute


LENGTH_ROPES = {
    "dynamic": dict(rope_scaling="dynamic", rope_factor=4.0, rope_original_max_len=10),
    "longrope": dict(
        rope_scaling="longrope", rope_original_max_len=10, rope_short_factor=(1.0, 1.5), rope_long_factor=(2.0, 7.0)
    ),
}


@pytest.mark.parametrize("kind", LENGTH_ROPES)
def test_ropes_that_choose_by_length_break_decoding_and_shifts_exactly_past_their_context(kind):
    """Theory: a pass within L = 10 is plain rope (decoding = parallel, shifts that stay within L change nothing);
    past L, step t of decoding (a pass t + 1 long) turns its key by other angles than the whole pass does, and a
    shift across L changes the output; two passes both past L agree for longrope (one long set), not for dynamic."""
    spec = Spec(
        N=2, H=2, m=4, d=8, r=12, scale="sqrt", mask="causal", positional="rope", norm="pre", **LENGTH_ROPES[kind]
    )
    within, past = setup_for(spec, n=4), setup_for(spec, n=12)
    for check, setup, holds in (
        (check_decoding, within, True),
        (check_decoding, past, False),
        (check_relative, past, kind == "longrope"),
    ):
        result = check(setup)
        assert result.predicted is holds and result.observed is holds, (check, result.reason)
        assert result.exit_code == ExitCode(0 if holds else 1)
    shifted = check_relative(setup_for(spec, n=8))  # shifts of 1, 5, 31 from 8: across L = 10
    assert shifted.predicted is False and shifted.observed is False and "past L = 10" in shifted.reason


def test_learned_positions_with_no_room_to_shift_are_inconclusive():
    spec = Spec(N=1, H=2, m=4, d=8, r=12, positional="learned", max_len=8)
    result = check_relative(setup_for(spec, n=8))
    assert result.exit_code == ExitCode.INCONCLUSIVE and "no room" in result.reason


# -- experts: routed = dense with zeros off the top k -----------------------------------------------------------

MOE = Spec(N=2, H=2, m=4, d=8, r=6, E=4, k=2, mask="causal", norm="pre", feedforward="gated", activation="silu")


def test_routed_experts_agree_with_the_dense_sum_in_the_suite():
    results = {r.name: r for r in verify_all(MOE, random_weights(MOE))}
    assert results["experts"].exit_code == ExitCode.OK and results["experts"].rows[0][3] == "2"
    assert "experts" not in {r.name for r in verify_all(PLAIN, random_weights(PLAIN))}  # only where there are experts


def test_a_mixture_that_ignores_the_top_k_is_caught(monkeypatch):
    from transformer_cli.components.experts import Experts
    from transformer_cli.verify import check_experts

    real = Experts.route

    def every_expert(self, router, X):  # all E experts, weighted by the softmax over all scores
        chosen, _ = real(self, router, X)
        scores = router.logits(X)
        everything = np.argsort(-scores, axis=0, kind="stable")
        weights = np.take_along_axis(np.exp(scores - scores.max(axis=0)), everything, axis=0)
        return everything, weights / weights.sum(axis=0)

    monkeypatch.setattr(Experts, "route", every_expert)
    assert check_experts(setup_for(MOE)).exit_code == ExitCode.VIOLATED


def test_a_router_on_the_experts_input_is_checked_there(monkeypatch):
    """Llama 4's router weights each chosen expert's input (router_on_input): the dense sum weights the inputs too,
    so the check holds (it failed while the sum weighted the outputs); the control: experts run as if the weight
    were on their output are caught."""
    import dataclasses

    from transformer_cli.components.experts import Experts
    from transformer_cli.verify import check_experts

    spec = Spec(**{**MOE.to_dict(), "router_score": "sigmoid", "router_renorm": False, "router_on_input": True})
    assert check_experts(setup_for(spec)).exit_code == ExitCode.OK
    real = Experts.routed

    def on_output(self, w, U, stream=None):  # the weights moved to the experts' output
        kept, self.spec = self.spec, dataclasses.replace(self.spec, router_on_input=False)
        try:
            return real(self, w, U, stream)
        finally:
            self.spec = kept

    monkeypatch.setattr(Experts, "routed", on_output)
    assert check_experts(setup_for(spec)).exit_code == ExitCode.VIOLATED


def test_an_output_bias_after_the_experts_is_in_the_dense_sum():
    """JetMoE's bias on the experts' mixed output (expert_out_bias): left out of the dense sum and the routed pass
    alike, the check holds (it reported JetMoE broken while only one side had it)."""
    from transformer_cli.verify import check_experts

    spec = Spec(**{**MOE.to_dict(), "expert_out_bias": True})
    assert check_experts(setup_for(spec)).exit_code == ExitCode.OK
