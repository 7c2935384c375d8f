"""What several families write alike in the config.json of a GGUF file's model (gguf/hf_config.py): the sizes under
their usual names, and the rotary as transformers 4.x wrote it (5.x reads both)."""

from __future__ import annotations

from typing import Any

from ..spec.choices import DENSE, ROTARY, ROUTED, SLIDING
from ..spec.definition import Spec
from ..spec.stacks import kind_of


def layer_types(spec: Spec) -> list[str]:
    """Each block's kind as transformers' layer_types names it: full_attention throughout without a window, else the
    spec's attention_layers (all sliding by default) repeated over the N blocks."""
    if spec.window is None:
        return ["full_attention"] * spec.N
    return [f"{kind_of(spec.attention_layers, i, SLIDING)}_attention" for i in range(spec.N)]


def feedforward_kinds(spec: Spec) -> list[str]:
    """Each block's feedforward, routed or dense: the spec's feedforward_layers (a pattern, maybe shorter than N)
    over the N blocks."""
    return [kind_of(spec.feedforward_layers, i, ROUTED if spec.E else DENSE) for i in range(spec.N)]


def positional_kinds(spec: Spec) -> list[str]:
    """Each block's positions, rope or nope: the spec's positional_layers over the N blocks."""
    return [kind_of(spec.positional_layers, i, ROTARY) for i in range(spec.N)]


def kind_rope_parameters(spec: Spec) -> dict[str, Any]:
    """5.x's rope_parameters per layer type: the stack's for the full layers, the sliding ones' own base and share
    where the spec has them (Laguna, MiMo-V2-Flash)."""
    full = {"rope_type": "default", "rope_theta": spec.rope_theta, "partial_rotary_factor": spec.rope_fraction}
    local = full | {"rope_theta": spec.rope_local_theta or spec.rope_theta}
    return {
        "full_attention": full,
        "sliding_attention": local | {"partial_rotary_factor": spec.rope_local_fraction or spec.rope_fraction},
    }


def size_keys(spec: Spec) -> dict[str, Any]:
    """The sizes as most families name them (vocab_size, hidden_size, ...)."""
    return {
        "vocab_size": spec.V,
        "hidden_size": spec.d,
        "intermediate_size": spec.r,
        "num_hidden_layers": spec.N,
        "num_attention_heads": spec.H,
        "num_key_value_heads": spec.kv_heads,
        "head_dim": spec.m,
        "max_position_embeddings": spec.context or spec.max_len or 2048,
        "tie_word_embeddings": spec.tie_embeddings,
    }


def rope_keys(spec: Spec) -> dict[str, Any]:
    """rope_theta and rope_scaling as 4.x wrote them (5.x reads both)."""
    out: dict[str, Any] = {"rope_theta": spec.rope_theta}
    if spec.rope_fraction != 1.0:
        out["partial_rotary_factor"] = spec.rope_fraction
    kind = spec.rope_scaling
    if kind == "linear":
        out["rope_scaling"] = {"rope_type": "linear", "factor": spec.rope_factor}
    elif kind == "llama3":
        out["rope_scaling"] = {
            "rope_type": "llama3",
            "factor": spec.rope_factor,
            "low_freq_factor": spec.rope_low_freq_factor,
            "high_freq_factor": spec.rope_high_freq_factor,
            "original_max_position_embeddings": spec.rope_original_max_len,
        }
    elif kind == "yarn":
        out["rope_scaling"] = {
            "rope_type": "yarn",
            "factor": spec.rope_factor,
            "beta_fast": spec.rope_beta_fast,
            "beta_slow": spec.rope_beta_slow,
            "original_max_position_embeddings": spec.rope_original_max_len,
        }
        if spec.rope_attention_factor is not None:
            out["rope_scaling"]["attention_factor"] = spec.rope_attention_factor
    elif kind == "longrope":
        out["rope_scaling"] = {
            "rope_type": "longrope",
            "short_factor": list(spec.rope_short_factor or ()),
            "long_factor": list(spec.rope_long_factor or ()),
        }
        out["original_max_position_embeddings"] = spec.rope_original_max_len
    return out


def shared_keys(spec: Spec) -> dict[str, Any]:
    """What the LLaMA-like families' configs share: the sizes, the rotary and the norm's epsilon."""
    out = size_keys(spec) | rope_keys(spec)
    if spec.norm_type == "layernorm":
        out["layer_norm_eps"] = spec.norm_eps
    if spec.norm_type == "rmsnorm":
        out["rms_norm_eps"] = spec.norm_eps
    return out


__all__ = ["rope_keys", "shared_keys", "size_keys"]
