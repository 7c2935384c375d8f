"""Causal masking: output column t depends on input columns <= t only, and does depend on them.

With a sliding window w over N blocks the receptive field is bounded too: column t depends on columns
t - N(w - 1) .. t, so column 0 must move columns 0 .. N(w - 1) and must leave every later column unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..analysis.memory import MemoryEstimate
from ..components import is_causal, reach
from .common import CONTROL_FACTOR, CheckResult, Setup, rel_err, resolve_expect, within


def causality_need(setup: Setup) -> MemoryEstimate:
    """One pass over n + 1 sequences of n (each changed after a column), the inputs drawn as a list and stacked."""
    batch = setup.n + 1
    return setup.need(batch, held=2 * batch * setup.column_bytes)


def check_causality(setup: Setup, expect: str = "holds") -> CheckResult:
    """Two-sided: changing columns after t leaves columns <= t unchanged; changing column 0 moves every column."""
    spec, n = setup.spec, setup.n
    predicted, field = is_causal(spec), reach(spec)
    setup.afford("causality", causality_need(setup))
    X = setup.gaussian(spec.input_width, n)
    future = [X.copy() for _ in range(n - 1)]  # input t: columns after t replaced by fresh noise
    for t, Xt in enumerate(future):
        Xt[:, t + 1 :] = setup.gaussian(spec.input_width, n - t - 1)
    past = X.copy()
    past[:, 0] = setup.gaussian(spec.input_width)  # changes the earliest column, seen by every query under either mask
    inputs = np.stack([X, past, *future])
    Y = setup.model(inputs)  # (n + 1, d, n), one pass
    TX = Y[0]
    tol, how = setup.tolerance(inputs, Y)
    columns = ["t", "leak from columns > t", "tol", "influence of column 0", "leak"]
    rows: list[list[Any]] = []
    beyond: list[int] = []  # beyond: columns past the receptive field, where column 0 must have no influence
    for t in range(n):
        leak = rel_err(Y[2 + t][:, : t + 1], TX[:, : t + 1], TX) if t < n - 1 else 0.0
        influence = rel_err(Y[1][:, t], TX[:, t], TX)
        if field is not None and t > field:
            beyond.append(t)
            leak = max(leak, influence)  # column 0 is outside t's window: any influence is a leak
        rows.append([t, leak, tol, influence, "none" if within(leak, tol) else "LEAKS"])
    leaks = [row[1] for row in rows]
    worst = float("nan") if any(np.isnan(leaks)) else max(leaks)
    weakest = min(row[3] for row in rows if row[0] not in beyond)
    observed: bool | None = all(row[-1] == "none" for row in rows)
    reason = ""
    if observed and n < 2:
        observed, reason = None, "n = 1: there is no later column to leak from"
    elif observed and not rows[0][3] >= CONTROL_FACTOR * tol:
        observed, reason = None, f"column 0 moved its own output by only {rows[0][3]:.3g}: the model ignores its input"
    elif observed and not weakest >= CONTROL_FACTOR * tol:
        observed = None
        reason = (
            f"attention is inert: changing column 0 moved a later column by only {weakest:.3g}, so no "
            "mask could be seen at work"
        )
    elif predicted and field is not None:
        reason = (
            f"causal mask with a sliding window: column t sees columns t - {field} .. t (N (w - 1) = {field}); "
            f"column 0 must not move columns {field + 1} and later"
        )
    elif predicted:
        reason = "causal mask: scores of later keys are -inf, so their weights are exact zeros"
    else:
        reason = "no causal mask: every query attends to every key"
    leak_at = [row[0] for row in rows if row[-1] == "LEAKS"]
    seen = f"worst leak {worst:.3g} vs tol {tol:.3g}" + (f" (first at t = {leak_at[0]})" if leak_at else "")
    return CheckResult(
        name="causality",
        title="column t depends only on columns <= t",
        expected=resolve_expect(expect, predicted),
        predicted=predicted,
        observed=observed,
        observation=seen + f"; weakest influence of column 0: {weakest:.3g}",
        reason=reason,
        columns=columns,
        rows=rows,
        summary={
            "n": n,
            "worst_leak": worst,
            "tolerance": tol,
            **how,
            "min_influence": weakest,
            "leaking_positions": leak_at,
            "receptive_field": field,
        },
    )
