"""ERNIE 4.5 (Ernie4_5ForCausalLM, Baidu's dense ERNIE-4.5-0.3B): LLaMA's block with heads of head_dim (128),
rotary on interleaved pairs (GLM's), use_bias on every projection, a tied head. Its GGUF architecture (ernie4_5)
keeps Q's and K's rows as the checkpoint has them: llama.cpp turns adjacent pairs there."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import LLAMA
from .config_keys import shared_keys
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .parts import llama_like
from .record import Gguf, Record

_PAIRS = {"rope_pairing": "interleaved"}


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    plain = llama_like(c, c.count("num_key_value_heads", 2), 128, 1e-5, True, 131072, theta=500000.0)
    bias = c.flag("use_bias", False)
    return plain | _PAIRS | {"attention_bias": bias, "ff_bias": bias}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> ERNIE 4.5's config.json (one use_bias: q, k, v, o and the MLP alike)."""
    return shared_keys(spec) | {"use_bias": spec.attention_bias, "hidden_act": "silu"}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's sizes and rotary on adjacent pairs (llama.cpp's NORM rope for ernie4_5)."""
    return spec | _PAIRS


RECORD = Record("ernie4_5", "Ernie4_5ForCausalLM", spec, LLAMA, config, Gguf("ernie4_5", LLAMA_LAYOUT, gguf_spec))

__all__ = ["RECORD"]
