"""Two specs side by side: every key, parameter count, FLOP figure and memory figure, and how they differ."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from ..spec.definition import LABELS, Spec
from ..spec.dependent import DEPENDENT
from ..spec.expert_keys import EXPERT_FIELDS
from ..spec.stacks import encoder, source_len
from .costs import costs
from .params import count_params
from .serving import serving_memory
from .training import training_memory

CROSS = ("cross_H", "cross_m", "cross_G", "cross_bias", "V_src", "encoder")  # an encoder-decoder's
ONLY_WITH = {key: "E" for key in EXPERT_FIELDS} | {"qk_norm_over": "qk_norm", "router_group_score": "router_groups"}
ONLY_WITH |= {"altup_active": "altup", "altup_correct_scale": "altup"}
ONLY_WITH |= dict.fromkeys(("hc_form", "hc_post_scale", "hc_head", "hc_sinkhorn", "hc_eps"), "hc_streams")


def _applies(key: str, spec: Spec) -> bool:
    """Whether a key has any effect on this spec: rope_theta only with rope, norm_eps only with a norm, ..."""
    if key in CROSS:
        return encoder(spec) is not None
    if key in ONLY_WITH:  # a key of a part the spec may not have (experts, query/key norms)
        return bool(getattr(spec, ONLY_WITH[key]))
    if key not in DEPENDENT:
        return True
    other, values, _ = DEPENDENT[key]
    return getattr(spec, other) in values and _applies(other, spec)


def _keys(spec: Spec) -> dict[str, Any]:
    """The model keys with an effect on this spec, as written or by default (G, out_bias, the cross-attention's
    by what they come to when not set); a key not set and with no default effect (E, window) is absent."""
    keys = {f.name: getattr(spec, f.name) for f in fields(spec) if f.name != "description"}
    keys["name"] = spec.label
    keys |= {k: effect(spec) for k, effect in EFFECTS.items() if keys.get(k) is None and _applies(k, spec)}
    return {k: v for k, v in keys.items() if v is not None and _applies(k, spec)}


EFFECTS = {  # what a key's value does, where values that read differently do the same
    "scale": lambda s: s.score_scale,  # none, 1 and 1.0 are one score scale; sqrt is 1/sqrt(m)
    "G": lambda s: s.kv_heads,  # absent: G = H
    "out_bias": lambda s: s.has_out_bias,  # absent: as attention_bias
    "cross_bias": lambda s: s.has_cross_bias,
    "cross_H": lambda s: s.cross_heads,
    "cross_m": lambda s: s.cross_size,
    "cross_G": lambda s: s.cross_kv_heads,
}


def _effect(key: str, spec: Spec, value: Any) -> Any:
    """What a key's value does in `spec` (EFFECTS), else the value itself."""
    return EFFECTS[key](spec) if key in EFFECTS else value


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
    figures |= {("FLOPs", k): v for k, v in c.flops.by_component.items()}
    figures[("FLOPs", "total")] = c.flops.total
    figures[("FLOPs", "multiply-adds")] = c.multiply_adds.total
    memory = c.memory
    figures |= {("memory", f"weights, {k}"): v for k, v in memory.weights.items()}
    figures |= {("memory", f"weights, {k}"): v for k, v in memory.weights_quantized.items()}
    for kind in ("float32", "bfloat16_mixed"):
        figures[("memory", f"Adam, {kind.replace('_', ' ')} (no activations)")] = memory.training_adam[kind]
    peak = memory.forward_peak
    figures[("memory", f"forward peak, {dtype}, the model")] = peak.model
    figures[("memory", "tfm's pass also holds (float64 copies)")] = peak.loaded + peak.input
    for kind in ("bfloat16", "int8"):
        figures[("memory", f"KV cache at n, {kind}")] = memory.kv_cache[kind]
    n_src = source_len(spec, n)  # what tfm plan gives at b and n, in bfloat16 with fused attention
    figures[("memory", "serving at n, bfloat16")] = serving_memory(spec, b, n, n_src=n_src).total
    training = training_memory(spec, count.total, b, n, n_src=n_src).total
    figures[("memory", "training at n, mixed Adam")] = training["fused_attention"]
    return figures


def ratio(a: int, b: int) -> float:
    """b / a as a float; inf when it is too large for one (sizes of 1e400 bytes compare too)."""
    try:
        return b / a
    except OverflowError:
        return float("inf") if (a > 0) == (b > 0) else float("-inf")


def diff(a: Spec, b: Spec, batch: int, n: int, dtype: str, only_differences: bool = False) -> list[dict[str, Any]]:
    """One row per figure: section, name, value in a and in b (None where absent), and whether they differ.

    Spec keys are compared by their effect, so `scale: none` and `scale: 1` do not differ (the row says
    `equivalent`); a key that has no effect on either spec (rope_theta without rope) has no row; a component
    one spec lacks counts as 0 in it. `only_differences` keeps the rows that differ (labels aside).
    """
    fa, fb = _figures(a, batch, n, dtype), _figures(b, batch, n, dtype)
    sections = list(dict.fromkeys(k[0] for k in [*fa, *fb]))
    rows = []
    for key in sorted(dict.fromkeys([*fa, *fb]), key=lambda k: sections.index(k[0])):  # stable: a's order first
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
    if only_differences:
        rows = [r for r in rows if r["differs"] and not (r["section"] == "spec" and r["name"] in LABELS)]
    return rows


def models_differ(rows: list[dict[str, Any]]) -> bool:
    """Whether two specs describe different models: any key or figure differs, labels aside."""
    return any(r["differs"] for r in rows if not (r["section"] == "spec" and r["name"] in LABELS))
