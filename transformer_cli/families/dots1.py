"""dots.llm1 (Dots1ForCausalLM, rednote-hilab): Qwen3's attention (an RMSNorm of each query and key head, biases on
all four projections with attention_bias) under DeepSeek-V3's mixture (deepseek.py: sigmoid scores, a correction
bias to choose, groups, shared experts, first_k_dense_replace dense layers). A window on the layers from
max_window_layers on when sliding_window is set (or as layer_types says); the published model's reaches past its
62 layers, so none slides. Its config class has no default for the experts' number, the number chosen or the shared
ones: transformers cannot build a config without them, and tfm asks for them.

Its GGUF file (dots1) is LLaMA's names with the per-head norms, the experts stacked and DeepSeek's router keys
(deepseek_gguf.routed_spec); the converter writes the scoring only where config.json names it (transformers' class
does not: llama.cpp then stops), so tfm reads sigmoid, dots.llm1's, where the file says none. It holds no window."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import layer_types, shared_keys
from .deepseek import expert_keys, routed_experts, router_groups, router_scale
from .deepseek_gguf import SIGMOID, routed_layout, routed_metadata, routed_spec
from .expert_checkpoints import DEEPSEEK_MOE_GQA
from .gguf_layout import LLAMA_LAYOUT
from .keys import REQUIRED, Keys
from .parts import llama_like
from .qwen import layer_windows
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    plain = llama_like(c, c.nullable_count("num_key_value_heads", None), None, 1e-6, False, 2048)
    sliding = Keys({"max_window_layers": 62} | c.data | {"use_sliding_window": True}, c.source, notes=c.notes)
    out = (
        plain
        | {"attention_bias": c.flag("attention_bias", False), "qk_norm": True}
        | layer_windows(sliding, plain["N"])
    )
    out |= routed_experts(c, plain["N"], REQUIRED, REQUIRED, 1408, 0, k=REQUIRED)
    if "E" not in out:
        return out
    router = {"router_score": "sigmoid", "router_bias": True, "router_renorm": c.flag("norm_topk_prob", False)}
    return out | router | router_groups(c, out, 1, 1, "top2") | router_scale(c, 1.0)


def config(spec: Spec) -> dict[str, Any]:
    """spec -> dots.llm1's config.json."""
    out = shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": "silu"} | expert_keys(spec)
    return out | {"sliding_window": spec.window, "layer_types": layer_types(spec)}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's reader (biases where the file has them), the per-head norms, DeepSeek's mixture scored by sigmoid
    unless the file says otherwise."""
    spec = {key: value for key, value in spec.items() if key != "out_bias"}  # (attention_bias: all four, o's too)
    return spec | {"qk_norm": True} | routed_spec(c, header, spec["N"], SIGMOID)


GGUF = Gguf("dots1", routed_layout(LLAMA_LAYOUT.names, LLAMA_LAYOUT.globals_), gguf_spec, routed_metadata)
_LORA = ("gate_proj", "up_proj", "down_proj", "gate")
RECORD = Record(
    "dots1", "Dots1ForCausalLM", spec, DEEPSEEK_MOE_GQA, config, GGUF, lora_stacked=_LORA, config_alone=True
)

__all__ = ["RECORD"]
