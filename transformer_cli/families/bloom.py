"""BLOOM (BloomForCausalLM): ALiBi instead of positions, a LayerNorm of the embeddings, GPT-NeoX's fused
query_key_value per head (the GGUF converter reorders it to [Q; K; V]), biases everywhere, the tanh GELU, a tied
head. What its GGUF file does not hold is read as llama.cpp reads it: ALiBi of maximum bias 8, a feedforward of
4 d, no context (its context_length is the converter's seq_length, or d)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import BLOOM
from .gguf_layout import LAYERNORM_BLOCK, LAYERNORM_FUSED, LAYERNORM_GLOBALS
from .keys import REQUIRED, Keys
from .layout import Family, norm_names
from .parts import CAUSAL_PRE, whole_heads
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """BloomForCausalLM: ALiBi instead of positions, a LayerNorm of the embeddings, GPT-NeoX's fused
    query_key_value per head, biases everywhere, the tanh GELU, a tied head."""
    if c.flag("apply_residual_connection_post_layernorm", False):
        raise c.refuse("apply_residual_connection_post_layernorm", True, "tfm's residuals add the block's input")
    d = c.count("hidden_size", REQUIRED, "n_embed")
    H = c.count("n_head", REQUIRED, "num_attention_heads")
    return CAUSAL_PRE | {
        "N": c.count("n_layer", REQUIRED, "num_hidden_layers"),
        "H": H,
        "d": d,
        "r": 4 * d,
        "m": whole_heads(c, d, H, "hidden_size", "n_head"),
        "V": c.count("vocab_size"),
        "tie_embeddings": c.flag("tie_word_embeddings", True),
        "embed_norm": True,
        "positional": "alibi",
        "norm_eps": c.number("layer_norm_epsilon", 1e-5),
        "attention_bias": True,
        "activation": "gelu_bloom",
    }


def config(spec: Spec) -> dict[str, Any]:
    """Every key of its config.json (BLOOM names its sizes its own way)."""
    return {
        "vocab_size": spec.V,
        "hidden_size": spec.d,
        "n_layer": spec.N,
        "n_head": spec.H,
        "layer_norm_epsilon": spec.norm_eps,
        "tie_word_embeddings": spec.tie_embeddings,
    }


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """BLOOM: ALiBi in place of positions, a LayerNorm of the embedded tokens, BLOOM's tanh GELU, biases."""
    spec = spec | {
        "positional": "alibi",
        "embed_norm": True,
        "attention_bias": True,
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
        "activation": "gelu_bloom",
    }
    spec.pop("context", None)  # (the converter's seq_length, else d: not a context)
    return spec


GGUF_LAYOUT = Family(
    "blk.{i}.",
    LAYERNORM_BLOCK,
    LAYERNORM_GLOBALS | norm_names("embedding.norm", "token_embd_norm"),
    fused=LAYERNORM_FUSED,
)
RECORD = Record(
    "bloom",
    "BloomForCausalLM",
    spec,
    BLOOM,
    config,
    Gguf("bloom", GGUF_LAYOUT, gguf_spec, base="sizes"),
    aliases=((r"^(?!transformer\.|lm_head\.)", "transformer."),),  # BloomModel's files (bloom-560m on the hub)
    config_alone=True,
)

__all__ = ["RECORD"]
