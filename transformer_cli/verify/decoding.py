"""Seed 001: sequential decoding with a key/value cache reproduces the parallel pass of a causal model."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..analysis.kv_cache import kv_cache_bytes
from ..analysis.memory import MemoryEstimate
from ..components import components, is_causal
from ..components.positional import POSITIONALS
from ..model.decoding import decode
from ..spec.choices import LEARNED
from .common import CONTROL_FACTOR, CheckResult, Setup, rel_err, resolve_expect, within


def _decode(model, X: np.ndarray, **options) -> np.ndarray:
    """Decode with the model's own method where it has one (an encoder-decoder's decoder over its source)."""
    return model.decode(X, **options) if hasattr(model, "decode") else decode(model, X, **options)


def _controls(setup: Setup, X: np.ndarray, parallel: np.ndarray) -> tuple[dict[str, float], dict[str, str]]:
    """Errors of deliberately broken decoders, which the check must be able to see; and the controls not run, why."""
    model, n, spec = setup.model, setup.n, setup.spec
    controls, skipped = {}, {}
    if n >= 2:
        controls["stale cache (step 0 not stored)"] = rel_err(_decode(model, X, stale_at=0), parallel, parallel)
    else:
        skipped["stale cache (step 0 not stored)"] = "n = 1: no later step reads the cache"
    shifted = "wrong position (t + 1)"
    if spec.positional == "none":
        skipped[shifted] = "the spec has no positions to get wrong"
    elif not POSITIONALS[spec.positional].query_position_matters:
        skipped[shifted] = "ALiBi moves every key's score of a query alike when the query's position moves alone"
    else:  # with learned positions and n = max_len, column n - 1 has no position t + 1: decode the first n - 1
        k = n - 1 if spec.positional in LEARNED and n >= (spec.max_len or 0) else n
        if k >= 1:
            wrong = _decode(model, X[..., :k], position_offset=1)
            controls[shifted] = rel_err(wrong, parallel[..., :k], parallel)
        else:
            skipped[shifted] = f"max_len = {spec.max_len} leaves no position t + 1"
    return controls, skipped


def decoding_need(setup: Setup) -> MemoryEstimate:
    """The parallel pass over two sequences, then decoding them (and a control) with the parallel output held:
    the caches, each step's scores, and the decoded columns (a list, joined, laid out) beside it."""
    spec, n, dtype = setup.spec, setup.n, setup.model.dtype
    parallel = setup.need(2, held=2 * setup.column_bytes)
    cache = kv_cache_bytes(spec, 2, n, str(dtype))  # the self-attention's, and the cross-attention's keys
    steps = 2 * 2 * spec.H * n * 8  # one step's scores and weights over every cached key
    outputs = 2 * setup.output_bytes * 5  # the parallel pass's, the decoded, and a control's list, join and layout
    decoding = setup.holding(2 * setup.column_bytes + cache + steps + outputs + 2 * 8 * spec.input_width * n)
    return max(parallel, decoding, key=lambda e: e.total)


def check_decoding(setup: Setup, expect: str = "holds") -> CheckResult:
    """Decode column by column and compare each step with the parallel forward pass."""
    spec, n = setup.spec, setup.n
    # step t is a pass t + 1 long: a component that computes positions by the pass's length sees other lengths
    lengths = [why for c in components(spec) if (why := c.length_dependent(1, n))]
    predicted = is_causal(spec) and not lengths
    setup.afford("decoding", decoding_need(setup))
    X = setup.gaussian(2, spec.input_width, n)  # a batch of two sequences
    parallel = setup.model(X)
    tol, how = setup.tolerance(X, parallel)
    sequential = _decode(setup.model, X)
    columns = ["step", "rel error", "tol", "decoded = parallel"]
    rows: list[list[Any]] = []
    for t in range(n):
        err = rel_err(sequential[..., t], parallel[..., t], parallel)
        rows.append([t, err, tol, "equal" if within(err, tol) else "DIFFERS"])
    errors = [row[1] for row in rows]
    worst = float("nan") if any(np.isnan(errors)) else max(errors)
    controls, skipped = _controls(setup, X, parallel)
    for name, err in controls.items():
        rows.append(
            [f"control: {name}", err, CONTROL_FACTOR * tol, "caught" if err >= CONTROL_FACTOR * tol else "MISSED"]
        )
    for name, why in skipped.items():
        rows.append([f"control: {name}", None, None, f"not run: {why}"])
    observed: bool | None = all(row[-1] == "equal" for row in rows[:n])
    reason = ""
    if observed and any(row[-1] == "MISSED" for row in rows[n:]):
        observed, reason = None, "a broken decoder (control) was not told apart from the parallel pass"
    elif observed and not controls:
        observed, reason = None, "no control could run (" + "; ".join(skipped.values()) + ")"
    elif predicted:
        reason = "causal: a column never sees later ones, so the cache of earlier keys is all it needs"
    elif lengths:
        reason = "; ".join(lengths) + ": each step is a pass of its own length, the cache keeps the earlier keys"
    else:
        reason = "no causal mask: the parallel pass lets column t see later columns, decoding cannot"
    return CheckResult(
        name="decoding",
        title="KV-cache decoding = parallel forward pass",
        expected=resolve_expect(expect, predicted),
        predicted=predicted,
        observed=observed,
        observation=f"worst step error {worst:.3g} vs tol {tol:.3g}; controls: "
        + (", ".join(f"{k} {v:.3g}" for k, v in controls.items()) or "none")
        + "".join(f"; {k} not run: {v}" for k, v in skipped.items() if "no positions" not in v),
        reason=reason,
        columns=columns,
        rows=rows,
        summary={
            "n": n,
            "worst_error": worst,
            "tolerance": tol,
            **how,
            "controls": controls,
            "controls_not_run": skipped,
        },
    )
