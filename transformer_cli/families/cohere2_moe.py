"""Cohere2-MoE (Cohere2MoeForCausalLM): Command R7B's block (cohere.py: one norm shared by parallel attention and
feedforward, rotary in interleaved pairs, biases with attention_bias, the logits times logit_scale, a tied head),
its norm an RMS norm where rms_norm_eps is set (else a LayerNorm without bias); dense layers first
(mlp_layer_types, of prefix_dense_intermediate_size) then routed ones: the top k logits softmaxed (or sigmoid, then
renormalised with norm_topk_prob), a shared expert of num_shared_experts x intermediate_size, the routed and shared
outputs averaged (shared_expert_combination_strategy; or summed). Sliding and full layers as layer_types says (the
MoE layers' pattern counted from the first of them); a layer turns when it slides, or when it is a dense prefix
layer and prefix_dense_sliding_window_pattern is 1. transformers 5.24 never moves rope_scaling into its rotary, nor
reads partial_rotary_factor there: tfm follows it and says so. A null window fails its forward: refused.
Its GGUF files (cohere2moe, Cohere2MoeModel's): Command R7B's with each layer's kind, the leading dense layers
(which llama.cpp always turns) of feed_forward_length, the experts of expert_feed_forward_length stacked, the
scoring (expert_gating_func: absent, sigmoid), expert_weights_norm, and a shared expert always averaged."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .cohere import gguf_spec as command_r
from .config_keys import feedforward_kinds, layer_types, positional_kinds
from .deepseek_gguf import SIGMOID, routed_layout, routed_metadata
from .expert_checkpoints import DEEPSEEK_MOE_GQA
from .gguf_keys import sliding_kinds, sliding_pattern, windowed
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .parts import llama_like, typed_layers
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: 8 experts of intermediate_size, 2 chosen, no shared expert, averaged)."""
    c.ignored("rope_scaling", "5.24's Cohere2-MoE never reads it into its rotary")
    c.ignored("partial_rotary_factor", "5.24's Cohere2-MoE turns whole heads", unless=1.0)
    c = Keys(
        {k: v for k, v in c.data.items() if k not in ("rope_scaling", "partial_rotary_factor")}, c.source, notes=c.notes
    )
    N, window = c.count("num_hidden_layers"), c.nullable_count("sliding_window", 4096)
    if window is None:
        raise c.refuse("sliding_window", None, "transformers 5.24's Cohere2-MoE runs with a window only")
    plain = llama_like(c, c.nullable_count("num_key_value_heads", None), 128, 1e-5, True, 8192)
    rms = c.nullable_number("rms_norm_eps", None)
    norms = (
        {"norm_type": "rmsnorm", "norm_eps": rms}
        if rms is not None
        else {"norm_type": "layernorm", "norm_bias": False, "norm_eps": c.number("layer_norm_eps", 1e-5)}
    )
    block = {
        "parallel": True,
        "shared_norm": True,
        "rope_pairing": "interleaved",
        "logit_scale": c.number("logit_scale", 0.0625),
    }
    out = plain | norms | block | {"attention_bias": c.flag("attention_bias", False)}
    first, every = c.index("first_k_dense_replace", 0), c.count("sliding_window_pattern", 4)
    prefix_every = c.count("prefix_dense_sliding_window_pattern", 1)
    kinds = c.data.get("layer_types") or [
        "sliding_attention" if (i + 1) % prefix_every else "full_attention" for i in range(first)
    ] + ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(N - first)]
    mlp = c.data.get("mlp_layer_types") or ["dense" if i < first else "sparse" for i in range(N)]
    if not isinstance(mlp, list) or len(mlp) != N or any(k not in ("dense", "sparse") for k in mlp):
        raise c.fail("mlp_layer_types", mlp, f'a list of {N} "dense" or "sparse"')
    turning = [
        "rope" if kind == "sliding_attention" or (m == "dense" and prefix_every == 1) else "nope"
        for kind, m in zip(kinds, mlp, strict=False)
    ]
    out |= typed_layers(c, N, window, kinds) | ({"positional_layers": turning} if "nope" in turning else {})
    return out | _experts(c, plain, mlp)


def _experts(c: Keys, plain: dict[str, Any], mlp: list[str]) -> dict[str, Any]:
    """The routed layers' experts, their router and the shared expert's combination; the dense layers' size."""
    r = plain["r"]
    dense = {"r": c.nullable_count("prefix_dense_intermediate_size", None) or r}
    if "sparse" not in mlp:
        return dense
    E, k = c.count("num_experts", 8), c.count("num_experts_per_tok", 2)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_experts = {E}")
    out: dict[str, Any] = dense | {"E": E, "k": k, "expert_r": r}
    if "dense" in mlp:
        out["feedforward_layers"] = ["routed" if m == "sparse" else "dense" for m in mlp]
    how = c.text("expert_selection_fn", "softmax")
    if how == "softmax":
        c.ignored("norm_topk_prob", "5.24's softmax over the top k always sums to 1", unless=True)
    elif how == "sigmoid":
        out |= {"router_score": "sigmoid", "router_renorm": c.flag("norm_topk_prob", True)}
    else:
        raise c.refuse("expert_selection_fn", how, "transformers 5.24 routes by softmax or sigmoid")
    shared = c.index("num_shared_experts", 0)
    if shared:
        out["shared_r"] = shared * r
        combine = c.text("shared_expert_combination_strategy", "average")
        if combine == "average":
            out |= {"router_scale": 0.5, "shared_scale": 0.5}
        elif combine != "sum":
            raise c.refuse("shared_expert_combination_strategy", combine, "transformers 5.24 takes sum or average")
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Cohere2-MoE's config.json (every layer's kinds listed)."""
    kinds = feedforward_kinds(spec)
    prefix_rope = all(kind == "rope" for kind, m in zip(positional_kinds(spec), kinds, strict=True) if m == "dense")
    out: dict[str, Any] = {
        "vocab_size": spec.V,
        "hidden_size": spec.d,
        "num_hidden_layers": spec.N,
        "num_attention_heads": spec.H,
        "num_key_value_heads": spec.kv_heads,
        "head_dim": spec.m,
        "max_position_embeddings": spec.context or 8192,
        "tie_word_embeddings": spec.tie_embeddings,
        "rope_theta": spec.rope_theta,
        "logit_scale": spec.logit_scale,
        "attention_bias": spec.attention_bias,
        "hidden_act": "silu",
        "sliding_window": spec.window,
        "layer_types": layer_types(spec),
        "mlp_layer_types": ["sparse" if m == "routed" else "dense" for m in kinds],
        "prefix_dense_sliding_window_pattern": 1 if prefix_rope else 2,
        "intermediate_size": spec.expert_r or spec.r,
        "prefix_dense_intermediate_size": spec.r,
    }
    out |= (
        {"rms_norm_eps": spec.norm_eps}
        if spec.norm_type == "rmsnorm"
        else {"layer_norm_eps": spec.norm_eps, "rms_norm_eps": None}
    )
    if spec.E:
        out |= {"num_experts": spec.E, "num_experts_per_tok": spec.k}
        out |= {"expert_selection_fn": spec.router_score, "norm_topk_prob": spec.router_renorm}
        out |= {"num_shared_experts": (spec.shared_r or 0) // (spec.expert_r or spec.r)}
        out |= {"shared_expert_combination_strategy": "average" if spec.shared_scale != 1.0 else "sum"}
    return out


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """cohere2moe.* -> spec as llama.cpp's cohere2moe runs it: the blocks before the prediction layers, an RMS norm
    where the file gives its eps (else a LayerNorm), the layers sliding as the pattern says (else three in four
    after a full one), turning where they slide or are leading dense layers, the mixture of softmax or sigmoid
    scores (sigmoid where the file names none), a shared expert averaged with the routed ones."""
    N = spec["N"] - c.index("nextn_predict_layers", 0)
    out = command_r(c, header, spec) | {"N": N, "tie_embeddings": spec["tie_embeddings"]}
    if c.has("attention.layer_norm_rms_epsilon"):
        out = {k: v for k, v in out.items() if k != "norm_bias"}
        out |= {"norm_type": "rmsnorm", "norm_eps": c.number("attention.layer_norm_rms_epsilon")}
    window, kinds = sliding_kinds(c, N, 4, full_first=True) or (0, ["full"] * N)
    first = c.index("leading_dense_block_count", 0)
    turning = ["rope" if kind == "sliding" or i < first else "nope" for i, kind in enumerate(kinds)]
    out |= windowed(window, kinds) | ({"positional_layers": turning} if "nope" in turning else {})
    if not c.has("expert_count"):
        return out
    E, r_e = c.count("expert_count"), c.count("expert_feed_forward_length")
    out |= {"E": E, "k": c.count("expert_used_count"), "expert_r": r_e}
    out |= {"router_renorm": c.flag("expert_weights_norm", False)}
    out |= {"feedforward_layers": ["dense" if i < first else "routed" for i in range(N)]} if first else {}
    out |= {"router_score": "sigmoid"} if c.index("expert_gating_func", SIGMOID) == SIGMOID else {}
    scale = c.number("expert_weights_scale", 1.0)
    shared = c.index("expert_shared_count", 0)
    if shared:  # (its output and the routed experts' averaged)
        width = c.count("expert_shared_feed_forward_length", shared * r_e)
        return out | {"shared_r": width, "shared_scale": 0.5, "router_scale": 0.5 * (scale or 1.0)}
    return out | ({"router_scale": scale} if scale not in (0.0, 1.0) else {})


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> Cohere2MoeModel's cohere2moe.* keys beyond the shared ones."""
    out: dict[str, Any] = {"logit_scale": float(spec.logit_scale), "rope.scaling.type": "none"} | sliding_pattern(spec)
    if not spec.E:
        return out
    out |= routed_metadata(spec) | {"expert_weights_norm": bool(spec.router_renorm)}
    if spec.shared_r:  # (averaged by llama.cpp itself: the scale it reads is the routed experts' alone)
        out["expert_weights_scale"] = float(spec.router_scale) / 0.5
    return out


_GGUF_NAMES = {k: v for k, v in LLAMA_LAYOUT.names.items() if not k.startswith("norm2")}
GGUF = Gguf("cohere2moe", routed_layout(_GGUF_NAMES, LLAMA_LAYOUT.globals_), gguf_spec, gguf_metadata, base="sizes")
_LORA = ("gate_proj", "up_proj", "down_proj", "gate")
RECORD = Record(
    "cohere2_moe", "Cohere2MoeForCausalLM", spec, DEEPSEEK_MOE_GQA, config, GGUF, lora_stacked=_LORA, config_alone=True
)

__all__ = ["RECORD"]
