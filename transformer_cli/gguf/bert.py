"""GGUF BERT (architecture bert, which also carries RoBERTa's, XLM-RoBERTa's and DistilBERT's files) as
convert_hf_to_gguf.py writes it: an encoder (attention.causal false), post-norm blocks, learned positions and
token types, a norm of the embeddings. The converter drops the pooler and the masked-LM head, so the file's
model ends at the last block's columns; it slices RoBERTa's position table after the padding index (row 0 of
the file's table is the first token's), so positions count from 0. What the file does not hold is read as the
family's config has it: the exact GELU of BERT's config (llama.cpp computes the tanh form), and token type 0
for every token (llama.cpp's too)."""

from __future__ import annotations

from typing import Any

from ..families.keys import Keys
from ..families.layout import Family
from .base import Arch, rows, sizes
from .header import Header


def bert(c: Keys, header: Header) -> dict[str, Any]:
    spec = sizes(c, header) | {
        "mask": "causal" if c.flag("attention.causal", False) else "none",
        "norm": "post",
        "positional": "learned",
        "max_len": rows(header, "position_embd.weight", "the positions"),
        "embed_norm": True,
        "attention_bias": True,
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-12),
        "activation": "gelu_exact",
        "head": False,
    }
    for key in ("tie_embeddings", "context"):
        spec.pop(key, None)
    if "token_types.weight" in header.tensors:
        spec["type_vocab"] = header.tensors["token_types.weight"].shape[0]
    return spec


def _linear(ours: str, theirs: str) -> dict[str, str]:
    return {ours.format("W"): f"{theirs}.weight", ours.format("b"): f"{theirs}.bias"}


def _norm(ours: str, theirs: str) -> dict[str, str]:
    return {f"{ours}.gamma": f"{theirs}.weight", f"{ours}.beta": f"{theirs}.bias"}


BERT = Arch(
    bert,
    Family(
        "blk.{i}.",
        _linear("attention.{}_Q", "attn_q")
        | _linear("attention.{}_K", "attn_k")
        | _linear("attention.{}_V", "attn_v")
        | _linear("attention.{}_O", "attn_output")
        | _linear("ff.{}1", "ffn_up")
        | _linear("ff.{}2", "ffn_down")
        | _norm("norm1", "attn_output_norm")
        | _norm("norm2", "layer_output_norm"),
        {
            "embedding.E": "token_embd.weight",
            "embedding.T": "token_types.weight",
            "positional.P": "position_embd.weight",
        }
        | _norm("embedding.norm", "token_embd_norm"),
    ),
)

__all__ = ["BERT"]
