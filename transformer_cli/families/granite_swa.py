"""Granite SWA (GraniteSWAForCausalLM, IBM): Granite's block (granite.py: the four multipliers, attention_multiplier
the score scale) with a learned sink per head in every layer (gpt-oss's: one more logit in each softmax), three
sliding layers to one full (layer_types; full where i % 4 == 0 by default) and a rotary base per layer
(layer_rope_theta: 0 a layer without positions). tfm holds one base for the full layers and one for the sliding
ones (unscaled), or the layers without positions: another list is refused naming the key."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .checkpoints import GRANITE_SWA
from .config_keys import layer_types
from .granite import config as granite_config
from .granite import spec as granite_spec
from .keys import Keys
from .parts import typed_layers
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: eps 1e-5, a tied head, a window of 128, GraniteSWAConfig's layer_types)."""
    keys = {"rms_norm_eps": 1e-5, "tie_word_embeddings": True, "max_position_embeddings": 8192}
    plain = granite_spec(Keys(keys | c.data, c.source, notes=c.notes))
    N, window = plain["N"], c.nullable_count("sliding_window", 128)
    kinds = c.data.get("layer_types") or ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(N)]
    out = plain | {"attn_sinks": True} | typed_layers(c, N, window, kinds)
    return out | _layer_thetas(c, out, kinds)


def _layer_thetas(c: Keys, spec: dict[str, Any], kinds: list[str]) -> dict[str, Any]:
    """layer_rope_theta as tfm holds it: 0s a layer without positions, the others' base one for the full layers
    (rope_theta, scaled as rope_parameters says) and one for the sliding ones (unscaled)."""
    thetas = c.data.get("layer_rope_theta")
    if thetas is None:
        return {}
    N = spec["N"]
    if not isinstance(thetas, list) or len(thetas) != N or not all(_number(t) and t >= 0 for t in thetas):
        raise c.fail("layer_rope_theta", thetas, f"a list of {N} numbers from 0 (0: no positions)")
    out: dict[str, Any] = {}
    if 0 in thetas:
        out["positional_layers"] = ["nope" if t == 0 else "rope" for t in thetas]
    full = {float(t) for t, kind in zip(thetas, kinds, strict=True) if t and kind == "full_attention"}
    local = {float(t) for t, kind in zip(thetas, kinds, strict=True) if t and kind == "sliding_attention"}
    if len(full) > 1 or len(local) > 1:
        raise c.refuse("layer_rope_theta", thetas, "tfm holds one base for the full layers and one for the sliding")
    if full:
        out["rope_theta"] = full.pop()
        nested = c.nested("rope_parameters")
        if nested is not None:
            nested.ignored("rope_theta", "5.24's Granite SWA turns each layer by layer_rope_theta", out["rope_theta"])
    if local and local != {out.get("rope_theta", spec["rope_theta"])}:
        if "rope_scaling" in spec:
            raise c.refuse("layer_rope_theta", thetas, "tfm's sliding layers turn by their own base unscaled")
        out["rope_local_theta"] = local.pop()
    elif local and not full:
        out["rope_theta"] = local.pop()
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Granite SWA's config.json keys of its own (the bases per layer as layer_rope_theta)."""
    out = granite_config(spec) | {"sliding_window": spec.window, "layer_types": layer_types(spec)}
    local = spec.rope_local_theta or spec.rope_theta
    thetas = [
        0
        if kind_of(spec.positional_layers, i, "rope") == "nope"
        else (local if kind == "sliding_attention" else spec.rope_theta)
        for i, kind in enumerate(out["layer_types"])
    ]
    return out | {"layer_rope_theta": thetas}


RECORD = Record("granite_swa", "GraniteSWAForCausalLM", spec, GRANITE_SWA, config, config_alone=True)

__all__ = ["RECORD"]
