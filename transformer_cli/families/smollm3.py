"""SmolLM3 (SmolLM3ForCausalLM, Hugging Face's SmolLM3-3B): LLaMA's block where some layers attend without positions
(no_rope_layers: 1 turns by the rotary positions, 0 not; by default every fourth layer is NoPE), tfm's
positional_layers. Its GGUF architecture (smollm3) is LLaMA's permuted layout; llama.cpp takes every fourth layer as
NoPE whatever the file says, so only that pattern is read and written."""

from __future__ import annotations

from typing import Any

from ..spec.choices import ROTARY
from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .checkpoints import LLAMA
from .config_keys import layer_types, shared_keys
from .gguf_layout import LLAMA_LAYOUT, LLAMA_PERMUTED, LLAMA_REDO
from .keys import Keys
from .parts import llama_like, typed_layers
from .record import Gguf, Record

GGUF_PATTERN = ["rope", "rope", "rope", "nope"]  # llama.cpp's n_no_rope_layer_step = 4


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec. A window slides the NoPE layers only, and only with use_sliding_window (transformers
    keeps sliding_window unused otherwise: said on stderr)."""
    N = c.count("num_hidden_layers")
    every = c.count("no_rope_layer_interval", 4)
    flags = c.data.get("no_rope_layers") or [int((i + 1) % every != 0) for i in range(N)]
    if not isinstance(flags, list) or len(flags) != N or not set(flags) <= {0, 1}:
        raise c.fail("no_rope_layers", flags, f"a list of {N} 1s (the layer turns by the rotary positions) or 0s")
    plain = llama_like(c, c.count("num_key_value_heads", 4), None, 1e-6, True, 32768, theta=2_000_000.0)
    biases = {"attention_bias": c.flag("attention_bias", False), "ff_bias": c.flag("mlp_bias", False)}
    layers: dict[str, Any] = {"positional_layers": ["rope" if f else "nope" for f in flags]}
    window = c.nullable_count("sliding_window", None)
    if c.flag("use_sliding_window", False) and window is not None:
        layers |= typed_layers(c, N, window, ["full_attention" if f else "sliding_attention" for f in flags])
    elif window is not None:
        c.ignored("sliding_window", "5.24 slides no SmolLM3 layer without use_sliding_window")
    return plain | biases | layers


def config(spec: Spec) -> dict[str, Any]:
    """spec -> SmolLM3's config.json."""
    turning = [int(kind_of(spec.positional_layers, i, ROTARY) == ROTARY) for i in range(spec.N)]
    out = shared_keys(spec) | {"no_rope_layers": turning, "hidden_act": "silu"}
    out |= {"attention_bias": spec.attention_bias, "mlp_bias": spec.ff_bias}
    if spec.window is not None:
        out |= {"use_sliding_window": True, "sliding_window": spec.window, "layer_types": layer_types(spec)}
    return out


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's sizes and rotary; every fourth layer NoPE (llama.cpp's rule)."""
    return spec | {"positional_layers": GGUF_PATTERN}


GGUF = Gguf("smollm3", LLAMA_LAYOUT, gguf_spec, transforms=LLAMA_PERMUTED, redo=LLAMA_REDO)
RECORD = Record("smollm3", "SmolLM3ForCausalLM", spec, LLAMA, config, GGUF, config_alone=True)

__all__ = ["RECORD"]
