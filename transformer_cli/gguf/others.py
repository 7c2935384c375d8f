"""GGUF Phi-3 and Falcon as convert_hf_to_gguf.py writes them: fused attn_qkv tensors (Phi-3's rows [Q; K; V] as
Hugging Face has them; Falcon's reordered by the converter from its groups to [Q; K; V], which is how tfm reads a
fused tensor anyway), Phi-3's fused gate and up rows, Falcon's LayerNorms with biases (StarCoder2 and GPT-2 are
records of their own: families/).

What these files do not hold is read as llama.cpp reads it: Falcon's feedforward is 4 d (the converter writes that,
whatever ffn_hidden_size said), its rope base 10000 and its context the converter's 2048. Phi-3's sliding_window is
read as the window Hugging Face applies (llama.cpp disables it)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..families.keys import Keys
from ..families.layout import Family
from ..spec.rope_scaling import longrope_attention_factor
from .base import LLAMA_LAYOUT, Arch, partial_rotary, sizes
from .header import Header

_one = lambda spec: 1  # noqa: E731
_QKV = ("attention.W_Q", "attention.W_K", "attention.W_V")
_GLOBALS = {
    "embedding.E": "token_embd.weight",
    "head.W": "output.weight",
    "final_norm.gamma": "output_norm.weight",
    "final_norm.beta": "output_norm.bias",
}


def phi3(c: Keys, header: Header) -> dict[str, Any]:
    """Phi-3: LLaMA's block with fused qkv and gate-up tensors, a partial rotary (rope.dimension_count), the window
    sliding_window says (0: none), LongRoPE from rope_factors_short/long and rope.scaling.original_context_length."""
    spec = sizes(c, header) | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "norm_type": "rmsnorm",
        "norm_eps": c.number("attention.layer_norm_rms_epsilon", 1e-5),
        "feedforward": "gated",
        "activation": "silu",
        "ff_bias": False,
    }
    spec |= partial_rotary(c, spec["m"])
    window = c.data.get("attention.sliding_window")
    if isinstance(window, int) and window > 0:
        spec["window"] = window
    if "rope_factors_short.weight" in header.tensors:
        from .tensors import read_tensor

        original = c.count("rope.scaling.original_context_length")
        factor = spec.get("context", original) / original
        spec |= {
            "rope_scaling": "longrope",
            "rope_original_max_len": original,
            "rope_factor": factor,
            "rope_short_factor": _decimals(read_tensor(header, "rope_factors_short.weight")),
            "rope_long_factor": _decimals(read_tensor(header, "rope_factors_long.weight")),
        }
        derived = longrope_attention_factor(factor, original)
        given = c.number("rope.scaling.attn_factor", derived)
        if not math.isclose(given, derived, rel_tol=1e-6):  # (the converter writes the derived factor, in float32)
            spec["rope_attention_factor"] = given
    return spec


def _decimals(values) -> list[float]:
    """float32 factors as the shortest decimals that are them (1.1, not 1.100000023841858), as config.json had them."""
    return [float(np.format_float_scientific(np.float32(x), unique=True)) for x in values]


def falcon(c: Keys, header: Header) -> dict[str, Any]:
    """Falcon: parallel attention and MLP, one norm (7B) or two (attn_norm_2: the new decoder architecture), key and
    value heads head_count_kv (1 by default: multi-query), exact GELU, no biases."""
    two = "blk.0.attn_norm_2.weight" in header.tensors
    return sizes(c, header, G_default=1) | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
        "parallel": True,
        "shared_norm": not two,
        "activation": "gelu_exact",
        "ff_bias": False,
    }


def _norms(ours: str, theirs: str) -> dict[str, str]:
    return {f"{ours}.gamma": f"{theirs}.weight", f"{ours}.beta": f"{theirs}.bias"}


PHI3 = Arch(
    phi3,
    Family(
        "blk.{i}.",
        LLAMA_LAYOUT.names,
        LLAMA_LAYOUT.globals_,
        fused=(("attn_qkv.weight", _QKV, _one), ("ffn_up.weight", ("ff.W1", "ff.W3"), _one)),
    ),
    skipped=("rope_factors_short.weight", "rope_factors_long.weight"),
)
_FALCON_BLOCK = {"attention.W_O": "attn_output.weight", "ff.W1": "ffn_up.weight", "ff.W2": "ffn_down.weight"}
_FALCON_QKV = (("attn_qkv.weight", _QKV, _one),)
_FALCON_TWO_NORMS = Family(
    "blk.{i}.",
    _FALCON_BLOCK | _norms("norm1", "attn_norm_2") | _norms("norm2", "attn_norm"),
    _GLOBALS,
    fused=_FALCON_QKV,
)  # the new architecture: ln_attn, ln_mlp
FALCON = Arch(
    falcon,
    Family("blk.{i}.", _FALCON_BLOCK | _norms("norm1", "attn_norm"), _GLOBALS, fused=_FALCON_QKV),
    alternative=(lambda spec: not spec.shared_norm, _FALCON_TWO_NORMS),
)

__all__ = ["FALCON", "PHI3"]
