"""Cohere (CohereForCausalLM, Command R): one LayerNorm without bias shared by parallel attention and feedforward,
rotary in interleaved pairs (Cohere's own pairing: the converter does not permute), the logits times logit_scale,
a tied head; per-head query and key norms with use_qk_norm (llama.cpp loads them only for models of 64 or more
layers). Its checkpoint is LLaMA's; its GGUF architecture is command-r.

Cohere2 (Command R7B): its GGUF file (cohere2) is Command-R's with the window. The converter writes no layer
pattern (llama.cpp then slides three layers in four, the full ones unturned) and no head (the embedding's, always);
tfm reads a pattern where a file has one and writes each layer's flag."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import LLAMA
from .config_keys import layer_types
from .gguf_keys import partial_rotary, sliding_pattern, sliding_turning
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .parts import llama_like, typed_layers
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """CohereForCausalLM (Command R): one LayerNorm without bias shared by parallel attention and MLP, rotary in
    interleaved pairs, biases with attention_bias, a LayerNorm per query and key head with use_qk_norm, the
    logits times logit_scale, a tied head."""
    spec = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, True, 8192)
    qk = {"qk_norm": True, "qk_norm_over": "per_head"} if c.flag("use_qk_norm", False) else {}
    return (
        spec
        | qk
        | {
            "norm_type": "layernorm",
            "norm_bias": False,
            "norm_eps": c.number("layer_norm_eps", 1e-5),
            "parallel": True,
            "shared_norm": True,
            "rope_pairing": "interleaved",
            "attention_bias": c.flag("attention_bias", False),
            "logit_scale": c.number("logit_scale", 0.0625),
        }
    )


def cohere2(c: Keys) -> dict[str, Any]:
    """Cohere2ForCausalLM (Command R7B): Cohere's block without query/key norms, three sliding layers to one full by
    default (layer_types; sliding_window_pattern), the sliding layers turning by the rotary positions and the full
    ones without positions. transformers 5.24 runs none without a window: refused."""
    if c.flag("use_qk_norm", False):
        raise c.refuse("use_qk_norm", True, "Cohere2's attention has no query/key norms")
    N, window = c.count("num_hidden_layers"), c.nullable_count("sliding_window", 4096)
    if window is None:
        raise c.refuse("sliding_window", None, "transformers 5.24 runs Cohere2 with a window only")
    base, every = spec(c), c.count("sliding_window_pattern", 4)
    kinds = c.data.get("layer_types") or [
        "sliding_attention" if (i + 1) % every else "full_attention" for i in range(N)
    ]
    layers = typed_layers(c, N, window, kinds)
    return base | layers | {"positional_layers": ["rope" if k == "sliding_attention" else "nope" for k in kinds]}


def cohere2_config(spec: Spec) -> dict[str, Any]:
    """spec -> Cohere2's config.json: Cohere's keys and every layer's kind."""
    out = config(spec) | {"sliding_window": spec.window, "layer_types": layer_types(spec)}
    del out["use_qk_norm"]
    return out


def config(spec: Spec) -> dict[str, Any]:
    return {
        "logit_scale": spec.logit_scale,
        "use_qk_norm": spec.qk_norm,
        "attention_bias": spec.attention_bias,
        "hidden_act": "silu",
    }


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    spec = spec | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "rope_pairing": "interleaved",
        "norm_type": "layernorm",
        "norm_bias": False,
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
        "parallel": True,
        "shared_norm": True,
        "feedforward": "gated",
        "activation": "silu",
        "ff_bias": False,
        "logit_scale": c.number("logit_scale", 0.0625),
        "tie_embeddings": True,
    }
    if "blk.0.attn_q.bias" in header.tensors:
        spec["attention_bias"] = True
    if "blk.0.attn_q_norm.weight" in header.tensors:
        spec |= {"qk_norm": True, "qk_norm_over": "per_head"}
    return spec


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    return {"logit_scale": float(spec.logit_scale)}


def gguf_cohere2(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Command-R's reader, the tied head, the rotated dims, and the layers: the sliding ones turn, the full do not."""
    spec = gguf_spec(c, header, spec)
    layers = sliding_turning(c, spec["N"], 4)
    if not layers:
        raise c.refuse("attention.sliding_window", 0, "llama.cpp's cohere2 (and transformers 5.24) slide")
    return spec | partial_rotary(c, spec["m"]) | layers


def gguf_metadata2(spec: Spec) -> dict[str, Any]:
    return gguf_metadata(spec) | sliding_pattern(spec) | {"rope.scaling.type": "none"}


RECORDS = (
    Record(
        "cohere",
        "CohereForCausalLM",
        spec,
        LLAMA,
        config,
        Gguf("command-r", LLAMA_LAYOUT, gguf_spec, gguf_metadata, base="sizes"),
    ),
    Record(
        "cohere2",
        "Cohere2ForCausalLM",
        cohere2,
        LLAMA,
        cohere2_config,
        Gguf("cohere2", LLAMA_LAYOUT, gguf_cohere2, gguf_metadata2, base="sizes"),
    ),
)

__all__ = ["RECORDS"]
