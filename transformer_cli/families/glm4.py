"""GLM-4 (Glm4ForCausalLM, GLM-4-0414): four RMSNorms a block (Gemma 2's sandwich: post_self_attn_layernorm after
the attention, post_mlp_layernorm after the MLP), rotary on interleaved pairs of the first half of each head
(partial_rotary_factor 0.5), biases on q, k and v (attention_bias) but not o, the gate and up projections fused.
Its GGUF file (glm4) holds Gemma 2's four norms by name, Q and K unpermuted (llama.cpp's glm4 turns adjacent pairs,
as GLM does), the fused gate and up as ffn_up, the rotated dims as rope.dimension_count; GLM-4V's M-RoPE sections
(rope.dimension_sections) are refused."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import GLM4
from .config_keys import shared_keys
from .gemma import GGUF2_LAYOUT
from .keys import Keys
from .layout import Family
from .parts import llama_like
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    plain = llama_like(c, c.count("num_key_value_heads", 2), 128, 1.5625e-07, False, 131072, partial=0.5)
    bias = c.flag("attention_bias", True)
    biases = {"attention_bias": bias} | ({"out_bias": False} if bias else {})
    return plain | biases | {"norm": "sandwich", "rope_pairing": "interleaved"}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> GLM-4's config.json."""
    own = {"attention_bias": spec.attention_bias, "hidden_act": "silu", "partial_rotary_factor": spec.rope_fraction}
    return shared_keys(spec) | own  # (GLM-4's default factor is 0.5: 1.0 written too)


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's sizes, q, k, v biases and partial rotary, Gemma 2's four norms, GLM's adjacent pairs."""
    if c.has("rope.dimension_sections"):
        raise c.refuse("rope.dimension_sections", c.data["rope.dimension_sections"], "tfm reads GLM-4's text rotary")
    return spec | {"norm": "sandwich", "rope_pairing": "interleaved"}


GATE_UP = (("ffn_up.weight", ("ff.W1", "ff.W3"), lambda spec: 1),)  # [gate; up] rows, as the checkpoint's
GGUF_LAYOUT = Family("blk.{i}.", GGUF2_LAYOUT.names, GGUF2_LAYOUT.globals_, fused=GATE_UP)
RECORD = Record("glm4", "Glm4ForCausalLM", spec, GLM4, config, Gguf("glm4", GGUF_LAYOUT, gguf_spec), config_alone=True)

__all__ = ["RECORD"]
