"""Hy3 (HYV3ForCausalLM, Tencent's HY-V3): LLaMA's attention with an RMSNorm of each query and key head (biases
on all four projections with attention_bias), a dense first layer and routed ones as mlp_layer_types lists them. Its
router: sigmoid scores, a correction bias to choose (on the MoE block), the chosen weights renormalised and scaled
by router_scaling_factor; shared experts of num_shared_experts x moe_intermediate_size, where 0 gives transformers
5.24 one of intermediate_size (its MLP reads 0 as unset): tfm follows it and says so. Its files name the router,
its bias and the shared expert otherwise than transformers holds them (both read); their multi-token
prediction layer (model.layers.80) is skipped, as transformers does. mlp_bias biases the dense and shared MLPs and
not the routed experts, which tfm's experts cannot hold apart: refused with experts. Its GGUF files (hy_v3,
HYV3Model's): LLaMA's names unpermuted with the query/key norms, the MLP where a block has no router, the experts
stacked, the correction bias as exp_probs_b (no suffix, as the converter names mlp.expert_bias and llama.cpp loads
it), the shared expert, expert_weights_norm and _scale; llama.cpp applies no output bias: biases refused."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..spec.definition import Spec
from .config_keys import feedforward_kinds, shared_keys
from .deepseek import routed_experts
from .deepseek_gguf import SIGMOID, routed_layout, routed_metadata
from .expert_checkpoints import HY_V3
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .parts import llama_like
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: 192 experts of 1,536, 8 chosen, one shared, scale 2.826, base 11,158,840)."""
    plain = llama_like(c, c.count("num_key_value_heads", 8), 128, 1e-5, False, 131072, theta=11158840.0)
    bias, mlp_bias = c.flag("attention_bias", False), c.flag("mlp_bias", False)
    out = plain | {"attention_bias": bias, "ff_bias": mlp_bias, "qk_norm": True}
    shared = c.index("num_shared_experts", 1)
    keys = Keys(c.data | {"num_shared_experts": shared or 1}, c.source, notes=c.notes)
    experts = routed_experts(keys, plain["N"], 192, 1, 1536, 1, k=8, shared_key="num_shared_experts", listed=True)
    if not experts:
        return out
    if mlp_bias:
        raise c.refuse("mlp_bias", True, "HY-V3's routed experts have no biases, which tfm's experts cannot hold apart")
    if not shared:
        why = "5.24's HY-V3 reads a shared MLP of size 0 as unset: one of intermediate_size"
        c.ignored("num_shared_experts", why, unless=None)
        experts["shared_r"] = plain["r"]
    router = {"router_score": "sigmoid", "router_bias": True, "router_renorm": True}
    scale = c.number("router_scaling_factor", 2.826)
    return out | experts | router | ({"router_scale": scale} if scale != 1.0 else {})


def config(spec: Spec) -> dict[str, Any]:
    """spec -> HY-V3's config.json."""
    out = shared_keys(spec) | {"attention_bias": spec.attention_bias, "mlp_bias": spec.ff_bias, "hidden_act": "silu"}
    if not spec.E:
        return out | {"mlp_layer_types": ["dense"] * spec.N}
    kinds = feedforward_kinds(spec)
    experts: dict[str, Any] = {"num_experts": spec.E, "num_experts_per_tok": spec.k}
    experts |= {"moe_intermediate_size": spec.expert_r}
    experts |= {"num_shared_experts": (spec.shared_r or 0) // (spec.expert_r or 1)}
    experts |= {"router_scaling_factor": spec.router_scale}
    return out | experts | {"mlp_layer_types": ["sparse" if kind == "routed" else "dense" for kind in kinds]}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's reader (`spec`) with the query/key norms, the blocks before the prediction layers, the MLP where a
    block has no router, the sigmoid mixture with its correction bias, renormalised and scaled as the file says,
    and the shared expert."""
    N = spec["N"] - c.index("nextn_predict_layers", 0)
    out = spec | {"N": N, "qk_norm": True}
    if not c.has("expert_count"):
        return out
    routed = [f"blk.{i}.ffn_gate_inp.weight" in header.tensors for i in range(N)]
    E, r_e = c.count("expert_count"), c.count("expert_feed_forward_length")
    out |= {"E": E, "k": c.count("expert_used_count"), "expert_r": r_e}
    out |= {"shared_r": c.count("expert_shared_feed_forward_length", r_e)}
    out |= {"feedforward_layers": ["routed" if x else "dense" for x in routed]} if not all(routed) else {}
    if c.index("expert_gating_func", SIGMOID) != SIGMOID:
        raise c.refuse("expert_gating_func", c.data["expert_gating_func"], f"{SIGMOID} (sigmoid), HY-V3's scores")
    first = routed.index(True) if any(routed) else 0
    out |= {"router_score": "sigmoid", "router_bias": f"blk.{first}.exp_probs_b" in header.tensors}
    out["router_renorm"] = c.flag("expert_weights_norm", False)
    scale = c.number("expert_weights_scale", 1.0)
    return out | ({"router_scale": scale} if scale not in (0.0, 1.0) else {})


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> HYV3Model's hy_v3.* keys beyond the shared ones."""
    if not spec.E:
        return {}
    out = routed_metadata(spec) | {"expert_weights_norm": bool(spec.router_renorm)}
    del out["leading_dense_block_count"]  # (llama.cpp's hy_v3 finds the dense blocks by their tensors)
    return out


_GGUF = routed_layout({k: v for k, v in LLAMA_LAYOUT.names.items() if v.endswith(".weight")}, LLAMA_LAYOUT.globals_)
GGUF = Gguf("hy_v3", replace(_GGUF, names=_GGUF.names | {"ff.router_bias": "exp_probs_b"}), gguf_spec, gguf_metadata)
RECORD = Record(
    "hy_v3",
    "HYV3ForCausalLM",
    spec,
    HY_V3,
    config,
    GGUF,
    config_alone=True,
    aliases=(  # the names transformers holds them by, which it reads too
        (r"\.mlp\.gate\.weight$", ".mlp.router.gate.weight"),
        (r"\.mlp\.e_score_correction_bias$", ".mlp.expert_bias"),
        (r"\.mlp\.shared_experts\.", ".mlp.shared_mlp."),
    ),
    skipped=(r"^model\.layers\.80\.",),  # the published model's multi-token prediction layer, as transformers
)

__all__ = ["RECORD"]
