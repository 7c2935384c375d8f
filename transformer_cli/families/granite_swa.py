"""Granite SWA (GraniteSWAForCausalLM, IBM): Granite's block (granite.py: the four multipliers, attention_multiplier
the score scale) with a learned sink per head in every layer (gpt-oss's: one more logit in each softmax), three
sliding layers to one full (layer_types; full where i % 4 == 0 by default) and a rotary base per layer
(layer_rope_theta: 0 a layer without positions). tfm holds one base for the full layers and one for the sliding
ones (unscaled), or the layers without positions: another list is refused naming the key. Its GGUF files
(granite_swa, GraniteSWAModel's): Granite's, each layer's sink (attn_sinks), the window and each layer's kind, and
where some layers have no positions each layer's flag in attention.rope_pattern (llama.cpp reads it; the converter
writes it from a config's no_rope_layers); llama.cpp turns every layer by one base."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .checkpoints import GRANITE_SWA
from .config_keys import layer_types
from .gguf_keys import sliding_kinds, sliding_pattern, windowed
from .gguf_layout import LLAMA_LAYOUT, LLAMA_PERMUTED, LLAMA_REDO
from .granite import config as granite_config
from .granite import gguf_metadata as granite_metadata
from .granite import gguf_spec as granite_gguf_spec
from .granite import spec as granite_spec
from .keys import Keys
from .layout import Family
from .parts import typed_layers
from .record import Gguf, Record


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
    if local and "rope_theta" not in out and "rope_scaling" not in spec:  # (no full layer turns: their base)
        out["rope_theta"] = local.pop()
    elif local and local != {out.get("rope_theta", spec["rope_theta"])}:
        if "rope_scaling" in spec:
            raise c.refuse("layer_rope_theta", thetas, "tfm's sliding layers turn by their own base unscaled")
        out["rope_local_theta"] = local.pop()
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


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Granite's reader with a sink per head in every layer, the window and kinds (a list, else i % 4 == 0 full),
    and the layers without positions where attention.rope_pattern says (true: the layer turns)."""
    N = spec["N"]
    window, kinds = sliding_kinds(c, N, 4, full_first=True) or (0, ["full"] * N)
    out = granite_gguf_spec(c, header, spec) | {"attn_sinks": True} | windowed(window, kinds)
    flags = c.data.get("attention.rope_pattern")
    if flags is None:
        return out
    if not isinstance(flags, list) or len(flags) != N or not all(flag in (0, 1) for flag in flags):
        raise c.fail("attention.rope_pattern", flags, f"a list of {N} flags, one per block (true: it turns)")
    return out | ({"positional_layers": ["rope" if f else "nope" for f in flags]} if not all(flags) else {})


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> granite_swa.* keys beyond LLaMA's: Granite's, the kinds, the layers' rope flags where some do not."""
    out = granite_metadata(spec) | sliding_pattern(spec)
    turning = [kind_of(spec.positional_layers, i, "rope") == "rope" for i in range(spec.N)]
    return out | ({"attention.rope_pattern": turning} if not all(turning) else {})


GGUF_LAYOUT = Family("blk.{i}.", LLAMA_LAYOUT.names | {"attention.sinks": "attn_sinks.weight"}, LLAMA_LAYOUT.globals_)
GGUF = Gguf("granite_swa", GGUF_LAYOUT, gguf_spec, gguf_metadata, transforms=LLAMA_PERMUTED, redo=LLAMA_REDO)
RECORD = Record("granite_swa", "GraniteSWAForCausalLM", spec, GRANITE_SWA, config, GGUF)

__all__ = ["RECORD"]
