"""OPT (OPTForCausalLM): learned positions read two columns on, pre- or post-norm, biases everywhere, ReLU, a
tied head; no GGUF architecture."""

from __future__ import annotations

from typing import Any

from .checkpoints import OPT
from .keys import Keys
from .parts import activation, whole_heads
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """OPTForCausalLM: learned positions read two columns on (offset 2), pre-norm (or post with
    do_layer_norm_before false, then no final norm), biases everywhere (enable_bias), ReLU, a tied head; an
    embedding of word_embed_proj_dim projected in and out where that is not hidden_size (OPT-350m)."""
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    projected = c.nullable_count("word_embed_proj_dim", None) or d
    if not c.flag("layer_norm_elementwise_affine", True):
        raise c.refuse("layer_norm_elementwise_affine", False, "tfm's LayerNorms have a gain")
    pre = c.flag("do_layer_norm_before", True)
    if pre and c.flag("_remove_final_layer_norm", False):
        raise c.refuse("_remove_final_layer_norm", True, "tfm's pre-norm stacks end with a norm")
    bias = c.flag("enable_bias", True)
    return {
        "N": c.count("num_hidden_layers"),
        "H": H,
        "m": whole_heads(c, d, H),
        "d": d,
        "r": c.count("ffn_dim"),
        "V": c.count("vocab_size"),
        "tie_embeddings": c.flag("tie_word_embeddings", True),
        "scale": "sqrt",
        "mask": "causal",
        "positional": "learned",
        "max_len": c.count("max_position_embeddings", 2048),
        "position_offset": 2,
        "norm": "pre" if pre else "post",
        "norm_eps": 1e-5,
        "attention_bias": bias,
        "ff_bias": bias,
        "activation": activation(c, "activation_function", "relu"),
    } | ({"embed_dim": projected} if projected != d else {})


RECORD = Record("opt", "OPTForCausalLM", spec, OPT)

__all__ = ["RECORD"]
