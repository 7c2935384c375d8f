"""Helium (HeliumForCausalLM, Kyutai's Helium-1): LLaMA's block with heads of head_dim (128), rotary on interleaved
pairs (GPT-J's), biases on q, k and v alone where attention_bias says (its o_proj has none), mlp_bias on the MLP.
llama.cpp has no Helium architecture."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import LLAMA
from .config_keys import shared_keys
from .keys import Keys
from .parts import llama_like
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (transformers' defaults: heads of 128, eps 1e-8, base 100,000, an untied head)."""
    plain = llama_like(c, c.count("num_key_value_heads", None), 128, 1e-8, False, 4096, theta=100000.0)
    if plain["H"] * plain["m"] != plain["d"]:
        heads = f"{plain['H']} heads of {plain['m']}"
        raise c.refuse("head_dim", plain["m"], f"Helium's o_proj is hidden_size square: {heads} must make {plain['d']}")
    biases = {"attention_bias": c.flag("attention_bias", False), "ff_bias": c.flag("mlp_bias", False)}
    out = {"out_bias": False} if biases["attention_bias"] else {}
    return plain | biases | out | {"rope_pairing": "interleaved"}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Helium's config.json."""
    return shared_keys(spec) | {"attention_bias": spec.attention_bias, "mlp_bias": spec.ff_bias, "hidden_act": "silu"}


RECORD = Record("helium", "HeliumForCausalLM", spec, LLAMA, config, config_alone=True)

__all__ = ["RECORD"]
