"""Nemotron (NemotronForCausalLM, Nemotron-4 and Minitron): LayerNorms with biases that scale by 1 + gamma (its
LayerNorm1P), rotary on the first half of each head (partial_rotary_factor 0.5), a plain MLP of ReLU squared (up_proj,
down_proj: Arcee's names), biases with attention_bias and mlp_bias. JAIS 2 (Jais2ForCausalLM): LLaMA's attention with
plain LayerNorms and Nemotron's MLP, biases on by default. Neither GGUF (nemotron, jais2) is read or written yet."""

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


def jais2(c: Keys) -> dict[str, Any]:
    """config.json -> JAIS 2's spec."""
    plain = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 8192, act="relu2")
    norms = {"norm_type": "layernorm", "norm_eps": c.number("layer_norm_eps", 1e-5)}
    biases = {"attention_bias": c.flag("attention_bias", True), "ff_bias": c.flag("mlp_bias", True)}
    return plain | norms | biases | {"feedforward": "plain"}


def jais2_config(spec: Spec) -> dict[str, Any]:
    """spec -> JAIS 2's config.json."""
    keys = {"layer_norm_eps": spec.norm_eps, "attention_bias": spec.attention_bias, "mlp_bias": spec.ff_bias}
    return shared_keys(spec) | keys | {"hidden_act": spec.activation}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Nemotron's config.json."""
    keys = {"norm_eps": spec.norm_eps, "attention_bias": spec.attention_bias, "mlp_bias": spec.ff_bias}
    return shared_keys(spec) | keys | {"hidden_act": spec.activation, "partial_rotary_factor": spec.rope_fraction}


RECORDS = (
    Record("nemotron", "NemotronForCausalLM", spec, ARCEE, config, config_alone=True),
    Record("jais2", "Jais2ForCausalLM", jais2, ARCEE, jais2_config, config_alone=True),
)

__all__ = ["RECORDS"]
