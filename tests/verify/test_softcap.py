"""The soft-capping check (Gemma 2): capped scores keep every query's log weights within 2c of each other and
capped logits within c', however far the weights push them; a cap that does not cap is caught, and caps too wide
for the control to cross are inconclusive."""

from __future__ import annotations

import pytest
from helpers_verify import setup_for

from transformer_cli import Spec, kernels
from transformer_cli.errors import ExitCode
from transformer_cli.verify import check_softcap

CAPPED = Spec(
    N=2,
    H=2,
    m=4,
    d=8,
    r=12,
    V=11,
    mask="causal",
    positional="rope",
    norm="sandwich",
    norm_type="rmsnorm",
    attn_softcap=2.0,
    logit_softcap=3.0,
)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_capped_scores_and_logits_stay_within_their_caps(dtype):
    result = check_softcap(setup_for(CAPPED, dtype=dtype, n=8))
    assert result.exit_code == ExitCode.OK and result.observed is True, result.observation
    (_, weight_bound, weights, weights_control, _), (_, logit_bound, logits, logits_control, _) = result.rows
    assert weight_bound == 4.0 and weights <= 4.0 * (1 + 1e-5) < weights_control
    assert logit_bound == 3.0 and logits <= 3.0 * (1 + 1e-5) < logits_control


def test_a_cap_that_does_not_cap_is_caught(monkeypatch):
    monkeypatch.setattr(kernels, "soft_cap_", lambda X, cap: X)
    result = check_softcap(setup_for(CAPPED, n=8))
    assert result.exit_code == ExitCode.VIOLATED and [row[-1] for row in result.rows] == ["breaks", "breaks"]


def test_caps_the_control_cannot_cross_are_inconclusive():
    wide = Spec(**{**CAPPED.to_dict(), "attn_softcap": 1e9, "logit_softcap": 1e9})
    result = check_softcap(setup_for(wide, n=8))
    assert result.exit_code == ExitCode.INCONCLUSIVE and "control cannot tell" in result.reason
