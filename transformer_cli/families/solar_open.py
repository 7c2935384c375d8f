"""Solar Open (SolarOpenForCausalLM, Upstage): GLM-4.5's mixture (glm4_moe.py: DeepSeek-V3's sigmoid router and
shared experts) in every layer, under LLaMA's attention turning whole heads (biases on q, k and v with
attention_bias). transformers 5.24 keeps first_k_dense_replace and use_qk_norm out of its config class: they are
stored and never used, and tfm follows it and says so. A partial_rotary_factor below 1 shrinks its rotary table
without slicing the heads (its forward fails), so tfm refuses it. Its GGUF file is GLM-4.5's (glm4moe): such a file
goes back to a folder as GLM-4.5's config, the same model."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import shared_keys
from .deepseek import expert_keys
from .expert_checkpoints import DEEPSEEK_MOE_GQA
from .glm4_moe import GGUF, routed
from .keys import Keys
from .parts import llama_like
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: 128 experts of 1,280, 8 chosen, one shared, heads of 128, base 1e6; no
    intermediate_size: no layer is dense)."""
    c.ignored("first_k_dense_replace", "5.24's SolarOpenConfig has no dense layers: every layer is routed")
    c.ignored("use_qk_norm", "5.24's SolarOpenAttention has no query/key norms")
    fraction = c.fraction("partial_rotary_factor", 1.0)
    if fraction != 1.0:
        raise c.refuse("partial_rotary_factor", fraction, "transformers 5.24's Solar Open turns whole heads only")
    data = {k: v for k, v in c.data.items() if k != "first_k_dense_replace"}
    keys = Keys(data | {"intermediate_size": c.count("moe_intermediate_size", 1280)}, c.source, notes=c.notes)
    plain = llama_like(keys, c.count("num_key_value_heads", 8), 128, 1e-5, False, 131072, theta=1e6)
    bias = c.flag("attention_bias", False)
    spec = plain | {"attention_bias": bias} | ({"out_bias": False} if bias else {})
    return routed(keys, spec, E=128, shared=1, size=1280, dense=0, scale=1.0)


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Solar Open's config.json."""
    out = shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": "silu"} | expert_keys(spec)
    return {k: v for k, v in out.items() if k not in ("intermediate_size", "first_k_dense_replace")}


_LORA = ("gate_proj", "up_proj", "down_proj", "gate")
RECORD = Record(
    "solar_open", "SolarOpenForCausalLM", spec, DEEPSEEK_MOE_GQA, config, GGUF, lora_stacked=_LORA, config_alone=True
)

__all__ = ["RECORD"]
