"""Seed 001: sequential decoding with a key/value cache reproduces the parallel pass of a causal model."""

from __future__ import annotations

import numpy as np

from ..decoding import decode
from .common import CONTROL_FACTOR, CheckResult, Setup, rel_err, resolve_expect, within


def _controls(setup: Setup, X: np.ndarray, parallel: np.ndarray) -> dict[str, float]:
    """Errors of deliberately broken decoders, which the check must be able to see."""
    model, n, spec = setup.model, setup.n, setup.spec
    controls = {}
    if n >= 2:
        controls["stale cache (step 0 not stored)"] = rel_err(decode(model, X, stale_at=0), parallel, parallel)
    if spec.positional != "none" and (spec.positional != "learned" or n < spec.max_len):
        controls["wrong position (t + 1)"] = rel_err(decode(model, X, position_offset=1), parallel, parallel)
    return controls


def check_decoding(setup: Setup, expect: str = "holds") -> CheckResult:
    """Decode column by column and compare each step with the parallel forward pass."""
    spec, n, tol = setup.spec, setup.n, setup.tol
    predicted = spec.mask == "causal"
    setup.require(2)
    X = setup.gaussian(2, spec.d, n)  # a batch of two sequences
    parallel = setup.model(X)
    sequential = decode(setup.model, X)
    columns = ["step", "rel error", "tol", "result"]
    rows = []
    for t in range(n):
        err = rel_err(sequential[..., t], parallel[..., t], parallel)
        rows.append([t, err, tol, "PASS" if within(err, tol) else "FAIL"])
    errors = [row[1] for row in rows]
    worst = float("nan") if any(np.isnan(errors)) else max(errors)
    controls = _controls(setup, X, parallel)
    for name, err in controls.items():
        rows.append(
            [f"control: {name}", err, CONTROL_FACTOR * tol, "caught" if err >= CONTROL_FACTOR * tol else "MISSED"]
        )
    observed, reason = all(row[-1] == "PASS" for row in rows[:n]), ""
    if observed and any(row[-1] == "MISSED" for row in rows[n:]):
        observed, reason = None, "a broken decoder (control) was not told apart from the parallel pass"
    elif observed and not controls:
        observed, reason = None, "n = 1: no later step can reveal a cache fault"
    elif predicted:
        reason = "causal: a column never sees later ones, so the cache of earlier keys is all it needs"
    else:
        reason = "no causal mask: the parallel pass lets column t see later columns, decoding cannot"
    return CheckResult(
        name="decoding",
        title="KV-cache decoding = parallel forward pass",
        expected=resolve_expect(expect, predicted),
        predicted=predicted,
        observed=observed,
        observation=f"worst step error {worst:.3g} vs tol {tol:.3g}; controls: "
        + (", ".join(f"{k} {v:.3g}" for k, v in controls.items()) or "none"),
        reason=reason,
        columns=columns,
        rows=rows,
        summary={"n": n, "worst_error": worst, "tolerance": tol, "controls": controls},
    )
