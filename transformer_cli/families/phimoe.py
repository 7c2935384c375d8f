"""PhiMoE (Phi-3.5-MoE, PhimoeForCausalLM): Mixtral's blocks with LayerNorms, biases, its sparsemixer router and
LongRoPE as transformers runs it. peft targets its linear modules, the router (`router`) among them.

Its GGUF file (phimoe) is read as its own model, as transformers runs it, from what the file holds: llama.cpp routes
these files by a softmax over the top two, renormalised, where the model's router is sparsemixer; the file does not
hold sparsemixer's threshold (router_jitter_noise: transformers' default 0.01 is taken) nor config.json's
short_mscale and long_mscale (the converter writes rope.scaling.attn_factor from Phi-3's formula instead: that is
the factor read); and transformers 5.24 turns PhiMoE's positions by the short factors at every length, so the long
factors the file holds are not used (tfm's Hugging Face PhiMoE does the same). The reader starts from Phi-3's
(its sizes, window and LongRoPE); the converter writes the window always (0: none) and the LayerNorms' eps as
layer_norm_rms_epsilon (config.json's rms_norm_eps)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.rope_scaling import longrope_attention_factor
from .config_keys import rope_keys, size_keys
from .expert_checkpoints import PHIMOE
from .gguf_layout import LLAMA_LAYOUT, stacked_experts
from .keys import Keys
from .parts import llama_like, window_key
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """PhimoeForCausalLM: Mixtral's blocks with LayerNorms (biases, eps rms_norm_eps), biases on q, k, v, o with
    attention_bias and on the head with lm_head_bias, and the sparsemixer router (two experts; router_jitter_noise
    its threshold). LongRoPE as transformers 5.24 runs it: the short factors at every length (its forward passes
    no length to the longrope function) and cos, sin times short_mscale or long_mscale, which tfm needs equal."""
    E, k = c.count("num_local_experts", 16), c.count("num_experts_per_tok", 2)
    if k != 2:
        raise c.refuse("num_experts_per_tok", k, "PhiMoE's sparsemixer chooses two experts whatever this key says")
    spec = llama_like(c, c.count("num_key_value_heads", 8), None, 1e-5, False, 4096 * 32, theta=1e6)
    if spec.get("rope_scaling") == "longrope":
        p = c.nested("rope_scaling") or c.nested("rope_parameters")
        assert p is not None  # a longrope spec came from one of them
        short, long = p.number("short_mscale"), p.number("long_mscale")
        if long != short:
            raise p.refuse("long_mscale", long, f"tfm's longrope has one attention factor (short_mscale {short})")
        spec |= {"rope_long_factor": spec["rope_short_factor"], "rope_attention_factor": short}
    bias = c.flag("attention_bias", False)
    return (
        spec
        | window_key(c.nullable_count("sliding_window", None))
        | {
            "norm_type": "layernorm",
            "attention_bias": bias,
            "head_bias": c.flag("lm_head_bias", False),
            "E": E,
            "k": 2,
            "router_score": "sparsemixer",
            "router_jitter": c.number("router_jitter_noise", 0.01),
        }
    )


def config(spec: Spec) -> dict[str, Any]:
    """spec -> the config.json: LayerNorms whose eps is rms_norm_eps, the head's bias, sparsemixer's threshold, and
    LongRoPE's attention factor as short_mscale and long_mscale (its original context in rope_scaling)."""
    rope = rope_keys(spec)
    out = size_keys(spec) | rope
    out |= {
        "rms_norm_eps": spec.norm_eps,
        "lm_head_bias": spec.head_bias,
        "attention_bias": spec.attention_bias,
        "sliding_window": spec.window,
        "num_local_experts": spec.E,
        "num_experts_per_tok": spec.k,
        "router_jitter_noise": spec.router_jitter,
        "hidden_act": "silu",
    }
    if spec.rope_scaling == "longrope":
        out["rope_scaling"] = rope["rope_scaling"] | {
            "short_mscale": spec.rope_attention_factor,
            "long_mscale": spec.rope_attention_factor,
            "original_max_position_embeddings": spec.rope_original_max_len,
        }
    return out


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """PhiMoE: Phi-3's sizes, window and LongRoPE (`spec`) with LayerNorms (biases; eps the file's rms epsilon, as
    config.json's rms_norm_eps is), biases on q, k, v, o and the head where the file has them, and expert_count
    experts of feed_forward_length, two chosen by sparsemixer."""
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


GGUF_LAYOUT = stacked_experts(
    LLAMA_LAYOUT.names | {"norm1.beta": "attn_norm.bias", "norm2.beta": "ffn_norm.bias"},
    LLAMA_LAYOUT.globals_ | {"final_norm.beta": "output_norm.bias", "head.b": "output.bias"},
)
RECORD = Record(
    "phimoe",
    "PhimoeForCausalLM",
    spec,
    PHIMOE,
    config,
    Gguf(
        "phimoe",
        GGUF_LAYOUT,
        gguf_spec,
        base="phi3_like",
        skipped=("rope_factors_short.weight", "rope_factors_long.weight"),
        window_always=True,
        llama_cpp_slides=False,
        rms_epsilon=True,
    ),
    lora_router="router",
    config_alone=True,
)

__all__ = ["RECORD"]
