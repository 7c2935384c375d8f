"""The mixtures of experts: gpt-oss (attention sinks, biased experts with a clamped SwiGLU, sliding and full layers),
and PhiMoE (LayerNorms, biases, its sparsemixer router, LongRoPE as transformers runs it)."""

from __future__ import annotations

from typing import Any

from ..families.keys import Keys
from ..families.parts import llama_like, typed_layers, window_key

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


def phimoe(c: Keys) -> dict[str, Any]:
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
