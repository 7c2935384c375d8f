"""Laguna (LagunaForCausalLM): LLaMA's attention with an RMSNorm of each query and key head, and an output gate of
softplus(g_proj x), one a head (gating: true) or one an entry (any other gating), times the heads before o_proj
(tfm's attn_gate, attn_gate_fn softplus, attn_gate_per_head); full layers turning half of each head by 500,000 and
sliding ones all of it by 10,000 (rope_parameters per layer type: rope_local_theta, rope_local_fraction); the first
layer dense, then routed ones: sigmoid scores of the (optionally soft-capped) router logits, a correction bias to
choose (a frozen parameter, counted), the chosen renormalised and scaled by moe_routed_scaling_factor, beside an
ungated shared expert of shared_expert_intermediate_size.

Refused in one line: heads that differ per layer (num_attention_heads_per_layer), and the router weight on the
input (moe_apply_router_weight_on_input, which transformers refuses too). Each kind's share is held as the one that
turns its int(share head_dim) entries, the same model read from its GGUF file (laguna, LagunaModel's: gguf_spec)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import feedforward_kinds, kind_rope_parameters, layer_types, shared_keys
from .deepseek import routed_experts
from .deepseek_gguf import SIGMOID, routed_layout, routed_metadata
from .expert_checkpoints import DEEPSEEK_MOE_GQA
from .gguf_keys import llama_stack, rotated_share, sliding_kinds, sliding_pattern, windowed
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .layout import Family
from .parts import kind_rope, kind_rope_keys, kv_heads, llama_block, typed_layers
from .record import Gguf, Record

BASES = {"full_attention": (500_000.0, 0.5), "sliding_attention": (10_000.0, 1.0)}  # LagunaConfig's


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (LagunaConfig's defaults: 48 heads of 128, 256 experts of 512, 8 chosen)."""
    N, H, d = c.count("num_hidden_layers", 40), c.count("num_attention_heads", 48), c.count("hidden_size", 2048)
    per_layer = c.data.get("num_attention_heads_per_layer")
    if per_layer is not None and per_layer != [H] * N:
        raise c.refuse("num_attention_heads_per_layer", per_layer, f"{H} in every layer (tfm's blocks share H)")
    if c.flag("moe_apply_router_weight_on_input", False):
        raise c.refuse("moe_apply_router_weight_on_input", True, "false (transformers' Laguna raises too)")
    G = c.count("num_key_value_heads", 8)
    m = c.count("head_dim", 128)
    full = kind_rope(c, "full_attention", BASES["full_attention"], 1.0)
    local = kind_rope(c, "sliding_attention", BASES["sliding_attention"], 1.0)
    full, local = ((base, rotated_share(int(m * share), m)) for base, share in (full, local))
    kinds = c.data.get("layer_types") or ["full_attention"] * N
    out = {
        "N": N,
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size", 8192),
        "V": c.count("vocab_size", 100352),
        **kv_heads(c, "num_key_value_heads", G, H),
        **llama_block(c, 1e-6, 131072),
        "qk_norm": True,
        "attn_gate": True,
        "attn_gate_fn": "softplus",
        "attn_gate_per_head": c.data.get("gating", True) in (True, "per-head"),
    }
    out = kind_rope_keys(out | typed_layers(c, N, c.count("sliding_window", 512), kinds), full, local)
    keys = Keys(c.data | {"n_shared_experts": 1}, c.source, notes=c.notes)
    experts = routed_experts(keys, N, 256, 1, 512, 1, k=8, listed=True)
    if not experts:
        return out
    cap = c.cap("moe_router_logit_softcapping")
    router = {"router_score": "sigmoid", "router_bias": True, "router_bias_param": True, "router_renorm": True}
    router |= {"router_scale": c.number("moe_routed_scaling_factor", 1.0)} | ({"router_softcap": cap} if cap else {})
    return out | experts | {"shared_r": c.count("shared_expert_intermediate_size", 512)} | router


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Laguna's config.json (5.x's rope_parameters per layer type, every layer's kinds listed)."""
    out = shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": "silu"}
    out |= {"rope_parameters": kind_rope_parameters(spec), "layer_types": layer_types(spec)}
    out |= {"sliding_window": spec.window or 512, "gating": spec.attn_gate_per_head or "per-element"}
    out["mlp_layer_types"] = ["sparse" if kind == "routed" else "dense" for kind in feedforward_kinds(spec)]
    if spec.E:
        out |= {"num_experts": spec.E, "num_experts_per_tok": spec.k, "moe_intermediate_size": spec.expert_r}
        out |= {"shared_expert_intermediate_size": spec.shared_r, "moe_routed_scaling_factor": spec.router_scale}
        out |= {"moe_router_logit_softcapping": spec.router_softcap or 0.0}
    return out


LAGUNA = Family(
    DEEPSEEK_MOE_GQA.block,
    {ours: theirs.replace("shared_experts.", "shared_expert.") for ours, theirs in DEEPSEEK_MOE_GQA.names.items()}
    | {"ff.router_bias": "mlp.experts.e_score_correction_bias", "attention.W_G": "self_attn.g_proj.weight"},
    DEEPSEEK_MOE_GQA.globals_,
)


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """laguna.* -> spec as llama.cpp's laguna runs it: heads as a list (one count in every layer, as tfm holds
    them), the output gate a head or an entry as its tensor's rows say, each kind's base and rotated count, the
    layers sliding as the pattern says (else a full one then three sliding), the sigmoid mixture with its correction
    bias (a parameter, as Laguna's), expert_weights_norm and _scale, one shared expert of its own width."""
    N, m = c.count("block_count"), c.count("attention.key_length")
    heads = c.data.get("attention.head_count")
    H = heads[0] if isinstance(heads, list) and heads else c.count("attention.head_count")
    if isinstance(heads, list) and heads != [H] * N:
        raise c.refuse("attention.head_count", heads, f"{H} in every layer (tfm's blocks share H)")
    out = llama_stack(c, header, N, H, m, 1e-6) | {"qk_norm": True, "attn_gate": True, "attn_gate_fn": "softplus"}
    out["attn_gate_per_head"] = header.tensors["blk.0.attn_gate.weight"].shape[0] == H
    G = c.count("attention.head_count_kv", H)
    out |= {"G": G} if G != H else {}
    window = c.count("attention.sliding_window", None) if c.has("attention.sliding_window") else None
    window, kinds = (window and sliding_kinds(c, N, 4, full_first=True)) or (0, ["full"] * N)
    out |= windowed(window, kinds)
    full = (c.number("rope.freq_base", 10000.0), rotated_share(c.count("rope.dimension_count", m), m))
    local = (c.number("rope.freq_base_swa", full[0]), rotated_share(c.count("rope.dimension_count_swa", m), m))
    out = kind_rope_keys(out, full, local)
    if not c.has("expert_count"):
        return out
    first = c.index("leading_dense_block_count", 0)
    out |= {"E": c.count("expert_count"), "k": c.count("expert_used_count")}
    out |= {"expert_r": c.count("expert_feed_forward_length"), "shared_r": c.count("expert_shared_feed_forward_length")}
    out |= {"feedforward_layers": ["dense" if i < first else "routed" for i in range(N)]} if first else {}
    if c.index("expert_gating_func", SIGMOID) != SIGMOID:
        raise c.refuse("expert_gating_func", c.data["expert_gating_func"], f"{SIGMOID} (sigmoid), Laguna's scores")
    out |= {"router_score": "sigmoid", "router_bias": True, "router_bias_param": True}
    out |= {
        "router_renorm": c.flag("expert_weights_norm", False),
        "router_scale": c.number("expert_weights_scale", 1.0),
    }
    return out


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> LagunaModel's laguna.* keys beyond the shared ones, with each layer's kind (llama.cpp reads the list;
    its converter writes none, leaving llama.cpp's default of a full layer then three sliding)."""
    m = spec.m
    out: dict[str, Any] = {"attention.head_count": [spec.H] * spec.N} | sliding_pattern(spec)
    if spec.window is not None:
        out["rope.freq_base_swa"] = float(spec.rope_local_theta or spec.rope_theta)
        out["rope.dimension_count_swa"] = int(m * (spec.rope_local_fraction or spec.rope_fraction))
    if spec.E:
        out |= routed_metadata(spec) | {"expert_weights_norm": bool(spec.router_renorm)}
        del out["expert_shared_count"]  # (one, llama.cpp's default: the width is the key it reads)
    return out


_GGUF_NAMES = LLAMA_LAYOUT.names | {"attention.W_G": "attn_gate.weight"}
GGUF = Gguf("laguna", routed_layout(_GGUF_NAMES, LLAMA_LAYOUT.globals_), gguf_spec, gguf_metadata, base="none")
RECORD = Record("laguna", "LagunaForCausalLM", spec, LAGUNA, config, GGUF, config_alone=True)

__all__ = ["RECORD"]
