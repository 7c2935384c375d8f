"""LLaMA's layout with numbers that scale the streams: Granite's four multipliers (embedding, attention scores,
residual, logits) and Cohere's parallel block with its logit scale."""

from __future__ import annotations

from typing import Any

from .keys import Keys
from .parts import llama_like


def granite(c: Keys) -> dict[str, Any]:
    """GraniteForCausalLM: LLaMA's block with the embedded columns times embedding_multiplier, the scores times
    attention_multiplier (in place of 1/sqrt(m)), each sublayer's output times residual_multiplier as it joins the
    residual, and the logits divided by logits_scaling; biases with attention_bias and mlp_bias."""
    spec = llama_like(c, c.count("num_key_value_heads", None), None, 1e-6, False, 2048)
    embedding = c.number("embedding_multiplier", 1.0)
    return spec | {
        "attention_bias": c.flag("attention_bias", False), "ff_bias": c.flag("mlp_bias", False),
        "scale": c.number("attention_multiplier", 1.0), "embed_scale": "none" if embedding == 1.0 else embedding,
        "residual_scale": c.number("residual_multiplier", 1.0), "logit_scale": 1.0 / c.number("logits_scaling", 1.0),
    }  # fmt: skip


def cohere(c: Keys) -> dict[str, Any]:
    """CohereForCausalLM (Command R): one LayerNorm without bias shared by parallel attention and MLP, rotary in
    interleaved pairs, biases with attention_bias, a LayerNorm per query and key head with use_qk_norm, the
    logits times logit_scale, a tied head."""
    spec = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, True, 8192)
    qk = {"qk_norm": True, "qk_norm_over": "per_head"} if c.flag("use_qk_norm", False) else {}
    return spec | qk | {
        "norm_type": "layernorm", "norm_bias": False, "norm_eps": c.number("layer_norm_eps", 1e-5),
        "parallel": True, "shared_norm": True, "rope_pairing": "interleaved",
        "attention_bias": c.flag("attention_bias", False), "logit_scale": c.number("logit_scale", 0.0625),
    }  # fmt: skip


__all__ = ["cohere", "granite"]
