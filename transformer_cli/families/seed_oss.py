"""Seed-OSS (SeedOssForCausalLM, ByteDance's Seed-OSS-36B): LLaMA's block with heads of head_dim (128), biases on
q, k and v (attention_bias) and on o apart (attention_out_bias), mlp_bias on the MLP. Its GGUF architecture
(seed_oss) is written as a plain TextModel: Q's and K's rows as the checkpoint has them (llama.cpp turns halves),
the second norm named post_attention_norm."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import LLAMA
from .config_keys import shared_keys
from .gguf_keys import base_only
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .layout import Family
from .parts import llama_like
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (transformers' defaults: biases on q, k, v, none on o or the MLP, heads of 128)."""
    plain = llama_like(c, c.count("num_key_value_heads", None), 128, 1e-6, False, 524288)
    biases = {"attention_bias": c.flag("attention_bias", True), "ff_bias": c.flag("mlp_bias", False)}
    return plain | biases | {"out_bias": c.flag("attention_out_bias", False)}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Seed-OSS's config.json."""
    biases = {"attention_bias": spec.attention_bias, "attention_out_bias": spec.has_out_bias, "mlp_bias": spec.ff_bias}
    return shared_keys(spec) | biases | {"hidden_act": spec.activation}


GGUF_LAYOUT = Family(
    "blk.{i}.",
    {ours: theirs for ours, theirs in LLAMA_LAYOUT.names.items() if not ours.startswith("norm2")}
    | {"norm2.gamma": "post_attention_norm.weight"},
    LLAMA_LAYOUT.globals_,
)
RECORD = Record("seed_oss", "SeedOssForCausalLM", spec, LLAMA, config, Gguf("seed_oss", GGUF_LAYOUT, base_only))

__all__ = ["RECORD"]
