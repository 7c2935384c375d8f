"""OLMo 2 (Olmo2ForCausalLM): LLaMA's attention and MLP, each sublayer's output normalised before its residual (no
norm of its input), RMSNorms of all query and all key projections together (widths Hm and Gm), a final norm. Its
GGUF file (olmo2) holds the output norms as post_attention_norm and post_ffw_norm; llama.cpp turns halves, so the
converter does not permute."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import OLMO2
from .config_keys import shared_keys
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .layout import Family
from .parts import llama_like
from .record import Gguf, Record

_NORMS = {"norm": "output", "qk_norm": True, "qk_norm_over": "all"}


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    spec = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 2048)
    return spec | {"attention_bias": c.flag("attention_bias", False)} | _NORMS


def config(spec: Spec) -> dict[str, Any]:
    """spec -> OLMo 2's config.json."""
    return shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": "silu"}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's sizes and rotary, no norm of a sublayer's input but one of its output, RMSNorms of all query and all
    key projections together (widths Hm and Gm)."""
    return spec | _NORMS


GGUF_LAYOUT = Family(
    "blk.{i}.",
    {ours: theirs for ours, theirs in LLAMA_LAYOUT.names.items() if not ours.startswith(("norm1", "norm2"))}
    | {"norm1_out.gamma": "post_attention_norm.weight", "norm2_out.gamma": "post_ffw_norm.weight"},
    LLAMA_LAYOUT.globals_,
)
RECORD = Record(
    "olmo2", "Olmo2ForCausalLM", spec, OLMO2, config, Gguf("olmo2", GGUF_LAYOUT, gguf_spec), config_alone=True
)

__all__ = ["RECORD"]
