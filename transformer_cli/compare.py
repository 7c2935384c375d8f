"""Two specs side by side: every key, parameter count, FLOP figure and memory figure, and how they differ."""

from __future__ import annotations

from typing import Any

from .costs import costs
from .params import count_params
from .spec import Spec


def _figures(spec: Spec, b: int, n: int, dtype: str) -> dict[tuple[str, str], Any]:
    """Every comparable figure of a spec, keyed by (section, name)."""
    count = count_params(spec)
    c = costs(spec, b, n, dtype)
    figures: dict[tuple[str, str], Any] = {("spec", k): v for k, v in spec.to_dict().items() if k != "description"}
    figures |= {("parameters", k): v for k, v in count.components().items()}
    figures |= {("parameters", "per block"): count.per_block, ("parameters", "total"): count.total}
    figures |= {("FLOPs", k): v for k, v in c["flops"]["by_component"].items()}
    figures[("FLOPs", "total")] = c["flops"]["total"]
    figures[("FLOPs", "multiply-adds")] = c["multiply_adds"]["total"]
    memory = c["memory"]
    figures |= {("memory", f"weights, {k}"): v for k, v in memory["weights"].items()}
    for kind in ("float32", "bfloat16_mixed"):
        figures[("memory", f"Adam, {kind.replace('_', ' ')} (no activations)")] = memory["training_adam"][kind]
    peak = memory["forward_peak"]
    figures[("memory", f"forward peak, {dtype}, the model")] = peak["model"]
    figures[("memory", "tfm's pass also holds (float64 copies)")] = peak["loaded"] + peak["input"]
    return figures


def ratio(a: int, b: int) -> float:
    """b / a as a float; inf when it is too large for one (sizes of 1e400 bytes compare too)."""
    try:
        return b / a
    except OverflowError:
        return float("inf") if (a > 0) == (b > 0) else float("-inf")


def compare(a: Spec, b: Spec, batch: int, n: int, dtype: str) -> list[dict[str, Any]]:
    """One row per figure: section, name, value in a and in b (None where absent), and whether they differ."""
    fa, fb = _figures(a, batch, n, dtype), _figures(b, batch, n, dtype)
    rows = []
    for key in dict.fromkeys([*fa, *fb]):
        va, vb = fa.get(key), fb.get(key)
        row: dict[str, Any] = {"section": key[0], "name": key[1], "a": va, "b": vb, "differs": va != vb}
        if isinstance(va, int) and isinstance(vb, int) and not isinstance(va, bool) and va:
            row["ratio"] = ratio(va, vb)
        rows.append(row)
    return rows
