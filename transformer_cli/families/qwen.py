"""Qwen2 (Qwen2ForCausalLM) and Qwen3 (Qwen3ForCausalLM): LLaMA's block, Qwen2 with biases on q, k and v, Qwen3
with an RMSNorm of each query and key head; a window only on the layers use_sliding_window and max_window_layers (or
layer_types) say. Their GGUF files (qwen2, qwen3) are LLaMA's names unpermuted: llama.cpp turns Qwen's halves as
they are (NEOX rope)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import LLAMA
from .config_keys import shared_keys
from .gguf_keys import base_only
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .parts import llama_like, window_key
from .record import Gguf, Record


def qwen2(c: Keys) -> dict[str, Any]:
    """Qwen2ForCausalLM: biases on q, k and v (always, no key), none on o."""
    spec = llama_like(c, c.nullable_count("num_key_value_heads", 32), None, 1e-6, False, 32768)
    return spec | {"attention_bias": True, "out_bias": False} | layer_windows(c, spec["N"])


def qwen3(c: Keys) -> dict[str, Any]:
    """Qwen3ForCausalLM: an RMSNorm of each query and key head; heads of 128 unless head_dim says otherwise."""
    spec = llama_like(c, c.nullable_count("num_key_value_heads", 32), 128, 1e-6, False, 32768)
    return spec | {"attention_bias": c.flag("attention_bias", False), "qk_norm": True} | layer_windows(c, spec["N"])


def layer_windows(c: Keys, N: int) -> dict[str, Any]:
    """Qwen2/Qwen3: a window only with use_sliding_window, on layers max_window_layers.. (or as layer_types says):
    the blocks' attention_layers where some slide and some do not."""
    window = c.nullable_count("sliding_window", 4096) if c.flag("use_sliding_window", False) else None
    key, kinds = "layer_types", c.data.get("layer_types")
    if kinds is None:
        key, first = "max_window_layers", c.index("max_window_layers", 28)
        kinds = ["sliding_attention" if window and i >= first else "full_attention" for i in range(N)]
    elif not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= {"full_attention", "sliding_attention"}:
        raise c.fail(key, kinds, f"a list of {N} 'full_attention' or 'sliding_attention'")
    if "sliding_attention" not in kinds:
        return {}
    if window is None:
        raise c.refuse(key, c.data.get(key, kinds), "sliding layers need use_sliding_window and a sliding_window")
    layers = {"attention_layers": ["sliding" if k == "sliding_attention" else "full" for k in kinds]}
    return window_key(window) | (layers if "full_attention" in kinds else {})


def qwen2_config(spec: Spec) -> dict[str, Any]:
    """spec -> Qwen2's config.json (its q, k, v biases are no key: always there)."""
    return shared_keys(spec) | {"hidden_act": "silu", "use_sliding_window": False}


def qwen3_config(spec: Spec) -> dict[str, Any]:
    """spec -> Qwen3's config.json."""
    return shared_keys(spec) | {
        "attention_bias": spec.attention_bias,
        "hidden_act": "silu",
        "use_sliding_window": False,
    }


RECORDS = (
    Record(
        "qwen2",
        "Qwen2ForCausalLM",
        qwen2,
        LLAMA,
        qwen2_config,
        Gguf("qwen2", LLAMA_LAYOUT, base_only),
        config_alone=True,
    ),
    Record(
        "qwen3",
        "Qwen3ForCausalLM",
        qwen3,
        LLAMA,
        qwen3_config,
        Gguf("qwen3", LLAMA_LAYOUT, base_only),
        config_alone=True,
    ),
)

__all__ = ["RECORDS", "layer_windows"]
