"""Soft-capping (Gemma 2): scores s become c tanh(s / c), logits z become c' tanh(z / c'), so both stay within
their cap whatever the weights. Attention then can never be sharper than the cap allows: in every query's
softmax, the largest weight is at most exp(2c) times the smallest of the keys it sees: their logs differ by 2c
at most.

The check stresses the bound: the scores' scale (and the head) are multiplied by AMPLIFY, far past the cap, and
the capped model must still keep within it. The control is the same amplified model without the caps: it must
cross them, or the check cannot tell (the weights are too small for the cap to matter).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import numpy as np

from ..analysis.memory import MemoryEstimate
from ..components import attention_component
from .common import CheckResult, Setup, resolve_expect

AMPLIFY = 1e3  # the factor on the scores' scale and on the head that pushes every cap far past its knee


def _stressed(setup: Setup, capped: bool):
    """The setup's model with its scores' scale and its head times AMPLIFY, with its caps or without them: its spec
    and each block's attention (which attends with its spec's scale and cap) changed, its weights the same."""
    spec, model = setup.spec, copy.copy(setup.model)
    changes = {"scale": spec.score_scale * AMPLIFY} | ({} if capped else {"attn_softcap": None, "logit_softcap": None})
    model.spec = replace(spec, **changes)  # type: ignore[arg-type]
    model.layers = [(attention_component(replace(a.spec, **changes)), f) for a, f in model.layers]  # type: ignore[arg-type]
    if model.W_head is not None:
        model.W_head = model.W_head * AMPLIFY
    return model


def _sharpest(weights: list[np.ndarray]) -> float:
    """The largest difference of a query's largest and smallest log weight (over the keys it sees: weight > 0)."""
    worst = 0.0
    for A in weights:  # (b, H, n_k, n_q)
        logs = np.log(np.where(A > 0, A, np.nan), dtype=np.float64)
        worst = max(worst, float(np.nanmax(np.nanmax(logs, axis=-2) - np.nanmin(logs, axis=-2))))
    return worst


def softcap_need(setup: Setup) -> MemoryEstimate:
    """Two passes over one sequence (capped and not), each keeping its output and every block's weights, the
    amplified heads, and one block's log weights in float64."""
    spec, n, s = setup.spec, setup.n, setup.model.dtype.itemsize
    kept = 2 * (spec.N * spec.H * n * n * s + setup.output_bytes + (spec.V or 0) * spec.d * s)
    return setup.need(1, held=kept + 3 * spec.H * n * n * 8 + setup.column_bytes, noise=0)


def check_softcap(setup: Setup, expect: str = "holds") -> CheckResult:
    """Log weights within 2c of each other per query, logits within c', on the amplified model and its control."""
    spec, n = setup.spec, setup.n
    setup.afford("softcap", softcap_need(setup))
    X = setup.gaussian(spec.input_width, n)
    rel = 64 * float(np.finfo(setup.model.dtype).eps)  # the rounding of a tanh, an exp and a log
    columns = ["what", "bound", "capped, amplified", "control: uncapped", "property"]
    rows: list[list[Any]] = []
    models = {capped: _stressed(setup, capped) for capped in (True, False)}
    outputs = {}
    for capped, model in models.items():
        found: list[np.ndarray] = []
        outputs[capped] = (model.forward(X, weights_out=found), found)
    if spec.attn_softcap is not None:
        bound = 2 * spec.attn_softcap
        ours, control = _sharpest(outputs[True][1]), _sharpest(outputs[False][1])
        rows.append(
            [
                "spread of a query's log weights",
                bound,
                ours,
                control,
                "holds" if ours <= bound * (1 + rel) else "breaks",
            ]
        )
    if spec.logit_softcap is not None and spec.V and spec.head:
        bound = spec.logit_softcap
        ours, control = float(np.abs(outputs[True][0]).max()), float(np.abs(outputs[False][0]).max())
        rows.append(["largest |logit|", bound, ours, control, "holds" if ours <= bound * (1 + rel) else "breaks"])
    holds = all(row[-1] == "holds" for row in rows)
    observed: bool | None = holds
    reason = "tanh keeps every capped score and logit within its cap"
    if holds and not all(row[3] > row[1] for row in rows):
        observed, reason = None, "without the caps the amplified model stayed within them: the control cannot tell"
    return CheckResult(
        name="softcap",
        title="soft-capped scores and logits stay within their caps",
        expected=resolve_expect(expect, True),
        predicted=True,
        observed=observed,
        observation="; ".join(f"{row[0]} {row[2]:.4g} vs bound {row[1]:.4g} (uncapped {row[3]:.4g})" for row in rows),
        reason=reason,
        columns=columns,
        rows=rows,
        summary={"amplify": AMPLIFY, "attn_softcap": spec.attn_softcap, "logit_softcap": spec.logit_softcap},
    )
