"""gpt-oss (GptOssForCausalLM): attention sinks, biased experts with a clamped SwiGLU, sliding and full layers.

Its GGUF file (gpt-oss) as convert_hf_to_gguf.py writes it: each expert matrix stacked (E, out, in), the fused
gate_up split into gate (its even rows) and up (its odd rows), their biases likewise, the sinks attn_sinks, the router
with its bias, the norm before the experts named post_attention_norm; OpenAI's MXFP4 experts stored as GGML's
MXFP4 (the gguf package dequantises them). What the file does not hold is read as llama.cpp reads it: the
even layers slide and the odd ones see everything, the SwiGLU's alpha 1.702 and clamp 7, the scores scaled by
1/sqrt(head size); YaRN's correction range is not rounded, as gpt-oss's config says (truncate: false)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import rope_keys, size_keys
from .expert_checkpoints import GPT_OSS
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .layout import Family
from .parts import llama_like, typed_layers
from .record import Gguf, Record

GPT_OSS_ROPE = {
    "rope_type": "yarn",
    "factor": 32.0,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "truncate": False,
    "original_max_position_embeddings": 4096,
}  # GptOssConfig's default rope_parameters (theta 150000)


def spec(c: Keys) -> dict[str, Any]:
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


def config(spec: Spec) -> dict[str, Any]:
    """spec -> the config.json: the experts, the window and the layers' kinds, the clamp, YaRN's truncate."""
    out = size_keys(spec) | rope_keys(spec)
    if spec.norm_type == "layernorm":
        out["layer_norm_eps"] = spec.norm_eps
    layers = spec.attention_layers or ("full",) * spec.N
    out |= {
        "attention_bias": True,
        "num_local_experts": spec.E,
        "num_experts_per_tok": spec.k,
        "sliding_window": spec.window,
        "layer_types": [f"{kind}_attention" for kind in layers],
        "swiglu_limit": spec.swiglu_limit,
    }
    if spec.rope_scaling == "yarn":
        out["rope_scaling"]["truncate"] = spec.rope_truncate
    if spec.norm_type == "rmsnorm":
        out["rms_norm_eps"] = spec.norm_eps
    return out


_one = lambda spec: 1  # noqa: E731
_EXPERTS = {
    "ffn_gate_exps.weight": "ff.W1",
    "ffn_up_exps.weight": "ff.W3",
    "ffn_down_exps.weight": "ff.W2",
    "ffn_gate_exps.bias": "ff.b1",
    "ffn_up_exps.bias": "ff.b3",
    "ffn_down_exps.bias": "ff.b2",
}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """gpt-oss: LLaMA's reading (`spec`) with the clamped, biased experts, the sinks, the router's bias."""
    spec = spec | {"feedforward": "clamped", "ff_bias": True, "attn_sinks": True, "router_logit_bias": True}
    spec.pop("out_bias", None)  # (q, k, v and o all have biases: attention_bias's default)
    if spec.get("rope_scaling") == "yarn":
        spec["rope_truncate"] = False
    if c.has("attention.sliding_window"):
        spec["window"] = c.count("attention.sliding_window")
        spec["attention_layers"] = ["sliding" if i % 2 == 0 else "full" for i in range(spec["N"])]
    return spec


GGUF_LAYOUT = Family(
    "blk.{i}.",
    {ours: theirs for ours, theirs in LLAMA_LAYOUT.names.items() if not ours.startswith(("ff.", "norm2"))}
    | {
        "norm2.gamma": "post_attention_norm.weight",
        "attention.sinks": "attn_sinks.weight",
        "ff.router": "ffn_gate_inp.weight",
        "ff.router_b": "ffn_gate_inp.bias",
    },
    LLAMA_LAYOUT.globals_,
    fused=tuple((theirs, (ours,), _one) for theirs, ours in _EXPERTS.items()),
    stacked=frozenset(_EXPERTS),
)
RECORD = Record(
    "gpt_oss", "GptOssForCausalLM", spec, GPT_OSS, config, Gguf("gpt-oss", GGUF_LAYOUT, gguf_spec), config_alone=True
)

__all__ = ["RECORD"]
