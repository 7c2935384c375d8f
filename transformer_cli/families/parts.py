"""What several families read the same way: activations, head sizes, grouped-query heads, rotary positions."""

from __future__ import annotations

from typing import Any

from .keys import Keys

# transformers' ACT2FN names -> tfm's activations (gelu_new, gelu_fast and gelu_pytorch_tanh are the tanh form)
ACTIVATIONS = {
    "gelu": "gelu_exact",
    "gelu_python": "gelu_exact",
    "gelu_new": "gelu",
    "gelu_fast": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_python_tanh": "gelu",
    "silu": "silu",
    "swish": "silu",
    "relu": "relu",
    "relu2": "relu2",
}

ROPE_TYPES = ("default", "llama3", "linear", "dynamic", "yarn", "longrope")
STRETCHED = ("linear", "dynamic", "yarn", "longrope")  # their context is longer than the original one


def hf_activation(ours: str) -> str:
    """transformers' name for tfm's activation (the first of ACTIVATIONS that names it: gelu for the exact one)."""
    return next(name for name, kind in ACTIVATIONS.items() if kind == ours)


def activation(c: Keys, key: str, default: str, gelu: str = "gelu_exact") -> str:
    """tfm's activation for transformers' name under `key`; `gelu` is what the plain name means (Gemma: tanh)."""
    name = c.text(key, default)
    if name not in ACTIVATIONS:
        raise c.refuse(key, name, f"tfm implements the activations {', '.join(ACTIVATIONS)}")
    return gelu if name == "gelu" else ACTIVATIONS[name]


def whole_heads(c: Keys, d: int, H: int, d_key: str = "hidden_size", H_key: str = "num_attention_heads") -> int:
    """m = d / H where transformers derives the head size (it builds d / H heads of d // H)."""
    if d % H:
        raise c.fail(H_key, H, f"a divisor of {d_key} = {d} (the head size is {d_key} / {H_key})")
    return d // H


def kv_heads(c: Keys, key: str, G: int, H: int) -> dict[str, Any]:
    """G key/value heads, each serving H / G query heads; no key when G = H."""
    if H % G:
        raise c.fail(key, G, f"a divisor of num_attention_heads = {H} (each key/value head serves H / G heads)")
    return {} if G == H else {"G": G}


def rope(
    c: Keys,
    max_positions: int,
    head_dim: int | None,
    theta: float = 10000.0,
    fraction: float = 1.0,
    partial: bool = False,
    theta_keys: tuple[str, ...] = ("rope_theta",),
    fraction_keys: tuple[str, ...] = ("partial_rotary_factor",),
) -> dict[str, Any]:
    """Rotary positions as transformers 5.x reads them: 4.x's rope_scaling, else 5.x's rope_parameters, whose
    values win over the top-level keys (`theta_keys`, `fraction_keys`), which win over the family's defaults.

    `partial`: the family's attention rotates part of each head (Phi, Phi-3, GPT-NeoX); the others rotate all.
    """
    p = c.nested("rope_scaling") or c.nested("rope_parameters") or Keys({}, c.source, "rope_parameters.")
    for key, value in p.data.items():
        if isinstance(value, dict):  # 5.x's per-layer-type parameters (Gemma 3 and the like)
            raise p.refuse(key, value, "rotary parameters per layer type; tfm's rope is the same in every block")
    type_key = "rope_type" if p.has("rope_type") else "type"
    kind = p.text(type_key, "default")
    if kind not in ROPE_TYPES:
        raise p.refuse(type_key, kind, f"tfm knows the rope types {', '.join(ROPE_TYPES)}")
    out: dict[str, Any] = {"positional": "rope", "context": max_positions}
    if kind in STRETCHED:
        out |= {"rope_scaling": kind, "context": _scaled_context(c, p, kind, max_positions)}
    out["rope_theta"] = p.number("rope_theta", None) or c.number(theta_keys[0], theta, *theta_keys[1:])
    share = p.fraction("partial_rotary_factor", None) or c.fraction(fraction_keys[0], fraction, *fraction_keys[1:])
    if share != 1 and not partial:
        where = (p, "partial_rotary_factor") if p.has("partial_rotary_factor") else (c, fraction_keys[0])
        raise where[0].refuse(where[1], share, "this family's attention in transformers rotates whole heads")
    if share != 1:
        out["rope_fraction"] = share
    if kind == "llama3":
        out |= _llama3(c, p, max_positions)
    elif kind == "linear":
        out["rope_factor"] = p.number("factor")
    elif kind == "dynamic":  # transformers grows the base past max_position_embeddings
        out |= {"rope_factor": p.number("factor"), "rope_original_max_len": max_positions}
    elif kind == "yarn":
        out |= _yarn(c, p, max_positions)
    elif kind == "longrope":
        out |= _longrope(c, p, max_positions, head_dim, share or 1.0)
    return out


def _longrope(c: Keys, p: Keys, max_positions: int, head_dim: int | None, share: float) -> dict[str, Any]:
    """LongRoPE as transformers' _compute_longrope_parameters reads it: the original context from the top level
    first (Phi-3 saves it there), its short and long factors one per rotated pair, a missing factor as
    max_position_embeddings over the original context, the attention factor from it unless given."""
    original = c.count("original_max_position_embeddings", None) or p.count(
        "original_max_position_embeddings", max_positions
    )
    pairs = int((head_dim or 0) * share) // 2
    out: dict[str, Any] = {
        "rope_scaling": "longrope",
        "rope_original_max_len": original,
        "rope_factor": p.number("factor", None) or max_positions / original,
        "rope_short_factor": list(p.numbers("short_factor", pairs)),
        "rope_long_factor": list(p.numbers("long_factor", pairs)),
    }
    if p.number("attention_factor", None):
        out["rope_attention_factor"] = p.number("attention_factor")
    return out


def _yarn(c: Keys, p: Keys, max_positions: int) -> dict[str, Any]:
    """YaRN's parameters as transformers' _compute_yarn_parameters reads them: the original context from the rope
    parameters (else the top level, else max_position_embeddings), a missing factor as max_position_embeddings over
    it, beta_fast 32 and beta_slow 1 unless set, truncate unless false."""
    original = p.count("original_max_position_embeddings", None) or c.count(
        "original_max_position_embeddings", max_positions
    )
    factor = p.number("factor", None) or max_positions / original
    out: dict[str, Any] = {"rope_factor": factor, "rope_original_max_len": original}
    for ours, theirs in (
        ("rope_attention_factor", "attention_factor"),
        ("rope_mscale", "mscale"),
        ("rope_mscale_all_dim", "mscale_all_dim"),
        ("rope_beta_fast", "beta_fast"),
        ("rope_beta_slow", "beta_slow"),
    ):
        value = p.number(theirs, None)
        if value:  # (transformers reads 0 and null as unset alike)
            out[ours] = value
    if not p.flag("truncate", True):
        out["rope_truncate"] = False
    return out


def _scaled_context(c: Keys, p: Keys, kind: str, max_positions: int) -> int:
    """The context a scaled rope states: longrope's max_position_embeddings is already the long one (Phi-3.5);
    the others stretch the original context (original_max_position_embeddings, else max_position_embeddings)
    by their factor, as Qwen2.5's yarn does 32,768 to 131,072."""
    if kind == "longrope":
        return max_positions
    original = c.count("original_max_position_embeddings", None) or p.count("original_max_position_embeddings", None)
    factor = p.number("factor", 1.0)
    return max(max_positions, int(factor * (original or max_positions)))


def _llama3(c: Keys, p: Keys, max_positions: int) -> dict[str, Any]:
    """Llama 3.1's frequency bands; L is the top-level original_max_position_embeddings if the file has one
    (transformers 5.x gives it priority), else the rope parameters', else max_position_embeddings."""
    L = c.count("original_max_position_embeddings", None) or p.count("original_max_position_embeddings", max_positions)
    return {
        "rope_scaling": "llama3",
        "rope_factor": p.number("factor"),
        "rope_low_freq_factor": p.number("low_freq_factor"),
        "rope_high_freq_factor": p.number("high_freq_factor"),
        "rope_original_max_len": L,
    }


CAUSAL_PRE = {"scale": "sqrt", "mask": "causal", "norm": "pre"}


def llama_block(c: Keys, eps: float, max_positions: int) -> dict[str, Any]:
    """LLaMA's block read the same way where a family reads its sizes and rotary its own way (Laguna,
    MiMo-V2-Flash): RMSNorms, a SwiGLU without biases, optional attention biases, an untied head by default."""
    return CAUSAL_PRE | {
        "norm_type": "rmsnorm",
        "norm_eps": c.number("rms_norm_eps", eps),
        "feedforward": "gated",
        "activation": "silu",
        "ff_bias": False,
        "attention_bias": c.flag("attention_bias", False),
        "tie_embeddings": c.flag("tie_word_embeddings", False),
        "positional": "rope",
        "context": c.count("max_position_embeddings", max_positions),
    }


def llama_like(
    c: Keys,
    G: int | None,
    head_dim: int | None,
    eps: float,
    tie: bool,
    max_positions: int,
    act: str = "silu",
    gelu: str = "gelu_exact",
    theta: float = 10000.0,
    partial: float | None = None,
) -> dict[str, Any]:
    """What the LLaMA layout shares: GQA (`G` read by the family; None is H), heads of `head_dim` (None: d/H),
    RMSNorm, a gated feedforward without biases, rotary positions, an optional tied head."""
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    G = G or H
    positions = c.count("max_position_embeddings", max_positions)
    m = c.count("head_dim", head_dim) or whole_heads(c, d, H)
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers"),
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size"),
        "V": c.count("vocab_size"),
        **kv_heads(c, "num_key_value_heads", G, H),
        "tie_embeddings": c.flag("tie_word_embeddings", tie),
        **rope(c, positions, m, theta, fraction=partial or 1.0, partial=partial is not None),
        "norm_type": "rmsnorm",
        "norm_eps": c.number("rms_norm_eps", eps),
        "feedforward": "gated",
        "activation": activation(c, "hidden_act", act, gelu),
        "ff_bias": False,
    }


def typed_ropes(
    c: Keys, max_positions: int, m: int, base: float, local_base: float, flat_local: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The rotary keys of the full layers and of the sliding ones (Gemma 3, OLMo 3): 5.x's rope_parameters per
    layer type ({full_attention: {...}, sliding_attention: {...}}; `base` and `local_base` where a type names no
    rope_theta), or 4.x's flat keys, rope_theta and rope_scaling for the full layers and `flat_local` the sliding
    layers' base. The sliding layers turn unscaled."""
    nested = c.nested("rope_parameters")
    if nested is not None and any(isinstance(v, dict) for v in nested.data.values()):
        full = nested.nested("full_attention") or Keys({}, c.source, "rope_parameters.full_attention.")
        local = nested.nested("sliding_attention") or Keys({}, c.source, "rope_parameters.sliding_attention.")
        kind = local.text("rope_type", "default")
        if kind != "default":
            raise local.refuse("rope_type", kind, "tfm's sliding layers turn by their own base without scaling")
        top = Keys(without_rope(c).data | {"rope_parameters": full.data}, c.source, notes=c.notes)
        full_rope, local_theta = rope(top, max_positions, m, base), local.number("rope_theta", local_base)
    else:
        full_rope, local_theta = rope(c, max_positions, m, base), flat_local
    return full_rope, {"positional": "rope", "context": max_positions, "rope_theta": local_theta}


def kind_rope(c: Keys, kind: str, defaults: tuple[float, float], missing: float) -> tuple[float, float]:
    """One layer kind's rotary base and share from 5.x's rope_parameters per layer type (`defaults` where the file
    names no such kind, `missing` the share where its kind names none), default rope only (Laguna, MiMo-V2-Flash)."""
    nested = c.nested("rope_parameters")
    p = nested.nested(kind) if nested is not None else None
    if p is None:
        return defaults
    if p.text("rope_type", "default") != "default":
        raise p.refuse("rope_type", p.data["rope_type"], "default: this family's layer kinds turn without scaling")
    return p.number("rope_theta", defaults[0]), p.fraction("partial_rotary_factor", missing) or missing


def kind_rope_keys(spec: dict[str, Any], full: tuple[float, float], local: tuple[float, float]) -> dict[str, Any]:
    """The spec's rotary keys from each kind's (base, share): the full layers' the stack's, the sliding layers'
    their own beside them (rope_local_theta, rope_local_fraction), or the stack's when every layer slides."""
    if not spec.get("attention_layers") and "window" in spec:
        full, local = local, local
    out = spec | {"rope_theta": full[0]} | ({"rope_fraction": full[1]} if full[1] != 1.0 else {})
    if spec.get("attention_layers"):
        out |= {"rope_local_theta": local[0]} if local[0] != full[0] else {}
        out |= {"rope_local_fraction": local[1]} if local[1] != full[1] else {}
    return out


def default_rope(c: Keys, rope: dict[str, Any], why: str) -> Keys:
    """The config with `rope` as its rope_parameters where it names none (nor rope_scaling): its config class sets
    that default then, a flat rope_theta ignored, said with `why` (CWM, Ministral 3, Apertus)."""
    if c.nested("rope_parameters") is not None or c.nested("rope_scaling") is not None:
        return c
    c.ignored("rope_theta", why)
    return Keys({k: v for k, v in without_rope(c).data.items()} | {"rope_parameters": rope}, c.source, notes=c.notes)


def without_rope(c: Keys) -> Keys:
    """The config without its rotary keys (read apart, per layer type)."""
    rotary = ("rope_parameters", "rope_scaling", "rope_theta")
    return Keys({k: v for k, v in c.data.items() if k not in rotary}, c.source, notes=c.notes)


def sliding_rope(spec: dict[str, Any], local: dict[str, Any]) -> dict[str, Any]:
    """The sliding layers turn by their own rope `local` (a base, no scaling), whatever the layers' pattern:
    beside full layers as rope_local_theta; when every layer slides (Gemma 3's default under six layers) as the
    stack's one rope."""
    if spec.get("attention_layers"):
        scaled = spec.get("rope_scaling", "none") != "none"
        return spec | (
            {"rope_local_theta": local["rope_theta"]} if scaled or local["rope_theta"] != spec["rope_theta"] else {}
        )
    if "window" not in spec:  # every layer full
        return spec
    return {key: value for key, value in spec.items() if not key.startswith("rope_")} | local


def window_key(window: int | None) -> dict[str, Any]:
    """Query t sees keys t - w + 1 .. t: transformers' mask keeps kv_idx > q_idx - sliding_window, the same w."""
    return {} if window is None else {"window": window}


def typed_layers(c: Keys, N: int, window: int | None, default: list[str]) -> dict[str, Any]:
    """layer_types (else `default`) as the blocks' attention_layers: a window on the sliding ones."""
    kinds = c.data.get("layer_types") or default
    if not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= {"full_attention", "sliding_attention"}:
        raise c.fail("layer_types", kinds, f"a list of {N} 'full_attention' or 'sliding_attention'")
    if "sliding_attention" not in kinds:
        return {}
    if window is None:
        raise c.refuse("sliding_window", None, "sliding layers (layer_types) need a sliding_window")
    layers = {"attention_layers": ["sliding" if k == "sliding_attention" else "full" for k in kinds]}
    return window_key(window) | (layers if "full_attention" in kinds else {})


__all__ = [
    "ACTIVATIONS",
    "CAUSAL_PRE",
    "ROPE_TYPES",
    "llama_block",
    "llama_like",
    "typed_layers",
    "typed_ropes",
    "default_rope",
    "sliding_rope",
    "without_rope",
    "window_key",
    "activation",
    "kv_heads",
    "rope",
    "whole_heads",
]
