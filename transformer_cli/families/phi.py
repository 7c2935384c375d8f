"""Phi (PhiForCausalLM, Phi-1 to Phi-2): one LayerNorm shared by parallel attention and feedforward, a partial
rotary, biases everywhere, the head's too. Its GGUF architecture is phi2 (no rope base written: 10000; the
feedforward the 4 d the converter writes)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import PHI
from .gguf_keys import partial_rotary
from .gguf_layout import LAYERNORM_BLOCK, LAYERNORM_GLOBALS
from .keys import Keys
from .layout import Family, linear_names
from .parts import CAUSAL_PRE, activation, kv_heads, rope, whole_heads
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """PhiForCausalLM: one LayerNorm shared by parallel attention and feedforward, biases, a head with a bias."""
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    G = c.count("num_key_value_heads", None) or H
    m = c.count("head_dim", None) or whole_heads(c, d, H)
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers"),
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size"),
        "V": c.count("vocab_size"),
        **kv_heads(c, "num_key_value_heads", G, H),
        "tie_embeddings": c.flag("tie_word_embeddings", False),
        "head_bias": True,
        **rope(c, c.count("max_position_embeddings", 2048), m, fraction=0.5, partial=True),
        "norm_eps": c.number("layer_norm_eps", 1e-5),
        "parallel": True,
        "shared_norm": True,
        "attention_bias": True,
        "qk_norm": c.flag("qk_layernorm", False),
        "activation": activation(c, "hidden_act", "gelu_new"),
    }


def config(spec: Spec) -> dict[str, Any]:
    return {"hidden_act": "gelu_new", "qk_layernorm": False}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Phi-2: one LayerNorm shared by parallel attention and feedforward, a partial rotary, biases, the head's too."""
    spec = spec | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
        "attention_bias": True,
        "parallel": True,
        "shared_norm": True,
        "head_bias": True,
        "activation": "gelu",
    }
    spec |= partial_rotary(c, spec["m"])
    return spec


GGUF_LAYOUT = Family(
    "blk.{i}.",
    {k: v for k, v in LAYERNORM_BLOCK.items() if not k.startswith("norm2")}
    | linear_names("attention.{}_Q", "attn_q")
    | linear_names("attention.{}_K", "attn_k")
    | linear_names("attention.{}_V", "attn_v"),
    LAYERNORM_GLOBALS | {"head.b": "output.bias"},
)
RECORD = Record("phi", "PhiForCausalLM", spec, PHI, config, Gguf("phi2", GGUF_LAYOUT, gguf_spec, base="sizes"))

__all__ = ["RECORD"]
