"""GGUF architectures that are LLaMA's block with a change, as convert_hf_to_gguf.py writes them and llama.cpp
reads them (the others are records of their own in families/):

- OLMo 2: each sublayer's output normalised (post_attention_norm, post_ffw_norm), query and key norms over all
  heads together; llama.cpp turns halves, so the converter does not permute.
"""

from __future__ import annotations

from typing import Any

from ..families.keys import Keys
from ..families.layout import Family
from .base import LLAMA_LAYOUT, Arch, llama
from .header import Header


def olmo2(c: Keys, header: Header) -> dict[str, Any]:
    """OLMo 2: LLaMA's sizes and rotary, no norm of a sublayer's input but one of its output, RMSNorms of all query
    and all key projections together (widths Hm and Gm)."""
    return llama(c, header) | {"norm": "output", "qk_norm": True, "qk_norm_over": "all"}


OLMO2 = Arch(
    olmo2,
    Family(
        "blk.{i}.",
        {ours: theirs for ours, theirs in LLAMA_LAYOUT.names.items() if not ours.startswith(("norm1", "norm2"))}
        | {"norm1_out.gamma": "post_attention_norm.weight", "norm2_out.gamma": "post_ffw_norm.weight"},
        LLAMA_LAYOUT.globals_,
    ),
)

__all__ = ["OLMO2"]
