"""GGUF BLOOM, GPT-NeoX, Phi-2 and GPT-J as convert_hf_to_gguf.py writes them: LayerNorms with biases and biases
on every projection (GPT-J's q, k, v and o have none); BLOOM's and GPT-NeoX's fused query_key_value reordered by
the converter from per-head [q; k; v] groups to [Q; K; V] (how tfm reads a fused tensor). What the files do not
hold is read as llama.cpp reads it: BLOOM's ALiBi of maximum bias 8 and feedforward of 4 d, no context (its
context_length is the converter's seq_length, or d); GPT-NeoX's and Phi-2's rope base 10000 (the converter writes
none), GPT-NeoX's GELU the exact one of Pythia's config (llama.cpp computes the tanh form), Phi-2's and GPT-J's
feedforward the 4 d the converter writes, GPT-J's rotary in adjacent pairs (its own rotate_every_two; the
converter does not permute)."""

from __future__ import annotations

from typing import Any

from ..families.keys import Keys
from ..families.layout import Family
from .base import Arch, partial_rotary, sizes
from .header import Header

_one = lambda spec: 1  # noqa: E731
_QKV = ("attention.W_Q", "attention.W_K", "attention.W_V")
_QKV_BIAS = ("attention.b_Q", "attention.b_K", "attention.b_V")


def _norms(ours: str, theirs: str) -> dict[str, str]:
    return {f"{ours}.gamma": f"{theirs}.weight", f"{ours}.beta": f"{theirs}.bias"}


def _linear(ours: str, theirs: str) -> dict[str, str]:
    return {ours.format("W"): f"{theirs}.weight", ours.format("b"): f"{theirs}.bias"}


def bloom(c: Keys, header: Header) -> dict[str, Any]:
    """BLOOM: ALiBi in place of positions, a LayerNorm of the embedded tokens, BLOOM's tanh GELU, biases."""
    spec = sizes(c, header) | {"positional": "alibi", "embed_norm": True, "attention_bias": True,
                                "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
                                "activation": "gelu_bloom"}  # fmt: skip
    spec.pop("context", None)  # (the converter's seq_length, else d: not a context)
    return spec


def gptneox(c: Keys, header: Header) -> dict[str, Any]:
    """GPT-NeoX (Pythia): two LayerNorms, parallel or not (use_parallel_residual), a partial rotary in halves."""
    spec = sizes(c, header) | {"positional": "rope", "rope_theta": c.number("rope.freq_base", 10000.0),
                                "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5), "attention_bias": True,
                                "parallel": c.flag("use_parallel_residual", True),
                                "activation": "gelu_exact"}  # fmt: skip
    spec |= partial_rotary(c, spec["m"])
    return spec


def phi2(c: Keys, header: Header) -> dict[str, Any]:
    """Phi-2: one LayerNorm shared by parallel attention and feedforward, a partial rotary, biases, the head's too."""
    spec = sizes(c, header) | {"positional": "rope", "rope_theta": c.number("rope.freq_base", 10000.0),
                                "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5), "attention_bias": True,
                                "parallel": True, "shared_norm": True, "head_bias": True,
                                "activation": "gelu"}  # fmt: skip
    spec |= partial_rotary(c, spec["m"])
    return spec


def gptj(c: Keys, header: Header) -> dict[str, Any]:
    """GPT-J: one LayerNorm shared by parallel attention and feedforward, rope.dimension_count of each head turned
    in adjacent pairs, no biases on q, k, v and o, the feedforward's and the head's biases."""
    spec = sizes(c, header) | {"positional": "rope", "rope_theta": c.number("rope.freq_base", 10000.0),
                                "rope_pairing": "interleaved",
                                "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
                                "parallel": True, "shared_norm": True, "attention_bias": False, "ff_bias": True,
                                "head_bias": True, "activation": "gelu"}  # fmt: skip
    spec |= partial_rotary(c, spec["m"])
    return spec


_FUSED = (("attn_qkv.weight", _QKV, _one), ("attn_qkv.bias", _QKV_BIAS, _one))
_BLOCK = (_linear("attention.{}_O", "attn_output") | _linear("ff.{}1", "ffn_up") | _linear("ff.{}2", "ffn_down")
          | _norms("norm1", "attn_norm") | _norms("norm2", "ffn_norm"))  # fmt: skip
_GLOBALS = {"embedding.E": "token_embd.weight", "head.W": "output.weight"} | _norms("final_norm", "output_norm")
BLOOM = Arch(bloom, Family("blk.{i}.", _BLOCK, _GLOBALS | _norms("embedding.norm", "token_embd_norm"), fused=_FUSED))
GPTNEOX = Arch(gptneox, Family("blk.{i}.", _BLOCK, _GLOBALS, fused=_FUSED))
PHI2 = Arch(phi2, Family(
    "blk.{i}.",
    {k: v for k, v in _BLOCK.items() if not k.startswith("norm2")} | _linear("attention.{}_Q", "attn_q")
    | _linear("attention.{}_K", "attn_k") | _linear("attention.{}_V", "attn_v"),
    _GLOBALS | {"head.b": "output.bias"},
))  # fmt: skip

GPTJ = Arch(gptj, Family(
    "blk.{i}.",
    {f"attention.W_{x}": f"attn_{y}.weight" for x, y in zip("QKVO", ("q", "k", "v", "output"), strict=True)}
    | _linear("ff.{}1", "ffn_up") | _linear("ff.{}2", "ffn_down") | _norms("norm1", "attn_norm"),
    _GLOBALS | {"head.b": "output.bias"},
))  # fmt: skip

__all__ = ["BLOOM", "GPTJ", "GPTNEOX", "PHI2"]
