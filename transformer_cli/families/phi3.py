"""Phi-3 (Phi3ForCausalLM): LLaMA's block with fused qkv_proj and gate_up_proj (the same tensors in its GGUF file,
attn_qkv and ffn_up), an optional window, a partial rotary and LongRoPE. Its GGUF file is read by Phi-3's reader
(gguf/others.py: PhiMoE's starts from it), which takes LongRoPE's factors from the tensors rope_factors_short and
rope_factors_long; the converter writes attention.sliding_window always (0: none)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import PHI3
from .config_keys import shared_keys
from .gguf_keys import base_only
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .layout import Family
from .parts import llama_like, window_key
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """Phi3ForCausalLM: fused qkv_proj and gate_up_proj (the same tensors), an optional window, partial rotary."""
    spec = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 4096, partial=1.0)
    return spec | window_key(c.nullable_count("sliding_window", None))


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Phi-3's config.json."""
    return shared_keys(spec) | {
        "attention_bias": spec.attention_bias,
        "hidden_act": "silu",
        "sliding_window": spec.window,
    }


_one = lambda spec: 1  # noqa: E731
GGUF_LAYOUT = Family(
    "blk.{i}.",
    LLAMA_LAYOUT.names,
    LLAMA_LAYOUT.globals_,
    fused=(
        ("attn_qkv.weight", ("attention.W_Q", "attention.W_K", "attention.W_V"), _one),
        ("ffn_up.weight", ("ff.W1", "ff.W3"), _one),
    ),
)
GGUF_SKIPPED = ("rope_factors_short.weight", "rope_factors_long.weight")  # (read by the reader: LongRoPE's factors)
RECORD = Record(
    "phi3",
    "Phi3ForCausalLM",
    spec,
    PHI3,
    config,
    Gguf(
        "phi3",
        GGUF_LAYOUT,
        base_only,
        base="phi3_like",
        skipped=GGUF_SKIPPED,
        window_always=True,
        llama_cpp_slides=False,
    ),
    config_alone=True,
)

__all__ = ["GGUF_SKIPPED", "RECORD"]
