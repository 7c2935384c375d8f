"""OLMoE (OlmoeForCausalLM, OLMoE-1B-7B): OLMo 2's query and key norms over all heads together inside LLaMA's
pre-norm block, every layer routing to E experts of intermediate_size (the top k of a softmax over all E, not
renormalised unless norm_topk_prob), Qwen3-MoE's checkpoint names; clip_qkv (the published model's is null) clamps
q, k and v after their norms (qkv_clip). FlexOlmo (FlexOlmoForCausalLM): OLMoE's experts in OLMo 2's block (each
sublayer's output normalised). OLMoE's GGUF file (olmoe) holds Qwen3-MoE's stacked experts and the norms over all
heads; the converter writes neither clip_qkv nor norm_topk_prob, and llama.cpp's olmoe graph neither clamps nor
renormalises, so a model with either is refused when written (its GGUF reads back as another model)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import shared_keys
from .expert_checkpoints import FLEX_OLMO, QWEN_MOE
from .gguf_layout import LLAMA_EXPERTS
from .keys import Keys
from .parts import llama_like
from .record import Gguf, Record


def spec(c: Keys, theta: float = 10000.0) -> dict[str, Any]:
    """config.json -> spec (`theta`: the config class's default base)."""
    plain = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 4096, theta=theta)
    E, k = c.count("num_experts", 64), c.count("num_experts_per_tok", 8)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_experts = {E}")
    experts = {"E": E, "k": k, "expert_r": plain["r"], "router_renorm": c.flag("norm_topk_prob", False)}
    clip = {"qkv_clip": c.number("clip_qkv")} if c.has("clip_qkv") else {}
    return (
        plain
        | experts
        | clip
        | {"attention_bias": c.flag("attention_bias", False), "qk_norm": True, "qk_norm_over": "all"}
    )


def flex_olmo(c: Keys) -> dict[str, Any]:
    """config.json -> spec: OLMoE's with the norms after each sublayer (defaults: eps 1e-6, 7 experts of which 5,
    base 500,000)."""
    keys = {"rms_norm_eps": 1e-6, "num_experts": 7, "num_experts_per_tok": 5}
    c.ignored("clip_qkv", "5.24's FlexOlmoAttention does not clamp q, k and v")
    data = {k: v for k, v in c.data.items() if k != "clip_qkv"}
    return spec(Keys(keys | data, c.source, notes=c.notes), theta=500000.0) | {"norm": "output"}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> OLMoE's config.json (the experts of intermediate_size: expert_r, which is r)."""
    experts = {"num_experts": spec.E, "num_experts_per_tok": spec.k, "norm_topk_prob": spec.router_renorm}
    out = shared_keys(spec) | experts | {"intermediate_size": spec.expert_r, "attention_bias": spec.attention_bias}
    return out | ({"clip_qkv": spec.qkv_clip} if spec.qkv_clip is not None else {})


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's reader with experts: their size is feed_forward_length, no renormalisation, norms over all heads."""
    return spec | {"expert_r": spec["r"], "router_renorm": False, "qk_norm_over": "all"}


STACKED = ("gate_proj", "up_proj", "down_proj", "gate")  # (peft's names of the stacked experts and the router)
RECORDS = (
    Record(
        "olmoe",
        "OlmoeForCausalLM",
        spec,
        QWEN_MOE,
        config,
        Gguf("olmoe", LLAMA_EXPERTS, gguf_spec),
        lora_stacked=STACKED,
        config_alone=True,
    ),
    Record("flex_olmo", "FlexOlmoForCausalLM", flex_olmo, FLEX_OLMO, config, lora_stacked=STACKED, config_alone=True),
)

__all__ = ["RECORDS"]
