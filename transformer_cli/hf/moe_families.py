"""gpt-oss: attention sinks, biased experts with a clamped SwiGLU, sliding and full layers."""

from __future__ import annotations

from typing import Any

from ..families.keys import Keys
from ..families.parts import llama_like, typed_layers

GPT_OSS_ROPE = {
    "rope_type": "yarn",
    "factor": 32.0,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "truncate": False,
    "original_max_position_embeddings": 4096,
}  # GptOssConfig's default rope_parameters (theta 150000)


def gpt_oss(c: Keys) -> dict[str, Any]:
    """GptOssForCausalLM: biases on q, k, v and o, a sink logit per head, every layer's E experts of
    intermediate_size with biases and a clamped SwiGLU (swiglu_alpha, swiglu_limit), the top k of the router's
    biased scores softmaxed, sliding (128) and full layers alternating, YaRN positions."""
    if not (c.has("rope_scaling") or c.has("rope_parameters")):  # what GptOssConfig fills in
        c = Keys(c.data | {"rope_parameters": GPT_OSS_ROPE}, c.source)
    spec = llama_like(c, c.count("num_key_value_heads", 8), 64, 1e-5, False, 131072, theta=150000.0)
    E, k = c.count("num_local_experts", 128), c.count("num_experts_per_tok", 4)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_local_experts = {E}")
    N = spec["N"]
    kinds = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(N)]
    return spec | {
        "attention_bias": c.flag("attention_bias", True),
        "attn_sinks": True,
        "feedforward": "clamped",
        "ff_bias": True,
        "swiglu_alpha": c.number("swiglu_alpha", 1.702),
        "swiglu_limit": c.number("swiglu_limit", 7.0),
        "E": E,
        "k": k,
        "router_logit_bias": True,
        **typed_layers(c, N, c.nullable_count("sliding_window", 128), kinds),
    }
