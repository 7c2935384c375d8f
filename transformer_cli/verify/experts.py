"""Mixtures of experts: the routed pass (each column through its k chosen experts only) equals the dense sum over
all E experts with the weights zero off the top k (a router that weights the experts' input, Llama 4's, weights it
there; a zero expert's output is its input), and each column has exactly k distinct experts. A shared expert and
an output bias are added alike to both, so the check leaves them out.

The control is a mixture that keeps every expert's softmax weight (no top k): it must differ from the routed
pass by 1000 x tol, or the check cannot tell (the experts compute alike).
"""

from __future__ import annotations

import operator
from functools import reduce
from typing import Any

import numpy as np

from ..analysis.memory import MemoryEstimate
from ..components.experts import Experts, ExpertsWeights
from .common import CONTROL_FACTOR, CheckResult, Setup, rel_err, resolve_expect, within


def experts_need(setup: Setup) -> MemoryEstimate:
    """4n columns through one block's experts at a time: every expert's output, the router's scores and gates,
    the dense sums and an expert's hidden layer, in float64."""
    spec, columns = setup.spec, 4 * setup.n
    E, k = spec.E or 0, spec.k or 0
    return setup.holding(8 * columns * (spec.d * (E + 6) + 8 * E + 2 * spec.r + k))


def check_experts(setup: Setup, expect: str = "holds") -> CheckResult:
    """Per block: routed == dense-with-zeros on random columns, k distinct experts per column, and a control."""
    spec, model, tol = setup.spec, setup.model, setup.base_tol
    setup.afford("experts", experts_need(setup))
    U = setup.gaussian(spec.d, 1, 4 * setup.n).astype(model.dtype)  # columns fed straight to each block's experts
    flat = U.reshape(spec.d, -1)
    columns = ["block", "routed vs dense", "tol", "experts per column", "all experts (control)", "property"]
    rows: list[list[Any]] = []
    E, k = spec.E or 0, spec.k or 0
    for i, (_, ff) in enumerate(model.layers):
        if not isinstance(ff, Experts):  # a dense block beside routed ones
            continue
        w = model.weights.block(i)[1]
        ids = setup.rng.integers(0, spec.V or 1, size=U.shape[1:]) if ff.reads_tokens else None  # (hashed blocks')
        hashed = {} if ids is None else {"tokens": ids}
        routed = ff.routed(w, U, **hashed).reshape(spec.d, -1)  # (the shared expert, output bias: alike in both)
        chosen, weights = ff.choose(w.router, flat, None if ids is None else ids.reshape(-1))
        distinct = {len(set(column)) for column in chosen.T}
        scores = w.router.logits(flat).astype(np.float64)
        gates = np.zeros_like(scores)  # (E, T): the softmax over the top k, zero elsewhere
        np.put_along_axis(gates, chosen, weights, axis=0)
        full = np.exp(scores - scores.max(axis=0)) / np.exp(scores - scores.max(axis=0)).sum(axis=0)
        dense = reduce(operator.add, _weighted(ff, w, U, gates, spec.router_on_input))  # (in order)
        kept = reduce(operator.add, _weighted(ff, w, U, full, spec.router_on_input))
        control = rel_err(kept, routed, routed)
        err = rel_err(routed, dense, dense)
        ok = within(err, tol) and distinct == {k}
        rows.append([i, err, tol, ", ".join(map(str, sorted(distinct))), control, "holds" if ok else "breaks"])
    observed: bool | None = all(row[-1] == "holds" for row in rows)
    reason = f"{spec.k} of {spec.E} experts per column, weighted by their router's scores"
    if observed and k < E and not min(row[4] for row in rows) >= CONTROL_FACTOR * tol:
        observed, reason = None, "keeping every expert moved the output by too little to tell routing apart"
    worst = max(row[1] for row in rows)
    return CheckResult(
        name="experts",
        title="routed experts = dense sum with zeros off the top k",
        expected=resolve_expect(expect, True),
        predicted=True,
        observed=observed,
        observation=f"worst rel error {worst:.3g} vs tol {tol:.3g}; experts per column: {rows[0][3]}",
        reason=reason,
        columns=columns,
        rows=rows,
        summary={"E": spec.E, "k": spec.k, "worst_error": worst, "tolerance": tol},
    )


def _weighted(ff: Experts, w: ExpertsWeights, U: np.ndarray, gates: np.ndarray, on_input: bool) -> list[np.ndarray]:
    """Each expert's weighted output on every column: its weight times its output, or (Llama 4's router_on_input)
    its output on the column times its weight, where the weight is not zero."""
    if not on_input:
        return [gates[e] * _expert(ff, w, e, U) for e in range(len(gates))]
    scaled = [(gates[e] != 0) * _expert(ff, w, e, U * gates[e].reshape(1, *U.shape[1:])) for e in range(len(gates))]
    return scaled


def _expert(ff: Experts, w: ExpertsWeights, e: int, U: np.ndarray) -> np.ndarray:
    """Expert e alone on every column of U: (d, T); a zero expert (e >= E, LongCat-Flash's) gives U back."""
    if e >= ff.E:
        return U.reshape(U.shape[0], -1).astype(np.float64)
    return ff.expert.apply(w.expert(e), U).reshape(U.shape[0], -1).astype(np.float64)
