"""GGUF mixtures of experts: Mixtral's files (architecture llama with expert_count), Qwen2-MoE's (a gated shared
expert) and Qwen3-MoE's, each expert matrix stacked in one tensor. What llama.cpp hard-codes is read so: Qwen2-MoE
does not renormalise the chosen experts' weights, Qwen3-MoE does; every block routes."""

from __future__ import annotations

from typing import Any

from ..hf.keys import Keys
from .base import LLAMA_LAYOUT, Arch, llama, stacked_experts
from .header import Header

MIXTRAL = stacked_experts(LLAMA_LAYOUT.names, LLAMA_LAYOUT.globals_)


def _qwen_moe(c: Keys, header: Header, renorm: bool) -> dict[str, Any]:
    spec = llama(c, header) | {"expert_r": c.count("expert_feed_forward_length"), "router_renorm": renorm}
    if c.has("expert_shared_feed_forward_length"):
        spec |= {"shared_r": c.count("expert_shared_feed_forward_length"),
                 "shared_gate": "blk.0.ffn_gate_inp_shexp.weight" in header.tensors}  # fmt: skip
    return spec


def qwen2moe(c: Keys, header: Header) -> dict[str, Any]:
    """Qwen2-MoE: Qwen2's attention, E experts of expert_feed_forward_length, the softmax over all E read at the
    top k (llama.cpp: not renormalised), a shared expert of expert_shared_feed_forward_length gated by a sigmoid."""
    return _qwen_moe(c, header, renorm=False)


def qwen3moe(c: Keys, header: Header) -> dict[str, Any]:
    """Qwen3-MoE: Qwen3's attention, the chosen experts' weights renormalised (llama.cpp: always)."""
    return _qwen_moe(c, header, renorm=True)


QWEN2MOE = Arch(qwen2moe, stacked_experts(LLAMA_LAYOUT.names, LLAMA_LAYOUT.globals_, shared=True))
QWEN3MOE = Arch(qwen3moe, MIXTRAL)

__all__ = ["MIXTRAL", "QWEN2MOE", "QWEN3MOE"]
