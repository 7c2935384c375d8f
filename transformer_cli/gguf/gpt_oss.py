"""GGUF gpt-oss as convert_hf_to_gguf.py writes it: each expert matrix stacked (E, out, in), the fused gate_up
split into gate (its even rows) and up (its odd rows), their biases likewise, the sinks attn_sinks, the router
with its bias, the norm before the experts named post_attention_norm; OpenAI's MXFP4 experts stored as GGML's
MXFP4 (the gguf package dequantises them). What the file does not hold is read as llama.cpp reads it: the
even layers slide and the odd ones see everything, the SwiGLU's alpha 1.702 and clamp 7, the scores scaled by
1/sqrt(head size); YaRN's correction range is not rounded, as gpt-oss's config says (truncate: false)."""

from __future__ import annotations

from typing import Any

from ..families.keys import Keys
from ..families.layout import Family
from .base import LLAMA_LAYOUT, Arch, llama
from .header import Header

_one = lambda spec: 1  # noqa: E731
_EXPERTS = {
    "ffn_gate_exps.weight": "ff.W1",
    "ffn_up_exps.weight": "ff.W3",
    "ffn_down_exps.weight": "ff.W2",
    "ffn_gate_exps.bias": "ff.b1",
    "ffn_up_exps.bias": "ff.b3",
    "ffn_down_exps.bias": "ff.b2",
}


def gpt_oss(c: Keys, header: Header) -> dict[str, Any]:
    spec = llama(c, header) | {"feedforward": "clamped", "ff_bias": True, "attn_sinks": True, "router_logit_bias": True}
    spec.pop("out_bias", None)  # (q, k, v and o all have biases: attention_bias's default)
    if spec.get("rope_scaling") == "yarn":
        spec["rope_truncate"] = False
    if c.has("attention.sliding_window"):
        spec["window"] = c.count("attention.sliding_window")
        spec["attention_layers"] = ["sliding" if i % 2 == 0 else "full" for i in range(spec["N"])]
    return spec


GPT_OSS = Arch(
    gpt_oss,
    Family(
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
    ),
)

__all__ = ["GPT_OSS"]
