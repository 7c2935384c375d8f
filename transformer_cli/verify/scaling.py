"""Why scores are scaled: for unit-variance q, k in R^m, Var(k.q) = m, so 1/sqrt(m) brings it to 1."""

from __future__ import annotations

import math

import numpy as np

from ..layers import scores
from .common import CheckResult, Setup, resolve_expect

BAND_SE = 4  # observed variance must lie within this many standard errors of the prediction


def _score_variance(setup: Setup, scale: float, samples: int) -> float:
    """Empirical variance of scale * k.q over `samples` independent standard-normal pairs."""
    m = setup.spec.m
    dtype = setup.model.dtype
    Q = setup.gaussian(samples, 1, m, 1).astype(dtype)  # (b, H, m, n_q): one query per batch entry
    K = setup.gaussian(samples, 1, m, 1).astype(dtype)
    return float(scores(Q, K, scale).astype(np.float64).var())  # through the model's own score function


def check_scaling(setup: Setup, samples: int = 20000, expect: str = "holds") -> CheckResult:
    """Observed score variance, unscaled and with the spec's scale, against m * scale^2 within a stated band."""
    spec = setup.spec
    m, c = spec.m, spec.score_scale
    # Var(k.q) = m and E[(k.q)^4] = 3m^2 + 6m, so the sample variance has standard error sqrt((2m^2 + 6m) / S).
    se_unscaled = math.sqrt((2 * m * m + 6 * m) / samples)
    cases = [("unscaled (1)", 1.0), (f"this spec ({spec.scale})", c)] if c != 1.0 else [("unscaled (1)", 1.0)]
    columns = ["scores", "predicted variance", "observed", "band (+/-)", "result"]
    rows = []
    for label, scale in cases:
        predicted, band = m * scale**2, BAND_SE * se_unscaled * scale**2
        observed = _score_variance(setup, scale, samples)
        rows.append([label, predicted, observed, band, "PASS" if abs(observed - predicted) <= band else "FAIL"])
    alternative = 1.0 if c == 1.0 else float(m)  # what the other convention would give
    distinguishable = abs(alternative - m * c * c) > BAND_SE * se_unscaled * max(c * c, 1.0)
    observed = all(row[-1] == "PASS" for row in rows)
    reason = f"{samples} samples, band = {BAND_SE} standard errors"
    if observed and not distinguishable:
        observed, reason = None, f"m = {m}: scaled and unscaled variances are too close to tell apart"
    return CheckResult(
        name="scaling",
        title="score variance is m unscaled, m * scale^2 scaled",
        expected=resolve_expect(expect, True),
        predicted=True,
        observed=observed,
        observation=", ".join(f"{row[0]}: {row[2]:.3g} (predicted {row[1]:.3g} +/- {row[3]:.2g})" for row in rows),
        reason=reason,
        columns=columns,
        rows=rows,
        summary={"m": m, "scale": c, "samples": samples, "band_standard_errors": BAND_SE},
    )
