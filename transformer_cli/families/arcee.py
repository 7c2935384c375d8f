"""Arcee (ArceeForCausalLM, AFM-4.5B): LLaMA's attention, RMSNorm and rotary (YaRN in the published model) around a
plain MLP, up_proj, ReLU squared (`relu2`) and down_proj, no gate. Its GGUF architecture (arcee) is LLaMA's layout
without ffn_gate, Q's and K's rows permuted as the converter's LlamaModel does."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import ARCEE
from .config_keys import shared_keys
from .gguf_layout import LLAMA_LAYOUT, LLAMA_PERMUTED, LLAMA_REDO
from .keys import Keys
from .layout import Family
from .parts import llama_like
from .record import Gguf, Record

_PLAIN = {"feedforward": "plain"}


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec: attention_bias on q, k, v and o, mlp_bias on up and down."""
    spec = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 4096, act="relu2")
    return spec | _PLAIN | {"attention_bias": c.flag("attention_bias", False), "ff_bias": c.flag("mlp_bias", False)}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Arcee's config.json."""
    biases = {"attention_bias": spec.attention_bias, "mlp_bias": spec.ff_bias}
    return shared_keys(spec) | biases | {"hidden_act": spec.activation}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's sizes and rotary; the plain MLP of ReLU squared (llama.cpp's arcee graph)."""
    return spec | _PLAIN | {"activation": "relu2"}


GGUF_LAYOUT = Family(
    "blk.{i}.",
    {ours: theirs for ours, theirs in LLAMA_LAYOUT.names.items() if not ours.startswith("ff.")}
    | {"ff.W1": "ffn_up.weight", "ff.b1": "ffn_up.bias", "ff.W2": "ffn_down.weight", "ff.b2": "ffn_down.bias"},
    LLAMA_LAYOUT.globals_,
)
GGUF = Gguf("arcee", GGUF_LAYOUT, gguf_spec, transforms=LLAMA_PERMUTED, redo=LLAMA_REDO)
RECORD = Record("arcee", "ArceeForCausalLM", spec, ARCEE, config, GGUF, config_alone=True)

__all__ = ["RECORD"]
