"""MiniMax-M2 (MiniMaxM2ForCausalLM): every layer routed to E experts of intermediate_size by sigmoid scores, a
correction bias to choose (a buffer on the MoE block) and the chosen weights renormalised; no shared expert, no
scaling. RMSNorms of the queries and keys over all heads (OLMo 2's) before the rotary, which turns the first
rotary_dim of each head (the released checkpoints' key, partial_rotary_factor's default). Mixtral's checkpoint names.
transformers 5.24 reads none of use_qk_norm, scoring_func, use_routing_bias, routed_scaling_factor,
shared_intermediate_size or sliding_window: tfm follows it and says so where a file sets one otherwise. Its GGUF
file (minimax-m2) is LLaMA's names with the norms over all heads, the experts stacked, exp_probs_b the correction
bias, rotary_dim as rope.dimension_count; the converter writes the scoring only where config.json names it (llama.cpp
stops without it), so tfm reads sigmoid, the model's only scoring."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import shared_keys
from .deepseek_gguf import SIGMOID, routed_layout
from .expert_checkpoints import MINIMAX_M2
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .parts import llama_like
from .record import Gguf, Record

_IGNORED = (  # what transformers 5.24 does whatever the file says
    ("use_qk_norm", True, "5.24's MiniMaxM2Attention always normalises the queries and keys"),
    ("scoring_func", "sigmoid", "5.24's router always scores by sigmoid"),
    ("use_routing_bias", True, "5.24's router always adds its correction bias"),
    ("routed_scaling_factor", 1.0, "5.24's router does not scale the chosen weights"),
    ("shared_intermediate_size", 0, "5.24's MiniMax-M2 has no shared expert"),
    ("sliding_window", None, "5.24's MiniMax-M2 attends to every earlier token"),
)


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: 256 experts, 8 chosen, heads of 128, base 5e6)."""
    for key, applied, why in _IGNORED:
        c.ignored(key, why, unless=applied)
    m = c.count("head_dim", 128)
    fraction = c.count("rotary_dim") / m if c.has("rotary_dim") else 1.0
    plain = llama_like(c, c.count("num_key_value_heads", 8), 128, 1e-6, False, 196608, theta=5e6, partial=fraction)
    E, k = c.count("num_local_experts", 256, "num_experts"), c.count("num_experts_per_tok", 8)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_local_experts = {E}")
    return plain | {"E": E, "k": k} | _ROUTED


_ROUTED = {
    "router_score": "sigmoid",
    "router_bias": True,
    "router_renorm": True,
    "qk_norm": True,
    "qk_norm_over": "all",
}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's reader (E, k, the rotated dims) with the norms over all heads and the sigmoid router."""
    if c.index("expert_gating_func", SIGMOID) != SIGMOID:
        raise c.refuse("expert_gating_func", c.index("expert_gating_func", SIGMOID), "MiniMax-M2 scores by sigmoid (2)")
    return spec | _ROUTED


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    return {"expert_feed_forward_length": spec.r, "expert_gating_func": SIGMOID}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> MiniMax-M2's config.json."""
    experts = {"num_local_experts": spec.E, "num_experts_per_tok": spec.k}
    return shared_keys(spec) | experts | {"intermediate_size": spec.expert_r or spec.r, "hidden_act": "silu"}


RECORD = Record(
    "minimax_m2",
    "MiniMaxM2ForCausalLM",
    spec,
    MINIMAX_M2,
    config,
    Gguf("minimax-m2", routed_layout(LLAMA_LAYOUT.names, LLAMA_LAYOUT.globals_), gguf_spec, gguf_metadata),
    lora_stacked=("w1", "w3", "w2", "gate"),
    config_alone=True,
)

__all__ = ["RECORD"]
