"""GGUF mixtures of experts: Mixtral's files (architecture llama with expert_count), Qwen2-MoE's (a gated shared
expert), Qwen3-MoE's and PhiMoE's, each expert matrix stacked in one tensor. What llama.cpp hard-codes is read so:
Qwen2-MoE does not renormalise the chosen experts' weights, Qwen3-MoE does; every block routes.

PhiMoE (Phi-3.5-MoE) is read as its own model, as transformers runs it, from what the file holds: llama.cpp routes
these files by a softmax over the top two, renormalised, where the model's router is sparsemixer; the file does not
hold sparsemixer's threshold (router_jitter_noise: transformers' default 0.01 is taken) nor config.json's
short_mscale and long_mscale (the converter writes rope.scaling.attn_factor from Phi-3's formula instead: that is
the factor read); and transformers 5.24 turns PhiMoE's positions by the short factors at every length, so the long
factors the file holds are not used (tfm's Hugging Face PhiMoE does the same)."""

from __future__ import annotations

from typing import Any

from ..families.gguf_layout import LLAMA_EXPERTS
from ..families.keys import Keys
from ..spec.rope_scaling import longrope_attention_factor
from .base import LLAMA_LAYOUT, Arch, stacked_experts
from .header import Header
from .others import PHI3, phi3

MIXTRAL = LLAMA_EXPERTS


def phimoe(c: Keys, header: Header) -> dict[str, Any]:
    """PhiMoE: Phi-3's sizes, window and LongRoPE with LayerNorms (biases; eps the file's rms epsilon, as
    config.json's rms_norm_eps is), biases on q, k, v, o and the head where the file has them, and expert_count
    experts of feed_forward_length, two chosen by sparsemixer."""
    spec = phi3(c, header)
    k = c.count("expert_used_count", 2)
    if k != 2:
        raise c.refuse("expert_used_count", k, "PhiMoE's sparsemixer chooses two experts whatever this key says")
    if spec.get("rope_scaling") == "longrope":  # (phi3 keeps the file's factor only where it is not the formula's)
        derived = longrope_attention_factor(spec["rope_factor"], spec["rope_original_max_len"])
        spec |= {
            "rope_long_factor": spec["rope_short_factor"],
            "rope_attention_factor": spec.get("rope_attention_factor", derived),
        }
    return spec | {
        "norm_type": "layernorm",
        "attention_bias": "blk.0.attn_q.bias" in header.tensors,
        "head_bias": "output.bias" in header.tensors,
        "E": c.count("expert_count"),
        "k": 2,
        "router_score": "sparsemixer",
        "router_jitter": 0.01,
    }


_PHIMOE_NORMS = {"norm1.beta": "attn_norm.bias", "norm2.beta": "ffn_norm.bias"}
PHIMOE = Arch(
    phimoe,
    stacked_experts(
        LLAMA_LAYOUT.names | _PHIMOE_NORMS,
        LLAMA_LAYOUT.globals_ | {"final_norm.beta": "output_norm.bias", "head.b": "output.bias"},
    ),
    skipped=PHI3.skipped,
)

__all__ = ["MIXTRAL", "PHIMOE"]
