"""LLaMA (LlamaForCausalLM), Mistral (MistralForCausalLM) and Mixtral (MixtralForCausalLM): RMSNorm, SwiGLU, rotary
and grouped-query heads; Mistral with a window, Mixtral with its feedforward E gated experts, the top k per token.

All three write GGUF architecture llama (the converter permutes Q's and K's rows for llama.cpp's interleaved
rotary); its file goes back to LLaMA's config.json, or Mixtral's where it holds experts. Mistral's window is not in
the file (llama.cpp runs it without one), so a Mistral with a window is refused when written."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import LLAMA
from .config_keys import shared_keys
from .expert_checkpoints import MIXTRAL
from .gguf_keys import base_only
from .gguf_layout import LLAMA_EXPERTS, LLAMA_LAYOUT, LLAMA_PERMUTED, LLAMA_REDO
from .keys import Keys
from .parts import llama_like, window_key
from .record import Gguf, Record


def llama(c: Keys) -> dict[str, Any]:
    """LlamaForCausalLM: attention_bias puts biases on q, k, v and o; mlp_bias on the three projections."""
    biases = {"attention_bias": c.flag("attention_bias", False), "ff_bias": c.flag("mlp_bias", False)}
    return llama_like(c, c.count("num_key_value_heads", None), None, 1e-6, False, 2048) | biases


def mistral(c: Keys) -> dict[str, Any]:
    """MistralForCausalLM: 8 key/value heads and a window of 4096 unless the file says otherwise (null: none)."""
    spec = llama_like(c, c.count("num_key_value_heads", 8), None, 1e-6, False, 131072)
    return spec | window_key(c.nullable_count("sliding_window", 4096))


def mixtral(c: Keys) -> dict[str, Any]:
    """MixtralForCausalLM: Mistral's blocks with E gated experts, the top k per token."""
    E, k = c.count("num_local_experts", 8, "num_experts"), c.count("num_experts_per_tok", 2)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_local_experts = {E}")
    spec = llama_like(c, c.count("num_key_value_heads", 8), None, 1e-5, False, 131072, theta=1e6)
    return spec | window_key(c.nullable_count("sliding_window", None)) | {"E": E, "k": k}


def llama_config(spec: Spec) -> dict[str, Any]:
    """spec -> LLaMA's config.json (after architectures and model_type)."""
    return shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": "silu"}


def mixtral_config(spec: Spec) -> dict[str, Any]:
    """spec -> Mixtral's config.json: LLaMA's keys, the experts, no window (the GGUF file holds none)."""
    experts = {"num_local_experts": spec.E, "num_experts_per_tok": spec.k, "sliding_window": None}
    return llama_config(spec) | experts


def mistral_config(spec: Spec) -> dict[str, Any]:
    """spec -> Mistral's config.json (its window, null for none)."""
    return shared_keys(spec) | {"hidden_act": "silu", "sliding_window": spec.window}


def model_type(spec: Spec) -> str:
    """A llama file's model: Mixtral's where it has experts, else LLaMA's."""
    return "mixtral" if spec.E else "llama"


GGUF = Gguf(
    "llama",
    LLAMA_LAYOUT,
    base_only,
    transforms=LLAMA_PERMUTED,
    redo=LLAMA_REDO,
    model_type=model_type,
    experts=LLAMA_EXPERTS,
)
RECORDS = (  # (llama first: a llama file's model_type is LLaMA's unless model_type says)
    Record("llama", "LlamaForCausalLM", llama, LLAMA, llama_config, GGUF, config_alone=True),
    Record("mistral", "MistralForCausalLM", mistral, LLAMA, mistral_config, GGUF, config_alone=True),
    Record(
        "mixtral",
        "MixtralForCausalLM",
        mixtral,
        MIXTRAL,
        mixtral_config,
        GGUF,
        lora_stacked=("w1", "w3", "w2", "gate"),
        config_alone=True,
    ),
)

__all__ = ["RECORDS"]
