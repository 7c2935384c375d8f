"""Nemotron (NemotronForCausalLM, Nemotron-4 and Minitron): LayerNorms with biases that scale by 1 + gamma (its
LayerNorm1P), rotary on the first half of each head (partial_rotary_factor 0.5), a plain MLP of ReLU squared (up_proj,
down_proj: Arcee's names), biases with attention_bias and mlp_bias. JAIS 2 (Jais2ForCausalLM): LLaMA's attention with
plain LayerNorms and Nemotron's MLP, biases on by default.

Their GGUF files (nemotron, jais2): LLaMA's attention names, Arcee's plain MLP, the norms' biases; Nemotron's gains
stored as 1 + w (the converter's modify_tensors), its rotated dims as rope.dimension_count. llama.cpp requires the
head (nemotron) and every bias but q's, k's and v's (jais2): files without them are tfm's to read, not its to run."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import ARCEE
from .config_keys import shared_keys
from .gemma import LESS_ONE, PLUS_ONE
from .gguf_layout import GLOBALS_WITH_BIAS, LLAMA_LAYOUT
from .keys import Keys
from .layout import Family
from .parts import llama_like
from .record import Gguf, Record


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


def gguf_jais2(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's sizes, biases and rotary; LayerNorms with biases, the plain MLP of ReLU squared and its biases."""
    norms = {"norm_type": "layernorm", "norm_eps": c.number("attention.layer_norm_epsilon")}
    plain = {"feedforward": "plain", "activation": "relu2", "ff_bias": "blk.0.ffn_up.bias" in header.tensors}
    qkv, out = ("blk.0.attn_q.bias" in header.tensors, "blk.0.attn_output.bias" in header.tensors)
    biases = {"attention_bias": qkv} | ({"out_bias": False} if qkv and not out else {})
    return {k: v for k, v in spec.items() if k != "out_bias"} | norms | plain | biases


def gguf_nemotron(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """JAIS 2's reader, the gains 1 + w."""
    return gguf_jais2(c, header, spec) | {"norm_plus_one": True}


GGUF_LAYOUT = Family(
    "blk.{i}.",
    {ours: theirs for ours, theirs in LLAMA_LAYOUT.names.items() if not ours.startswith("ff.")}
    | {"ff.W1": "ffn_up.weight", "ff.b1": "ffn_up.bias", "ff.W2": "ffn_down.weight", "ff.b2": "ffn_down.bias"}
    | {"norm1.beta": "attn_norm.bias", "norm2.beta": "ffn_norm.bias"},
    GLOBALS_WITH_BIAS,
)
NEMOTRON = Gguf("nemotron", GGUF_LAYOUT, gguf_nemotron, transforms=LESS_ONE, redo=PLUS_ONE)
RECORDS = (
    Record("nemotron", "NemotronForCausalLM", spec, ARCEE, config, NEMOTRON, config_alone=True),
    Record(
        "jais2",
        "Jais2ForCausalLM",
        jais2,
        ARCEE,
        jais2_config,
        Gguf("jais2", GGUF_LAYOUT, gguf_jais2),
        config_alone=True,
    ),
)

__all__ = ["RECORDS"]
