"""Two specs side by side: every key, parameter count, FLOP figure and memory figure, and how they differ."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from ..spec.definition import LABELS, Spec
from .costs import costs
from .params import count_params
from .serving import serving_memory
from .training import training_memory


def _keys(spec: Spec) -> dict[str, Any]:
    """Every model key as written (defaults filled in), without keys that have no effect on this spec."""
    keys = {f.name: getattr(spec, f.name) for f in fields(spec) if f.name != "description"}
    keys["name"] = spec.label
    if spec.norm == "none":
        del keys["norm_eps"]  # no norm, no epsilon
    if keys["max_len"] is None:
        del keys["max_len"]
    return keys


def _effect(key: str, spec: Spec, value: Any) -> Any:
    """What a key's value does: `scale` none, 1 and 1.0 are one score scale, sqrt is 1/sqrt(m)."""
    return spec.score_scale if key == "scale" else value


def _same(va: Any, vb: Any) -> bool:
    if isinstance(va, float) or isinstance(vb, float):
        return isinstance(va, (int, float)) and isinstance(vb, (int, float)) and math.isclose(va, vb, rel_tol=1e-12)
    return va == vb


def _figures(spec: Spec, b: int, n: int, dtype: str) -> dict[tuple[str, str], Any]:
    """Every comparable figure of a spec, keyed by (section, name)."""
    count = count_params(spec)
    c = costs(spec, b, n, dtype)
    figures: dict[tuple[str, str], Any] = {("spec", k): v for k, v in _keys(spec).items()}
    figures |= {("parameters", k): v for k, v in count.components().items()}
    figures |= {("parameters", "per block"): count.per_block, ("parameters", "total"): count.total}
    figures |= {("FLOPs", k): v for k, v in c["flops"]["by_component"].items()}
    figures[("FLOPs", "total")] = c["flops"]["total"]
    figures[("FLOPs", "multiply-adds")] = c["multiply_adds"]["total"]
    memory = c["memory"]
    figures |= {("memory", f"weights, {k}"): v for k, v in memory["weights"].items()}
    figures |= {("memory", f"weights, {k}"): v for k, v in memory["weights_quantized"].items()}
    for kind in ("float32", "bfloat16_mixed"):
        figures[("memory", f"Adam, {kind.replace('_', ' ')} (no activations)")] = memory["training_adam"][kind]
    peak = memory["forward_peak"]
    figures[("memory", f"forward peak, {dtype}, the model")] = peak["model"]
    figures[("memory", "tfm's pass also holds (float64 copies)")] = peak["loaded"] + peak["input"]
    for kind in ("bfloat16", "int8"):
        figures[("memory", f"KV cache at n, {kind}")] = memory["kv_cache"][kind]
    n_src = n if spec.N_enc else None  # what tfm plan gives at b and n, in bfloat16 with fused attention
    figures[("memory", "serving at n, bfloat16")] = serving_memory(spec, b, n, n_src=n_src)["total"]
    training = training_memory(spec, count.total, b, n, n_src=n_src)["total"]
    figures[("memory", "training at n, mixed Adam")] = training["fused_attention"]
    return figures


def ratio(a: int, b: int) -> float:
    """b / a as a float; inf when it is too large for one (sizes of 1e400 bytes compare too)."""
    try:
        return b / a
    except OverflowError:
        return float("inf") if (a > 0) == (b > 0) else float("-inf")


def compare(a: Spec, b: Spec, batch: int, n: int, dtype: str) -> list[dict[str, Any]]:
    """One row per figure: section, name, value in a and in b (None where absent), and whether they differ.

    Spec keys are compared by their effect, so `scale: none` and `scale: 1` do not differ (the row says
    `equivalent`); a component one spec lacks counts as 0 in it.
    """
    fa, fb = _figures(a, batch, n, dtype), _figures(b, batch, n, dtype)
    rows = []
    for key in dict.fromkeys([*fa, *fb]):
        va, vb = fa.get(key), fb.get(key)
        ea, eb = (_effect(key[1], s, v) for s, v in ((a, va), (b, vb)))
        if key[0] != "spec":
            ea, eb = ea or 0, eb or 0  # a component one spec lacks: 0 parameters, 0 FLOPs
        row: dict[str, Any] = {"section": key[0], "name": key[1], "a": va, "b": vb, "differs": not _same(ea, eb)}
        if not row["differs"] and va != vb:
            row["equivalent"] = True
        if isinstance(va, int) and isinstance(vb, int) and not isinstance(va, bool) and va:
            row["ratio"] = ratio(va, vb)
        rows.append(row)
    return rows


def models_differ(rows: list[dict[str, Any]]) -> bool:
    """Whether two specs describe different models: any key or figure differs, labels aside."""
    return any(r["differs"] for r in rows if not (r["section"] == "spec" and r["name"] in LABELS))
