"""OLMoE (OlmoeForCausalLM, OLMoE-1B-7B): OLMo 2's query and key norms over all heads together inside LLaMA's
pre-norm block, every layer routing to E experts of intermediate_size (the top k of a softmax over all E, not
renormalised unless norm_topk_prob), Qwen3-MoE's checkpoint names. clip_qkv (the published model's is null) clamps
q, k and v in transformers; tfm refuses it. llama.cpp's olmoe architecture is not read or written yet."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import QWEN_MOE
from .config_keys import shared_keys
from .keys import Keys
from .parts import llama_like
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    if c.has("clip_qkv"):
        raise c.refuse("clip_qkv", c.data["clip_qkv"], "tfm's attention does not clamp q, k and v")
    plain = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 4096)
    E, k = c.count("num_experts", 64), c.count("num_experts_per_tok", 8)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_experts = {E}")
    experts = {"E": E, "k": k, "expert_r": plain["r"], "router_renorm": c.flag("norm_topk_prob", False)}
    return plain | experts | {"attention_bias": c.flag("attention_bias", False), "qk_norm": True, "qk_norm_over": "all"}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> OLMoE's config.json (the experts of intermediate_size: expert_r, which is r)."""
    experts = {"num_experts": spec.E, "num_experts_per_tok": spec.k, "norm_topk_prob": spec.router_renorm}
    return shared_keys(spec) | experts | {"intermediate_size": spec.expert_r, "attention_bias": spec.attention_bias}


RECORD = Record(
    "olmoe",
    "OlmoeForCausalLM",
    spec,
    QWEN_MOE,
    config,
    lora_stacked=("gate_proj", "up_proj", "down_proj", "gate"),
    config_alone=True,
)

__all__ = ["RECORD"]
