"""Granite (GraniteForCausalLM): LLaMA's block with four numbers that scale the streams: the embedded columns times
embedding_multiplier, the scores times attention_multiplier (in place of 1/sqrt(m)), each sublayer's output times
residual_multiplier as it joins the residual, and the logits divided by logits_scaling; biases with attention_bias
(on q, k, v and o) and mlp_bias. Its checkpoint is LLaMA's; its GGUF file is LLaMA's (Q and K rows permuted for
llama.cpp's interleaved rotary) with the multipliers as attention.scale, embedding_scale, residual_scale and
logit_scale, which llama.cpp divides the logits by. GraniteMoE (GraniteMoeForCausalLM): Granite's block with
Mixtral's experts in every layer, GraniteMoeShared with an ungated shared expert beside them; their GGUF file
(granitemoe) is Granite's with the experts stacked (the converter splits input_linear into gate and up) and the
shared expert's gate, up and down (expert_shared_feed_forward_length)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import LLAMA
from .expert_checkpoints import GRANITE_MOE, GRANITE_MOE_SHARED
from .gguf_layout import LLAMA_LAYOUT, LLAMA_PERMUTED, LLAMA_REDO, stacked_experts
from .keys import Keys
from .parts import llama_like
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    spec = llama_like(c, c.count("num_key_value_heads", None), None, 1e-6, False, 2048)
    embedding = c.number("embedding_multiplier", 1.0)
    return spec | {
        "attention_bias": c.flag("attention_bias", False),
        "ff_bias": c.flag("mlp_bias", False),
        "scale": c.number("attention_multiplier", 1.0),
        "embed_scale": "none" if embedding == 1.0 else embedding,
        "residual_scale": c.number("residual_multiplier", 1.0),
        "logit_scale": 1.0 / c.number("logits_scaling", 1.0),
    }


def moe(c: Keys) -> dict[str, Any]:
    """GraniteMoeForCausalLM: Granite's block with E experts of intermediate_size in every layer, the softmax of the
    top k router logits (a softmax over all E renormalised over the k: router_renorm)."""
    E, k = c.count("num_local_experts", 8), c.count("num_experts_per_tok", 2)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_local_experts = {E}")
    base = spec(c)
    return base | {"E": E, "k": k, "expert_r": base["r"], "router_renorm": True}


def moe_shared(c: Keys) -> dict[str, Any]:
    """GraniteMoeSharedForCausalLM: GraniteMoE's with an ungated shared expert of shared_intermediate_size (0: none)
    added to the experts' output."""
    shared = c.index("shared_intermediate_size", 0)  # (0, the default: no shared expert)
    return moe(c) | ({"shared_r": shared} if shared else {})


def moe_shared_config(spec: Spec) -> dict[str, Any]:
    """spec -> GraniteMoeShared's config.json keys of its own."""
    return moe_config(spec) | {"shared_intermediate_size": spec.shared_r or 0}


def moe_config(spec: Spec) -> dict[str, Any]:
    """spec -> GraniteMoE's config.json keys of its own (the experts of intermediate_size: expert_r)."""
    experts = {"num_local_experts": spec.E, "num_experts_per_tok": spec.k, "intermediate_size": spec.expert_r}
    return config(spec) | experts


def config(spec: Spec) -> dict[str, Any]:
    """spec -> the config.json keys of Granite's own (a scale of 1/sqrt(m) as its number)."""
    return {
        "attention_bias": spec.attention_bias,
        "mlp_bias": spec.ff_bias,
        "hidden_act": "silu",
        "attention_multiplier": spec.scale if isinstance(spec.scale, float) else spec.m**-0.5,
        "embedding_multiplier": spec.embed_scale if isinstance(spec.embed_scale, float) else 1.0,
        "residual_multiplier": spec.residual_scale,
        "logits_scaling": 1.0 / spec.logit_scale,
    }


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """GGUF keys -> spec: LLaMA's (`spec`) with biases where the file has them and the four multipliers (a missing
    one is 1, or for the attention 1/sqrt(m), as llama.cpp reads them)."""
    spec = spec | {"ff_bias": "blk.0.ffn_up.bias" in header.tensors}
    if spec.get("out_bias"):  # (Granite's attention_bias is on all four projections: the default)
        del spec["out_bias"]
    embed, residual = c.number("embedding_scale", 1.0), c.number("residual_scale", 1.0)
    spec |= {
        "embed_scale": "none" if embed == 1.0 else embed,
        "residual_scale": residual,
        "logit_scale": 1.0 / c.number("logit_scale", 1.0),
    }
    if c.has("attention.scale"):
        spec["scale"] = c.number("attention.scale")
    return spec


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> the granite.* keys beyond LLaMA's (llama.cpp divides the logits by its logit_scale)."""
    embed = spec.embed_scale if isinstance(spec.embed_scale, (int, float)) else 1.0
    out = {
        "embedding_scale": float(embed),
        "residual_scale": float(spec.residual_scale),
        "logit_scale": 1.0 / float(spec.logit_scale),
    }
    if isinstance(spec.scale, (int, float)):
        out["attention.scale"] = float(spec.scale)
    return out


def gguf_moe(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Granite's reader with the experts of feed_forward_length, renormalised, and a shared expert where the file
    has one."""
    shared = c.count("expert_shared_feed_forward_length", None) if c.has("expert_shared_feed_forward_length") else 0
    experts = {"expert_r": spec["r"], "router_renorm": True} | ({"shared_r": shared} if shared else {})
    return gguf_spec(c, header, spec) | experts


def gguf_moe_metadata(spec: Spec) -> dict[str, Any]:
    return gguf_metadata(spec) | ({"expert_shared_feed_forward_length": spec.shared_r} if spec.shared_r else {})


GRANITE_MOE_GGUF = Gguf(
    "granitemoe",
    stacked_experts(LLAMA_LAYOUT.names, LLAMA_LAYOUT.globals_, shared=True),
    gguf_moe,
    gguf_moe_metadata,
    transforms=LLAMA_PERMUTED,
    redo=LLAMA_REDO,
    model_type=lambda spec: "granitemoeshared" if spec.shared_r else "granitemoe",
)
RECORDS = (
    Record(
        "granite",
        "GraniteForCausalLM",
        spec,
        LLAMA,
        config,
        Gguf("granite", LLAMA_LAYOUT, gguf_spec, gguf_metadata, transforms=LLAMA_PERMUTED, redo=LLAMA_REDO),
    ),
    Record("granitemoe", "GraniteMoeForCausalLM", moe, GRANITE_MOE, moe_config, GRANITE_MOE_GGUF),
    Record(
        "granitemoeshared",
        "GraniteMoeSharedForCausalLM",
        moe_shared,
        GRANITE_MOE_SHARED,
        moe_shared_config,
        GRANITE_MOE_GGUF,
    ),
)

__all__ = ["RECORDS"]
