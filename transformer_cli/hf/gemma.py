"""Gemma, Gemma 2 and Gemma 3 (text): the (1 + gamma) RMSNorm, the sqrt(d) embedding, GeGLU; Gemma 2 and 3's
sandwich of norms, soft-capping and layers of two kinds, Gemma 3's query/key norms and local rope base."""

from __future__ import annotations

from typing import Any

from ..families.keys import Keys
from ..families.parts import CAUSAL_PRE, activation, kv_heads, llama_like, rope, typed_layers


def gemma(c: Keys) -> dict[str, Any]:
    """GemmaForCausalLM: (1 + gamma) RMSNorm, embeddings times sqrt(d), heads of 256, GeGLU, a tied head.

    transformers 5.x reads hidden_act only, its legacy "gelu" meaning the tanh form; 4.x read hidden_activation.
    """
    if c.flag("use_bidirectional_attention", False):
        raise c.refuse("use_bidirectional_attention", True, "tfm maps Gemma's causal language model only")
    spec = llama_like(
        c, c.count("num_key_value_heads", 16), 256, 1e-6, True, 8192, act="gelu_pytorch_tanh", gelu="gelu"
    )
    if c.has("hidden_activation") and activation(c, "hidden_activation", "") != spec["activation"]:
        why = "it differs from hidden_act, which transformers 5.x builds (4.x built hidden_activation)"
        raise c.refuse("hidden_activation", c.data["hidden_activation"], why)
    return spec | {"attention_bias": c.flag("attention_bias", False), "norm_plus_one": True, "embed_scale": "sqrt"}


def gemma2(c: Keys) -> dict[str, Any]:
    """Gemma2ForCausalLM: Gemma's embedding and GeGLU (hidden_activation), four norms a block (sandwich), scores
    scaled by query_pre_attn_scalar^-1/2 and soft-capped, logits soft-capped, sliding and full layers alternating
    (layer_types; by default layer 0 slides)."""
    caps = {
        "attn_softcap": c.nullable_number("attn_logit_softcapping", 50.0),
        "logit_softcap": c.nullable_number("final_logit_softcapping", 30.0),
    }
    return _gemma_like(c, caps, rope(c, c.count("max_position_embeddings", 8192), c.count("head_dim", 256)), period=2)


def gemma3_text(c: Keys) -> dict[str, Any]:
    """Gemma3ForCausalLM: Gemma 2's block with (1 + gamma) RMSNorms of each query and key head, five sliding
    layers to one full by default, the sliding layers' own rope base, soft-capping only where the file asks."""
    full, local = _gemma3_ropes(c, c.count("max_position_embeddings", 131072), c.count("head_dim", 256))
    caps = {
        "attn_softcap": c.nullable_number("attn_logit_softcapping", None),
        "logit_softcap": c.nullable_number("final_logit_softcapping", None),
    }
    return sliding_rope(
        _gemma_like(c, caps | {"qk_norm": True}, full, period=c.count("sliding_window_pattern", 6)), local
    )


def sliding_rope(spec: dict[str, Any], local: dict[str, Any]) -> dict[str, Any]:
    """Gemma 3's sliding layers turn by their own rope `local` (a base, no scaling), whatever the layers' pattern:
    beside full layers as rope_local_theta; when every layer slides (transformers' default under six layers) as
    the stack's one rope."""
    if spec.get("attention_layers"):
        scaled = spec.get("rope_scaling", "none") != "none"
        return spec | (
            {"rope_local_theta": local["rope_theta"]} if scaled or local["rope_theta"] != spec["rope_theta"] else {}
        )
    if "window" not in spec:  # every layer full
        return spec
    return {key: value for key, value in spec.items() if not key.startswith("rope_")} | local


def _gemma_like(c: Keys, extras: dict[str, Any], rotary: dict[str, Any], period: int) -> dict[str, Any]:
    """Gemma 2 and 3: the block around a sandwich of norms, the scale, the layers' kinds."""
    if c.flag("use_bidirectional_attention", False):
        raise c.refuse("use_bidirectional_attention", True, "tfm maps Gemma's causal language model only")
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    m = c.count("head_dim", 256)
    scalar = c.number("query_pre_attn_scalar", 256)
    kinds = ["sliding_attention" if (i + 1) % period else "full_attention" for i in range(c.count("num_hidden_layers"))]
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers"),
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size"),
        "V": c.count("vocab_size"),
        **kv_heads(c, "num_key_value_heads", c.count("num_key_value_heads", 4), H),
        "tie_embeddings": c.flag("tie_word_embeddings", True),
        **rotary,
        "scale": "sqrt" if scalar == m else scalar**-0.5,
        "norm": "sandwich",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("rms_norm_eps", 1e-6),
        "norm_plus_one": True,
        "embed_scale": "sqrt",
        "feedforward": "gated",
        "activation": activation(c, "hidden_activation", "gelu_pytorch_tanh"),
        "ff_bias": False,
        "attention_bias": c.flag("attention_bias", False),
        **{key: value for key, value in extras.items() if value is not None},
        **typed_layers(c, c.count("num_hidden_layers"), c.nullable_count("sliding_window", 4096), kinds),
    }


def _gemma3_ropes(c: Keys, max_positions: int, m: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Gemma 3's rotary keys of the full layers and of the sliding layers: 5.x's rope_parameters per layer type
    ({full_attention: {...}, sliding_attention: {...}}), or 4.x's rope_theta, rope_scaling (the full layers') and
    rope_local_base_freq."""
    nested = c.nested("rope_parameters")
    if nested is not None and any(isinstance(v, dict) for v in nested.data.values()):
        full = nested.nested("full_attention") or Keys({}, c.source, "rope_parameters.full_attention.")
        local = nested.nested("sliding_attention") or Keys({}, c.source, "rope_parameters.sliding_attention.")
        kind = local.text("rope_type", "default")
        if kind != "default":
            raise local.refuse("rope_type", kind, "tfm's sliding layers turn by their own base without scaling")
        top = Keys(
            {k: v for k, v in c.data.items() if k not in ("rope_parameters", "rope_scaling")}
            | {"rope_parameters": full.data},
            c.source,
        )
        full_rope, base = rope(top, max_positions, m, 1e6), local.number("rope_theta", 10000.0)
    else:
        full_rope, base = rope(c, max_positions, m, 1e6), c.number("rope_local_base_freq", 10000.0)
    return full_rope, {"positional": "rope", "context": max_positions, "rope_theta": base}
