"""GLM-4 (Glm4ForCausalLM, GLM-4-0414): four RMSNorms a block (Gemma 2's sandwich: post_self_attn_layernorm after
the attention, post_mlp_layernorm after the MLP), rotary on interleaved pairs of the first half of each head
(partial_rotary_factor 0.5), biases on q, k and v (attention_bias) but not o, the gate and up projections fused.
llama.cpp's glm4 architecture is not read or written yet."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import GLM4
from .config_keys import shared_keys
from .keys import Keys
from .parts import llama_like
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    plain = llama_like(c, c.count("num_key_value_heads", 2), 128, 1.5625e-07, False, 131072, partial=0.5)
    bias = c.flag("attention_bias", True)
    biases = {"attention_bias": bias} | ({"out_bias": False} if bias else {})
    return plain | biases | {"norm": "sandwich", "rope_pairing": "interleaved"}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> GLM-4's config.json."""
    return shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": "silu"}


RECORD = Record("glm4", "Glm4ForCausalLM", spec, GLM4, config, config_alone=True)

__all__ = ["RECORD"]
