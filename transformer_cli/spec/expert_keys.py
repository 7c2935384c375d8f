"""The keys of a mixture of experts beyond E and k: the experts' own size, a shared expert, and how the router
chooses and weights them (Mixtral's softmax over the top k, Qwen-MoE's unnormalised softmax, DeepSeek's
group-limited choice, sigmoid scores and correction bias). The Spec's class body takes each field from here."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import key as _key

EXPERT_FIELDS: dict[str, Any] = {
    "expert_r": field(
        default=None, metadata=_key("posint", "each routed expert's feedforward size [default: r]; with E")
    ),
    "expert_clamp": field(
        default=None,
        metadata=_key(
            "posfloat",
            "the routed experts' gated feedforward clamped (HY-V4's swiglu_limit L): act(min(W1 x, L)) * "
            "clamp(W3 x, -L, L); the shared expert and the dense blocks unclamped; with E and feedforward gated",
        ),
    ),
    "router_renorm": field(
        default=True,
        metadata=_key(
            "bool",
            "the k chosen experts' softmax weights renormalised to sum to 1 (Mixtral); false: the "
            "softmax over all E, read at the chosen k (Qwen-MoE's norm_topk_prob: false); with E",
        ),
    ),
    "shared_r": field(
        default=None, metadata=_key("posint", "a shared expert of this size that every token goes through; with E")
    ),
    "shared_gate": field(
        default=False,
        metadata=_key("bool", "the shared expert's output times sigmoid(w . x), w (1, d) (Qwen2-MoE); with shared_r"),
    ),
    "shared_scale": field(
        default=1.0,
        metadata=_key(
            "posfloat",
            "the shared expert's output times this (Cohere2-MoE's average of the routed and shared outputs: 1/2, "
            "with router_scale 1/2); with shared_r",
        ),
    ),
    "router_on_input": field(
        default=False,
        metadata=_key(
            "bool",
            "each chosen expert's weight scales its input, not its output: expert(w x) (Llama 4); with E",
        ),
    ),
    "router_score": field(
        default="softmax",
        metadata=_key(
            "choice",
            "how the router turns its scores into weights: softmax (Mixtral, Qwen, DeepSeek-V2), "
            "sigmoid of each (DeepSeek-V3), sqrtsoftplus, sqrt(softplus) of each (DeepSeek-V4), or sparsemixer "
            "(PhiMoE, k = 2): the best expert, then the best of the others, each weighted by a softmax over the "
            "experts within router_jitter of it; with E",
            ("softmax", "sigmoid", "sqrtsoftplus", "sparsemixer"),
        ),
    ),
    "router_hash": field(
        default=False,
        metadata=_key(
            "bool",
            "each token's k experts read from a table by its id (ff.router_hash (V, k), a buffer), weighted by the "
            "router's scores there (DeepSeek-V4's hash_moe blocks: feedforward_layers' hashed); with E and V",
        ),
    ),
    "router_jitter": field(
        default=0.01,
        metadata=_key(
            "posfloat",
            "sparsemixer's eps: an expert j shares the softmax of a chosen expert of score m "
            "when (m - s_j) / max(|s_j|, m) <= 2 eps (PhiMoE's router_jitter_noise); with sparsemixer",
        ),
    ),
    "router_groups": field(
        default=None,
        metadata=_key(
            "posint",
            "group-limited routing: the E experts in this many groups, a token choosing among "
            "the router_topk_groups best groups only (DeepSeek's n_group); with E",
        ),
    ),
    "router_topk_groups": field(
        default=None, metadata=_key("posint", "the groups a token may choose its experts from; with router_groups")
    ),
    "router_group_score": field(
        default="max",
        metadata=_key(
            "choice",
            "a group's score: its best expert's (DeepSeek-V2) or the sum of its best two "
            "(top2: DeepSeek-V3); with router_groups",
            ("max", "top2"),
        ),
    ),
    "expert_out_bias": field(
        default=False, metadata=_key("bool", "one bias ff.b_out (d,) on the experts' mixed output (JetMoE's); with E")
    ),
    "router_softcap": field(
        default=None,
        metadata=_key("posfloat", "the router's logits capped as cap tanh(z / cap) before scoring (Laguna); with E"),
    ),
    "router_scale": field(
        default=1.0, metadata=_key("posfloat", "the chosen experts' weights times this (routed_scaling_factor); with E")
    ),
    "router_renorm_eps": field(
        default=None,
        metadata=_key(
            "posfloat",
            "added to the chosen weights' sum before renormalising [default: 1e-20 with sigmoid scores "
            "(DeepSeek-V3), 0 with softmax] (LFM2-MoE: 1e-6); with router_renorm",
        ),
    ),
    "router_logit_bias": field(
        default=False,
        metadata=_key("bool", "the router's scores W_r x + b_r, ff.router_b (E,) a parameter (gpt-oss); with E"),
    ),
    "router_bias": field(
        default=False,
        metadata=_key(
            "bool",
            "a correction bias per expert, ff.router_bias (E,), added to the scores to choose the "
            "experts but not to weight them (DeepSeek-V3); a buffer, not a parameter; with E",
        ),
    ),
    "router_bias_param": field(
        default=False,
        metadata=_key(
            "bool",
            "the correction bias held as a frozen parameter, counted among the parameters (ERNIE 4.5's "
            "moe_statics) rather than a buffer; with router_bias",
        ),
    ),
    "expert_norms": field(
        default=False,
        metadata=_key(
            "bool",
            "Gemma 4's mixture: the dense MLP (shared_r) and the experts read the block's stream through norms of "
            "their own, each output normed before their sum; the router reads the stream's RMS times "
            "ff.router_scale d^-1/2, each chosen weight times ff.expert_scale; with E, shared_r and norm: sandwich",
        ),
    ),
    "zero_experts": field(
        default=None,
        metadata=_key(
            "posint",
            "Z experts that compute nothing: the router scores E + Z, and a column sent to one of the last Z "
            "gets its input back times its weight (LongCat-Flash's zero-computation experts); with E",
        ),
    ),
    "routed_later": field(
        default=False,
        metadata=_key(
            "bool",
            "the routed experts' output joins the stream after the next block's feedforward, not the "
            "block's own (LongCat-Flash's shortcut: its shared expert is added at once); with E",
        ),
    ),
}

__all__ = ["EXPERT_FIELDS"]
