"""GLM-4.5 (Glm4MoeForCausalLM) and GLM-4.7-Flash (Glm4MoeLiteForCausalLM): DeepSeek-V3's mixture (deepseek.py:
sigmoid scores, a correction bias to choose, groups, the chosen weights renormalised and scaled, shared experts,
dense layers first) under GQA attention (GLM-4.5: half of each head turned by rotate_half, biases on q, k and v, an
optional RMSNorm per query and key head, use_qk_norm) or under DeepSeek-V3's latent attention (the Lite model,
whose dense and routed layers mlp_layer_types lists). transformers holds GLM-4.5's experts stacked and reads them
by Qwen2-MoE's names, DeepSeek's. GLM-4.5's GGUF file (glm4moe, Solar Open's too) is LLaMA's names with the
pre-feedforward norm as post_attention_norm, the experts stacked and DeepSeek's router keys (sigmoid always); its
block_count counts the multi-token-prediction layers (nextn_predict_layers, transformers' default 1) after the
model's, which tfm reads past. GLM-4.7-Flash's GGUF file is DeepSeek's (deepseek2): tfm writes its dense layers and
sigmoid scoring there; the converter, from transformers' config (mlp_layer_types, no scoring_func), writes neither
(llama.cpp then takes sigmoid for the published shape alone), so such a file reads as a softmax router over
routed layers."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import feedforward_kinds, shared_keys
from .deepseek import GGUF as DEEPSEEK_GGUF
from .deepseek import config as deepseek_config
from .deepseek import expert_keys, latent_model, routed_experts, router_groups, router_scale
from .deepseek_gguf import SIGMOID as GATED_BY_SIGMOID
from .deepseek_gguf import routed_layout, routed_metadata, routed_spec
from .expert_checkpoints import DEEPSEEK, DEEPSEEK_MOE_GQA
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .parts import llama_like
from .record import Gguf, Record

SIGMOID = {"router_score": "sigmoid", "router_bias": True}


def glm4_moe(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: GLM-4.5's, 128 experts of 1,408, 8 chosen, one shared, one dense layer)."""
    plain = llama_like(c, c.count("num_key_value_heads", 8), None, 1e-5, False, 131072, partial=0.5)
    bias = c.flag("attention_bias", False)
    spec = plain | {"attention_bias": bias} | ({"out_bias": False} if bias else {})
    if c.flag("use_qk_norm", False):
        spec["qk_norm"] = True
    return spec | routed(c, spec, E=128, shared=1, size=1408, dense=1, scale=1.0)


def glm4_moe_lite(c: Keys) -> dict[str, Any]:
    """config.json -> spec: DeepSeek-V3's latent attention and experts, the layers' kinds from mlp_layer_types
    (default: the first dense, the rest routed)."""
    defaults = {"qk_nope_head_dim": 192, "v_head_dim": 256, "rms_norm_eps": 1e-5, "num_experts_per_tok": 4}
    if c.has("head_dim") and not c.has("qk_rope_head_dim"):  # (its config class's name for the rotated part)
        defaults["qk_rope_head_dim"] = c.data["head_dim"]
    keys = Keys(defaults | c.data | {"first_k_dense_replace": 1}, c.source, notes=c.notes)
    spec = latent_model(
        keys,
        q_rank=768,
        E=64,
        shared=1,
        size=1536,
        dense=1,
        max_positions=202752,
        interleaved=c.flag("rope_interleave", True),
        listed=True,
    )
    return spec | routed_router(c, spec, 1.8)


def routed(c: Keys, spec: dict[str, Any], E: int, shared: int, size: int, dense: int, scale: float) -> dict[str, Any]:
    """GLM-4.5's experts, laid out and routed as DeepSeek-V3's."""
    spec = spec | routed_experts(c, spec["N"], E, shared, size, dense)
    return spec | routed_router(c, spec, scale)


def routed_router(c: Keys, spec: dict[str, Any], scale: float) -> dict[str, Any]:
    """DeepSeek-V3's router keys (sigmoid, correction bias, groups, renormalised, scaled) where `spec` routes."""
    if "E" not in spec:
        return {}
    return (
        SIGMOID
        | {"router_renorm": c.flag("norm_topk_prob", True)}
        | router_groups(c, spec, 1, 1, "top2")
        | router_scale(c, scale)
    )


def glm4_moe_config(spec: Spec) -> dict[str, Any]:
    """spec -> GLM-4.5's config.json."""
    out = shared_keys(spec) | {"attention_bias": spec.attention_bias, "use_qk_norm": spec.qk_norm}
    return out | {"hidden_act": "silu", "partial_rotary_factor": spec.rope_fraction} | expert_keys(spec)


def glm4_moe_lite_config(spec: Spec) -> dict[str, Any]:
    """spec -> GLM-4.7-Flash's config.json: DeepSeek-V3's keys, the layers' kinds as mlp_layer_types."""
    out = deepseek_config(spec)
    return out | {"mlp_layer_types": ["sparse" if k == "routed" else "dense" for k in feedforward_kinds(spec)]}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's reader (q, k, v biases and per-head norms where the file has them, the partial rotary) over the
    model's blocks, DeepSeek's mixture scored by sigmoid."""
    N = spec["N"] - c.index("nextn_predict_layers", 0)
    return spec | {"N": N} | routed_spec(c, header, N, GATED_BY_SIGMOID)


GGUF = Gguf(
    "glm4moe",
    routed_layout(LLAMA_LAYOUT.names | {"norm2.gamma": "post_attention_norm.weight"}, LLAMA_LAYOUT.globals_),
    gguf_spec,
    routed_metadata,
)
_LORA = ("gate_proj", "up_proj", "down_proj", "gate")
RECORDS = (
    Record(
        "glm4_moe",
        "Glm4MoeForCausalLM",
        glm4_moe,
        DEEPSEEK_MOE_GQA,
        glm4_moe_config,
        GGUF,
        lora_stacked=_LORA,
        config_alone=True,
    ),
    Record(
        "glm4_moe_lite",
        "Glm4MoeLiteForCausalLM",
        glm4_moe_lite,
        DEEPSEEK,
        glm4_moe_lite_config,
        DEEPSEEK_GGUF,
        lora_stacked=_LORA,
        config_alone=True,
    ),
)

__all__ = ["RECORDS"]
