"""StarCoder2 (Starcoder2ForCausalLM): LLaMA's attention (biases with use_bias) between LayerNorms with biases, a
plain MLP (c_fc, c_proj) of gelu_pytorch_tanh, an optional window, a tied head. Its GGUF file loses the window (the
converter writes none: read as none, as llama.cpp does)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import STARCODER2
from .gguf_layout import GLOBALS_WITH_BIAS, LLAMA_LAYOUT, PLAIN_BLOCK
from .keys import Keys
from .layout import Family, norm_names
from .parts import CAUSAL_PRE, activation, kv_heads, rope, whole_heads, window_key
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """Starcoder2ForCausalLM: LLaMA's attention (biases with use_bias) between LayerNorms with biases, a plain MLP
    (c_fc, c_proj) of gelu_pytorch_tanh, an optional window, a tied head."""
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    G = c.count("num_key_value_heads", 2)
    m = c.nullable_count("head_dim", None) or whole_heads(c, d, H)  # (transformers' `head_dim or d // H`)
    bias = c.flag("use_bias", True)
    return (
        CAUSAL_PRE
        | window_key(c.nullable_count("sliding_window", None))
        | {
            "N": c.count("num_hidden_layers"),
            "H": H,
            "m": m,
            "d": d,
            "r": c.count("intermediate_size"),
            "V": c.count("vocab_size"),
            **kv_heads(c, "num_key_value_heads", G, H),
            "tie_embeddings": c.flag("tie_word_embeddings", True),
            **rope(c, c.count("max_position_embeddings", 4096), m),
            "norm_eps": c.number("norm_epsilon", 1e-5),
            "attention_bias": bias,
            "ff_bias": bias,
            "activation": activation(c, "hidden_act", "gelu_pytorch_tanh"),
        }
    )


def config(spec: Spec) -> dict[str, Any]:
    head = {"head_dim": spec.m} if spec.m * spec.H != spec.d else {}
    return head | {
        "norm_epsilon": spec.norm_eps,
        "use_bias": True,
        "sliding_window": None,
        "hidden_act": "gelu_pytorch_tanh",
    }


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """StarCoder2: LayerNorms with biases, biases on q, k, v, o and the plain MLP (gelu tanh), rotary."""
    return spec | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
        "attention_bias": True,
        "activation": "gelu",
    }


GGUF_LAYOUT = Family(
    "blk.{i}.",
    {
        ours: theirs
        for ours, theirs in LLAMA_LAYOUT.names.items()
        if "_norm." not in ours and not ours.startswith(("norm", "ff."))
    }
    | PLAIN_BLOCK
    | norm_names("norm1", "attn_norm")
    | norm_names("norm2", "ffn_norm"),
    GLOBALS_WITH_BIAS,
)
RECORD = Record(
    "starcoder2",
    "Starcoder2ForCausalLM",
    spec,
    STARCODER2,
    config,
    Gguf("starcoder2", GGUF_LAYOUT, gguf_spec, base="sizes"),
)

__all__ = ["RECORD"]
