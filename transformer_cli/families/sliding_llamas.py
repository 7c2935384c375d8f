"""LLaMA's block with sliding layers named by layer_types: Ministral (MinistralForCausalLM, Ministral-8B: every
layer slides by default when sliding_window is set, none when it is null) and CWM (CwmForCausalLM, Meta's Code
World Model: one full layer in four, the first full, a window of 8192, and LLaMA 3's scaled rotary with base 1e6
where the file names no rotary parameters). Neither has a GGUF architecture of its own that holds the layers'
kinds (llama.cpp runs Ministral as llama, without the window), so tfm writes none."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import LLAMA
from .config_keys import layer_types, shared_keys
from .keys import Keys
from .parts import default_rope, llama_like, typed_layers
from .record import Record

# CwmConfig's rotary when the file gives neither rope_parameters nor rope_scaling (a flat rope_theta is then unused)
CWM_ROPE = {
    "rope_type": "llama3",
    "rope_theta": 1_000_000.0,
    "factor": 16.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
}


def ministral(c: Keys) -> dict[str, Any]:
    """config.json -> spec (MistralConfig's defaults: 8 key/value heads, a window of 4096; no default head_dim)."""
    if not c.has("head_dim"):
        raise c.refuse("head_dim", None, "transformers 5.24's MinistralAttention needs a head_dim (it has no default)")
    N, window = c.count("num_hidden_layers"), c.nullable_count("sliding_window", 4096)
    spec = llama_like(c, c.count("num_key_value_heads", 8), None, 1e-6, False, 131072)
    return spec | typed_layers(c, N, window, ["sliding_attention" if window else "full_attention"] * N)


def cwm(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    N = c.count("num_hidden_layers")
    c = default_rope(c, CWM_ROPE, "5.24's CwmConfig sets LLaMA 3's scaled rotary of base 1e6 when no rope_parameters")
    spec = llama_like(c, c.count("num_key_value_heads", 8), 128, 1e-5, False, 131072, theta=1_000_000.0)
    kinds = ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(N)]
    return (
        spec
        | {"ff_bias": c.flag("mlp_bias", False)}
        | typed_layers(c, N, c.nullable_count("sliding_window", 8192), kinds)
    )


def ministral_config(spec: Spec) -> dict[str, Any]:
    """spec -> Ministral's config.json."""
    return shared_keys(spec) | {"hidden_act": "silu", "sliding_window": spec.window, "layer_types": layer_types(spec)}


def cwm_config(spec: Spec) -> dict[str, Any]:
    """spec -> CWM's config.json (its rotary as rope_parameters: CwmConfig reads no flat rope_theta)."""
    out = shared_keys(spec)
    rotary = {"rope_type": "default", "rope_theta": out.pop("rope_theta")} | out.pop("rope_scaling", {})
    kinds = {"sliding_window": spec.window or 8192, "layer_types": layer_types(spec)}
    return out | {"rope_parameters": rotary, "mlp_bias": spec.ff_bias, "hidden_act": "silu"} | kinds


RECORDS = (
    Record("ministral", "MinistralForCausalLM", ministral, LLAMA, ministral_config, config_alone=True),
    Record("cwm", "CwmForCausalLM", cwm, LLAMA, cwm_config, config_alone=True),
)

__all__ = ["RECORDS"]
