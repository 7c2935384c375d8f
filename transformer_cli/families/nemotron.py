"""Nemotron (NemotronForCausalLM, Nemotron-4 and Minitron): LayerNorms with biases that scale by 1 + gamma (its
LayerNorm1P), rotary on the first half of each head (partial_rotary_factor 0.5), a plain MLP of ReLU squared (up_proj,
down_proj: Arcee's names), biases with attention_bias and mlp_bias. llama.cpp's nemotron is not read or written yet."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import ARCEE
from .config_keys import shared_keys
from .keys import Keys
from .parts import llama_like
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    plain = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 4096, act="relu2", partial=0.5)
    norms = {"norm_type": "layernorm", "norm_plus_one": True, "norm_eps": c.number("norm_eps", 1e-5)}
    biases = {"attention_bias": c.flag("attention_bias", False), "ff_bias": c.flag("mlp_bias", False)}
    return plain | norms | biases | {"feedforward": "plain"}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Nemotron's config.json."""
    keys = {"norm_eps": spec.norm_eps, "attention_bias": spec.attention_bias, "mlp_bias": spec.ff_bias}
    return shared_keys(spec) | keys | {"hidden_act": spec.activation, "partial_rotary_factor": spec.rope_fraction}


RECORD = Record("nemotron", "NemotronForCausalLM", spec, ARCEE, config, config_alone=True)

__all__ = ["RECORD"]
