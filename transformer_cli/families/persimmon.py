"""Persimmon (PersimmonForCausalLM, Adept's Persimmon-8B): GPT-NeoX's sequential block (LayerNorms with biases,
biases everywhere, q, k and v fused head by head) with a LayerNorm of each query and key head (qk_layernorm), rotary
on the first half of each head, and an MLP of ReLU squared. llama.cpp has no Persimmon architecture any more."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import PERSIMMON
from .config_keys import shared_keys
from .keys import Keys
from .parts import llama_like
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    plain = llama_like(c, None, None, 1e-5, False, 16384, act="relu2", partial=0.5)
    norms = {"norm_type": "layernorm", "norm_eps": c.number("layer_norm_eps", 1e-5)}
    qk = {"qk_norm": True} if c.flag("qk_layernorm", True) else {}
    return plain | norms | qk | {"feedforward": "plain", "attention_bias": True, "ff_bias": True}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Persimmon's config.json."""
    out = shared_keys(spec) | {"layer_norm_eps": spec.norm_eps, "qk_layernorm": spec.qk_norm, "hidden_act": "relu2"}
    return out | {"partial_rotary_factor": spec.rope_fraction}


RECORD = Record("persimmon", "PersimmonForCausalLM", spec, PERSIMMON, config, config_alone=True)

__all__ = ["RECORD"]
