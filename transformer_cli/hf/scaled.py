"""LLaMA's layout with a number that scales the stream: Cohere's parallel block with its logit scale (Granite's four
multipliers are families/granite.py)."""

from __future__ import annotations

from typing import Any

from ..families.keys import Keys
from ..families.parts import llama_like


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


__all__ = ["cohere"]
