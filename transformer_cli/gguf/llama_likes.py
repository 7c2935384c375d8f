"""GGUF architectures that are LLaMA's block with a change, as convert_hf_to_gguf.py writes them and llama.cpp
reads them:

- OLMo 2: each sublayer's output normalised (post_attention_norm, post_ffw_norm), query and key norms over all
  heads together; llama.cpp turns halves, so the converter does not permute.
- Command-R (Cohere): one LayerNorm without bias shared by parallel attention and feedforward, rotary in adjacent
  pairs (Cohere's own pairing: no permutation), the logits times logit_scale, the head always tied; per-head query
  and key norms where the file holds them (llama.cpp loads them only for models of 64 or more layers).
- StableLM: LayerNorms with biases, a partial rotary in halves, per-head query and key norms stacked (H, m); the
  block is parallel where the file has no ffn_norm (llama.cpp decides so); no rope base is written (10000).
"""

from __future__ import annotations

from typing import Any

from ..families.keys import Keys
from ..families.layout import Family
from .base import LLAMA_LAYOUT, Arch, llama, partial_rotary, sizes
from .header import Header


def olmo2(c: Keys, header: Header) -> dict[str, Any]:
    """OLMo 2: LLaMA's sizes and rotary, no norm of a sublayer's input but one of its output, RMSNorms of all query
    and all key projections together (widths Hm and Gm)."""
    return llama(c, header) | {"norm": "output", "qk_norm": True, "qk_norm_over": "all"}


def command_r(c: Keys, header: Header) -> dict[str, Any]:
    spec = sizes(c, header) | {
        "positional": "rope", "rope_theta": c.number("rope.freq_base", 10000.0), "rope_pairing": "interleaved",
        "norm_type": "layernorm", "norm_bias": False, "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
        "parallel": True, "shared_norm": True, "feedforward": "gated", "activation": "silu", "ff_bias": False,
        "logit_scale": c.number("logit_scale", 0.0625), "tie_embeddings": True,
    }  # fmt: skip
    if "blk.0.attn_q.bias" in header.tensors:
        spec["attention_bias"] = True
    if "blk.0.attn_q_norm.weight" in header.tensors:
        spec |= {"qk_norm": True, "qk_norm_over": "per_head"}
    return spec


def stablelm(c: Keys, header: Header) -> dict[str, Any]:
    spec = sizes(c, header) | {
        "positional": "rope", "rope_theta": c.number("rope.freq_base", 10000.0), "norm_type": "layernorm",
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5), "feedforward": "gated", "activation": "silu",
        "ff_bias": False,
    }  # fmt: skip
    spec |= partial_rotary(c, spec["m"])
    if "blk.0.ffn_norm.weight" not in header.tensors:
        spec |= {"parallel": True, "shared_norm": True}
    if "blk.0.attn_q.bias" in header.tensors:
        spec |= {"attention_bias": True, "out_bias": False}
    if "blk.0.attn_q_norm.weight" in header.tensors:
        spec |= {"qk_norm": True, "qk_norm_over": "per_head"}
    return spec


_LAYER_NORMS = {"norm1.beta": "attn_norm.bias", "norm2.beta": "ffn_norm.bias"}
OLMO2 = Arch(olmo2, Family(
    "blk.{i}.",
    {ours: theirs for ours, theirs in LLAMA_LAYOUT.names.items() if not ours.startswith(("norm1", "norm2"))}
    | {"norm1_out.gamma": "post_attention_norm.weight", "norm2_out.gamma": "post_ffw_norm.weight"},
    LLAMA_LAYOUT.globals_,
))  # fmt: skip
COMMAND_R = Arch(command_r, LLAMA_LAYOUT)
STABLELM = Arch(stablelm, Family("blk.{i}.", LLAMA_LAYOUT.names | _LAYER_NORMS,
                                 LLAMA_LAYOUT.globals_ | {"final_norm.beta": "output_norm.bias"}))  # fmt: skip

__all__ = ["COMMAND_R", "OLMO2", "STABLELM"]
