"""GGUF Phi-3 as convert_hf_to_gguf.py writes it, read here because PhiMoE's reader starts from it too (the Phi-3
family's record, families/phi3.py, names this reader its base): LLaMA's block with fused attn_qkv rows [Q; K; V]
as Hugging Face has them and fused gate and up rows, a partial rotary, a window, LongRoPE's factors as tensors.

Phi-3's sliding_window is read as the window Hugging Face applies (llama.cpp disables it)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..families.keys import Keys
from ..spec.rope_scaling import longrope_attention_factor
from .base import partial_rotary, sizes
from .header import Header
from .tensors import read_tensor


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


__all__ = ["phi3"]
