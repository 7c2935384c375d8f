"""GGUF architectures -> tfm specs, and where each tfm tensor is in the file, as llama.cpp's convert_hf_to_gguf.py
writes them: one function per `general.architecture` (its `{arch}.*` keys read as the Hugging Face families read
config.json), one tensor layout, and the converter's changes to undo (the Q and K rows it permutes for llama.cpp's
interleaved rotary; Gemma's norms stored as 1 + w). A new architecture is one function and one ARCHITECTURES line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..hf.keys import Keys
from ..hf.layouts import Family
from .header import ArrayCount, Header

Transform = Callable[[np.ndarray, dict[str, Any]], np.ndarray]


def _linear(ours: str, theirs: str, parts: str = "Wb") -> dict[str, str]:
    return {ours.format(p): f"{theirs}.{'weight' if p == 'W' else 'bias'}" for p in parts}


def _llama_names() -> dict[str, str]:
    names = {"norm1.gamma": "attn_norm.weight", "norm2.gamma": "ffn_norm.weight",
             "attention.q_norm.gamma": "attn_q_norm.weight",
             "attention.k_norm.gamma": "attn_k_norm.weight"}  # fmt: skip
    for x, theirs in (("Q", "attn_q"), ("K", "attn_k"), ("V", "attn_v"), ("O", "attn_output")):
        names |= _linear("attention.{}_" + x, theirs)
    for n, theirs in (("1", "ffn_gate"), ("3", "ffn_up"), ("2", "ffn_down")):
        names |= _linear("ff.{}" + n, theirs)
    return names


LLAMA_LAYOUT = Family("blk.{i}.", _llama_names(), {"embedding.E": "token_embd.weight", "head.W": "output.weight",
                                                   "final_norm.gamma": "output_norm.weight"})  # fmt: skip


def unpermute(heads_key: str) -> Transform:
    """The inverse of convert_hf_to_gguf.py's LlamaModel.permute: llama.cpp's rotary turns adjacent pairs, so the
    converter reorders each head's rows from the halves (j, j + m/2) to pairs (2j, 2j + 1); this puts them back.
    `heads_key`: the metadata key with the head count it used (head_count for Q, head_count_kv for K)."""

    def undo(rows: np.ndarray, meta: dict[str, Any]) -> np.ndarray:
        heads = meta.get(heads_key) or meta["attention.head_count"]
        return rows.reshape(heads, rows.shape[0] // heads // 2, 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)

    return undo


@dataclass(frozen=True)
class Arch:
    """One GGUF architecture: its spec from the metadata, its tensor layout, the changes to undo per tensor name
    (the part after blk.{i}.), and tensors the file holds that the model has no place for."""

    spec: Callable[[Keys, Header], dict[str, Any]]
    layout: Family
    transforms: dict[str, Transform] = field(default_factory=dict)
    skipped: tuple[str, ...] = ("rope_freqs.weight",)


def vocabulary(c: Keys, header: Header) -> int:
    """V: {arch}.vocab_size, else the tokenizer's token list, else the embedding's rows."""
    if c.has("vocab_size"):
        return c.count("vocab_size")
    tokens = header.metadata.get("tokenizer.ggml.tokens")
    if isinstance(tokens, (list, ArrayCount)):
        return len(tokens) if isinstance(tokens, list) else tokens.count
    return header.tensors["token_embd.weight"].shape[0]


def llama(c: Keys, header: Header) -> dict[str, Any]:
    """llama (also Mistral's and Llama 3's files): RMSNorm, SwiGLU, rotary, grouped-query heads, a head unless the
    file has no output.weight (tied)."""
    d, H = c.count("embedding_length"), c.count("attention.head_count")
    G = c.count("attention.head_count_kv", H)
    m = c.count("attention.key_length", None) or d // H
    rotated = c.count("rope.dimension_count", m)
    spec: dict[str, Any] = {
        "N": c.count("block_count"), "H": H, "m": m, "d": d, "r": c.count("feed_forward_length"),
        "V": vocabulary(c, header), "scale": "sqrt", "mask": "causal", "positional": "rope", "norm": "pre",
        "rope_theta": c.number("rope.freq_base", 10000.0), "norm_type": "rmsnorm",
        "norm_eps": c.number("attention.layer_norm_rms_epsilon", 1e-5), "feedforward": "gated",
        "activation": "silu", "ff_bias": False, "tie_embeddings": "output.weight" not in header.tensors,
    }  # fmt: skip
    if G != H:
        spec["G"] = G
    if rotated != m:
        spec["rope_fraction"] = rotated / m
    if c.has("context_length"):
        spec["context"] = c.count("context_length")
    if "blk.0.attn_q.bias" in header.tensors:  # (Qwen2: q, k, v only)
        spec |= {"attention_bias": True, "out_bias": "blk.0.attn_output.bias" in header.tensors}
    if "blk.0.attn_q_norm.weight" in header.tensors:  # Qwen3's per-head query and key norms
        spec["qk_norm"] = True
    return spec


ARCHITECTURES: dict[str, Arch] = {
    "llama": Arch(
        llama,
        LLAMA_LAYOUT,
        {"attn_q.weight": unpermute("attention.head_count"), "attn_k.weight": unpermute("attention.head_count_kv")},
    ),  # fmt: skip
    "qwen2": Arch(llama, LLAMA_LAYOUT),  # llama.cpp turns Qwen's halves as they are (NEOX rope): no permutation
    "qwen3": Arch(llama, LLAMA_LAYOUT),
}

__all__ = ["ARCHITECTURES", "Arch"]
