"""EXAONE MoE (ExaoneMoeForCausalLM, LG AI Research's K-EXAONE): EXAONE 4's attention (exaone4.py: RMSNorms of each
query and key head, three sliding layers to one full, only the sliding ones turning) in LLaMA's pre-norm block, with
DeepSeek-V3's router and shared experts (deepseek.py) after first_k_dense_replace dense layers or as mlp_layer_types
lists them. Its config class takes an integer sliding_window only (null fails its validation): tfm refuses null.
Its GGUF file (exaone-moe) is LLaMA's names with EXAONE 4's layer flags, the experts stacked and DeepSeek's router
keys; sigmoid where the converter writes no scoring (transformers' config has none: llama.cpp then refuses the file),
the prediction layers after the model's read past, dense layers only before the routed ones."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import feedforward_kinds, layer_types, shared_keys
from .deepseek import expert_keys, routed_experts
from .deepseek_gguf import SIGMOID, routed_layout, routed_metadata, routed_spec
from .exaone4 import layer_kinds
from .expert_checkpoints import EXAONE_MOE
from .gguf_keys import sliding_pattern, sliding_turning
from .gguf_layout import LLAMA_LAYOUT
from .glm4_moe import routed_router
from .keys import Keys
from .parts import llama_like
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: 64 experts of 1,024, 8 chosen, one shared, one dense layer, scale 2.5)."""
    if "sliding_window" in c.data and c.data["sliding_window"] is None:
        raise c.refuse("sliding_window", None, "transformers 5.24's ExaoneMoeConfig takes an integer window only")
    plain = llama_like(c, c.count("num_key_value_heads", 32), None, 1e-5, False, 2048)
    out = plain | {"qk_norm": True} | layer_kinds(c, plain["N"])
    out |= routed_experts(c, plain["N"], 64, 1, 1024, 1, k=8, shared_key="num_shared_experts", listed=True)
    return out | routed_router(c, out, 2.5)


def config(spec: Spec) -> dict[str, Any]:
    """spec -> EXAONE MoE's config.json (the layers' kinds as layer_types and mlp_layer_types)."""
    experts = expert_keys(spec)
    experts["num_shared_experts"] = experts.pop("n_shared_experts")
    experts["num_experts"] = experts.pop("n_routed_experts")
    mlp = {"mlp_layer_types": ["sparse" if kind == "routed" else "dense" for kind in feedforward_kinds(spec)]}
    return shared_keys(spec) | {"sliding_window": spec.window or 4096, "layer_types": layer_types(spec)} | experts | mlp


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's reader over the model's blocks, a norm per query and key head, EXAONE 4's layers, DeepSeek's mixture
    (sigmoid unless the file says otherwise)."""
    N = spec["N"] - c.index("nextn_predict_layers", 0)
    return spec | {"N": N, "qk_norm": True} | sliding_turning(c, N, 4) | routed_spec(c, header, N, SIGMOID)


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    return sliding_pattern(spec) | routed_metadata(spec) | {"rope.scaling.type": "none"}


GGUF = Gguf("exaone-moe", routed_layout(LLAMA_LAYOUT.names, LLAMA_LAYOUT.globals_), gguf_spec, gguf_metadata)
_LORA = ("gate_proj", "up_proj", "down_proj", "gate")
RECORD = Record(
    "exaone_moe", "ExaoneMoeForCausalLM", spec, EXAONE_MOE, config, GGUF, lora_stacked=_LORA, config_alone=True
)

__all__ = ["RECORD"]
