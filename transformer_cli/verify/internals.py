"""Checks of the model's bookkeeping: softmax columns sum to 1, and the parameter counts agree."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..analysis.memory import MemoryEstimate
from ..analysis.params import count_params
from ..components.tensors import all_tensors
from ..io.weights import Weights
from .common import CheckResult, Setup, resolve_expect


def softmax_need(setup: Setup) -> MemoryEstimate:
    """A pass over one sequence keeping every block's (H, n, n) weights, and one block's float64 temporaries."""
    spec, n = setup.spec, setup.n
    maps = spec.N * spec.H * n * n * setup.model.dtype.itemsize
    return setup.need(1, held=maps + 2 * spec.H * n * n * 8 + n * n + setup.column_bytes, noise=0)


def check_softmax(setup: Setup, expect: str = "holds") -> CheckResult:
    """Every block's attention weights are >= 0, each column sums to 1 (with attention sinks: to less than 1, the
    sink taking the rest), and masked weights are exactly 0."""
    spec, n = setup.spec, setup.n
    setup.afford("softmax", softmax_need(setup))
    weights = setup.model.attention_weights(setup.gaussian(spec.input_width, n))
    tol = 4 * float(np.finfo(setup.model.dtype).eps) * n
    later = np.arange(n)[:, None] > np.arange(n)[None, :]  # (n_k, n_q): keys after the query
    layers = getattr(setup.model, "layers", None)  # (an encoder-decoder's blocks are alike: the spec's)
    sinks = [layer.spec.attn_sinks for layer, _ in layers] if layers else [spec.attn_sinks] * len(weights)
    label = "max (column sum - 1)" if any(sinks) else "max |column sum - 1|"
    columns = ["block", label, "min weight", "max masked weight", "property"]
    rows: list[list[Any]] = []
    for i, A in enumerate(weights):  # A: (b, H, n_k, n_q)
        A64 = A.astype(np.float64)
        sums = A64.sum(axis=-2)
        if sinks[i]:  # 1 - sum is the sink's weight: positive, at most 1
            sum_err = float(np.max(sums - 1.0, initial=-np.inf))
            summed = sum_err <= tol and float(sums.min()) >= 0.0 and bool(np.all(sums < 1.0))
        else:
            sum_err = float(np.max(np.abs(sums - 1.0)))
            summed = sum_err <= tol
        masked = float(np.max(np.abs(A64[..., later]))) if spec.mask == "causal" and n > 1 else 0.0
        ok = summed and float(A64.min()) >= 0 and masked == 0.0
        rows.append([i, sum_err, float(A64.min()), masked, "holds" if ok else "BREAKS"])
    worst = max(row[1] for row in rows)
    return CheckResult(
        name="softmax",
        title="attention weights: columns sum to 1, masked weights are 0",
        expected=resolve_expect(expect, True),
        predicted=True,
        observed=all(row[-1] == "holds" for row in rows),
        observation=f"worst |column sum - 1| {worst:.3g} vs tol {tol:.3g}",
        reason="softmax over keys for each query column (seed 000)"
        + ("; the heads' sinks take the rest of each column" if any(sinks) else ""),
        columns=columns,
        rows=rows,
        summary={"worst_sum_error": worst, "tolerance": tol},
    )


def check_counts(setup: Setup, weights: Weights, expect: str = "holds") -> CheckResult:
    """Parameter count from tensor shapes == closed form == number of scalars stored in the weights."""
    count = count_params(setup.spec, check=False)
    buffers = {t.name for t in all_tensors(setup.spec) if t.buffer}  # stored, but not parameters
    stored = sum(int(np.size(w)) for name, w in weights.items() if name not in buffers)
    columns = ["source", "per block", "total"]
    rows = [
        ["tensor shapes", count.per_block, count.total],
        ["closed form", count.closed_per_block, count.closed_total],
        ["stored arrays", None, stored],
    ]
    agree = count.per_block == count.closed_per_block and count.total == count.closed_total == stored
    return CheckResult(
        name="counts",
        title="parameter count = closed form = stored arrays",
        expected=resolve_expect(expect, True),
        predicted=True,
        observed=agree,
        observation=f"shapes {count.total}, closed form {count.closed_total}, stored {stored}",
        reason="per block: " + " + ".join(t.formula for t in count.terms if t.scope == "block"),
        columns=columns,
        rows=rows,
        summary={
            "per_block": count.per_block,
            "total": count.total,
            "closed_form_total": count.closed_total,
            "stored": stored,
        },
    )
