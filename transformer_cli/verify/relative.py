"""Relative positions: shifting every position by the same amount leaves the output unchanged (RoPE, or no
positions at all); absolute positions (sinusoidal, learned) change it.

The shifted passes run the same columns at positions s .. s + n - 1 instead of 0 .. n - 1. The control adds a
sinusoidal term at the absolute positions to the input: a shift must then move the output by 1000 x tol, or
the check cannot tell (the model ignores its input, or the tolerance is too loose).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..analysis.memory import MemoryEstimate
from ..components import components
from ..kernels import sinusoidal_positions
from ..spec.choices import LEARNED
from .common import CONTROL_FACTOR, CheckResult, Setup, rel_err, resolve_expect, within

SHIFTS = (1, 5, 31)


def relative_need(setup: Setup) -> MemoryEstimate:
    """Passes over one sequence, one at a time, beside the input, its shifted copies and two outputs."""
    return setup.need(1, held=4 * setup.column_bytes + 2 * setup.output_bytes)


def check_relative(setup: Setup, expect: str = "holds") -> CheckResult:
    """T(X at positions s..) against T(X at positions 0..) for a few shifts s, with an absolute-position control."""
    spec, n = setup.spec, setup.n
    absolute = [reason for c in components(spec) if (reason := c.absolute_positions()) is not None]
    room = (spec.max_len or 0) - n if spec.positional in LEARNED else max(SHIFTS)  # learned positions end at max_len
    shifts = [s for s in SHIFTS if s <= room] or ([room] if room > 0 else [])
    lengths = [why for c in components(spec) for s in shifts[-1:] if (why := c.length_dependent(n, n + s))]
    lengths += [why for c in components(spec) for s in shifts[-1:] if (why := c.shift_dependent(n, s))]
    predicted = not absolute and not lengths
    setup.afford("relative", relative_need(setup))
    X = setup.gaussian(spec.input_width, n)
    Y0 = setup.model.forward(X)
    tol, how = setup.tolerance(X, Y0)
    columns = ["shift", "rel error", "tol", "control (absolute term)", "property"]
    rows: list[list[Any]] = []
    for s in shifts:
        err = rel_err(setup.model.forward(X, start=s), Y0, Y0)
        base, moved = (
            X + sinusoidal_positions(spec.input_width, n),
            X + sinusoidal_positions(spec.input_width, s + n)[:, s:],
        )
        control = rel_err(setup.model.forward(moved, start=s), setup.model.forward(base), Y0)
        rows.append([s, err, tol, control, "holds" if within(err, tol) else "breaks"])
    holds = all(row[-1] == "holds" for row in rows)
    observed: bool | None
    reasons = [" and ".join(absolute) + " depend on absolute positions"] if absolute else []
    relative = [why for c in components(spec) if (why := c.relative_positions()) is not None]
    unmoved = f"{', '.join(relative)}, and nothing else sees a position" if relative else "nothing sees a position"
    observed, reason = holds, "; ".join(reasons + lengths) if not predicted else f"no absolute positions: {unmoved}"
    if not shifts:
        observed, reason = None, f"n = {n} = max_len: no room to shift the learned positions"
    elif holds and not min(row[3] for row in rows) >= CONTROL_FACTOR * tol:
        observed, reason = None, "the absolute-position control moved the output by too little to tell"
    errors = [row[1] for row in rows]
    worst = max(errors) if errors and not any(np.isnan(errors)) else float("nan")
    return CheckResult(
        name="relative",
        title="shifting every position leaves the output unchanged",
        expected=resolve_expect(expect, predicted),
        predicted=predicted,
        observed=observed,
        observation=f"worst rel error {worst:.3g} vs tol {tol:.3g} over shifts {', '.join(map(str, shifts)) or 'none'}",
        reason=reason,
        columns=columns,
        rows=rows,
        summary={"n": n, "worst_error": worst, "tolerance": tol, **how, "shifts": shifts},
    )
