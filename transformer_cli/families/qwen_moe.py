"""Qwen2-MoE (a gated shared expert) and Qwen3-MoE: Qwen2's and Qwen3's attention with routed and dense layers.

Their GGUF files (qwen2moe, qwen3moe) hold each expert matrix stacked in one tensor. What llama.cpp hard-codes is
read so: Qwen2-MoE does not renormalise the chosen experts' weights, Qwen3-MoE does; every block routes. For LoRA,
peft targets Qwen3-MoE's stacked experts and router (transformers converts it as it converts Qwen2-MoE), Qwen2-MoE's
linear modules alone (hf/lora_modules.py)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import shared_keys
from .expert_checkpoints import QWEN_MOE
from .gguf_layout import LLAMA_EXPERTS, LLAMA_LAYOUT, stacked_experts
from .keys import Keys
from .parts import llama_like
from .record import Gguf, Record


def qwen2_moe(c: Keys) -> dict[str, Any]:
    """Qwen2MoeForCausalLM: Qwen2's attention (biases on q, k, v), E experts of moe_intermediate_size in the
    layers decoder_sparse_step and mlp_only_layers choose (the others: one MLP of intermediate_size), the top k
    of a softmax over all E (renormalised with norm_topk_prob), and a shared expert gated by sigmoid(w . x)."""
    spec = llama_like(c, c.nullable_count("num_key_value_heads", 16), None, 1e-6, False, 32768)
    biases = {"attention_bias": c.flag("qkv_bias", True), "out_bias": False} if c.flag("qkv_bias", True) else {}
    return (
        spec
        | biases
        | _experts(c, spec["N"], 60, 4, 1408)
        | {"shared_r": c.count("shared_expert_intermediate_size", 5632), "shared_gate": True}
    )


def qwen3_moe(c: Keys) -> dict[str, Any]:
    """Qwen3MoeForCausalLM: Qwen3's attention (query/key norms; heads of d / H unless head_dim says), experts as
    Qwen2-MoE's without a shared one."""
    spec = llama_like(c, c.count("num_key_value_heads", 4), None, 1e-6, False, 32768)
    extras = {"attention_bias": c.flag("attention_bias", False), "qk_norm": True}
    return spec | extras | _experts(c, spec["N"], 128, 8, 768)


def _experts(c: Keys, N: int, E: int, k: int, size: int) -> dict[str, Any]:
    """Qwen-MoE's experts: which layers route (decoder_sparse_step, mlp_only_layers), how many, their size and the
    router's renormalisation; no key at all when no layer routes."""
    if c.flag("use_sliding_window", False):
        raise c.refuse("use_sliding_window", True, "tfm maps the MoE Qwen models without sliding layers")
    step, dense = c.count("decoder_sparse_step", 1), c.data.get("mlp_only_layers") or []
    if not isinstance(dense, list) or not all(isinstance(i, int) and 0 <= i < N for i in dense):
        raise c.fail("mlp_only_layers", dense, f"a list of layer indices below num_hidden_layers = {N}")
    routed = [i not in dense and (i + 1) % step == 0 for i in range(N)]
    E, k = c.count("num_experts", E, "num_local_experts"), c.count("num_experts_per_tok", k)  # (5.x: either)
    if not any(routed):
        return {}
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_experts = {E}")
    out: dict[str, Any] = {
        "E": E,
        "k": k,
        "expert_r": c.count("moe_intermediate_size", size),
        "router_renorm": c.flag("norm_topk_prob", False),
    }
    if not all(routed):
        out["feedforward_layers"] = ["routed" if kind else "dense" for kind in routed]
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> the config.json: every layer routed, no window, the shared expert's size where there is one."""
    out = shared_keys(spec) | {
        "attention_bias": spec.attention_bias,
        "hidden_act": "silu",
        "num_experts": spec.E,
        "num_experts_per_tok": spec.k,
        "moe_intermediate_size": spec.expert_r,
        "norm_topk_prob": spec.router_renorm,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "use_sliding_window": False,
    }
    if spec.shared_r:
        out["shared_expert_intermediate_size"] = spec.shared_r
    return out


def _gguf_spec(c: Keys, header: Any, spec: dict[str, Any], renorm: bool) -> dict[str, Any]:
    spec = spec | {"expert_r": c.count("expert_feed_forward_length"), "router_renorm": renorm}
    if c.has("expert_shared_feed_forward_length"):
        spec |= {
            "shared_r": c.count("expert_shared_feed_forward_length"),
            "shared_gate": "blk.0.ffn_gate_inp_shexp.weight" in header.tensors,
        }
    return spec


def gguf_qwen2moe(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Qwen2-MoE: Qwen2's attention, E experts of expert_feed_forward_length, the softmax over all E read at the
    top k (llama.cpp: not renormalised), a shared expert of expert_shared_feed_forward_length gated by a sigmoid."""
    return _gguf_spec(c, header, spec, renorm=False)


def gguf_qwen3moe(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Qwen3-MoE: Qwen3's attention, the chosen experts' weights renormalised (llama.cpp: always)."""
    return _gguf_spec(c, header, spec, renorm=True)


QWEN2MOE_LAYOUT = stacked_experts(LLAMA_LAYOUT.names, LLAMA_LAYOUT.globals_, shared=True)
RECORDS = (
    Record(
        "qwen2_moe",
        "Qwen2MoeForCausalLM",
        qwen2_moe,
        QWEN_MOE,
        config,
        Gguf("qwen2moe", QWEN2MOE_LAYOUT, gguf_qwen2moe),
        config_alone=True,
    ),
    Record(
        "qwen3_moe",
        "Qwen3MoeForCausalLM",
        qwen3_moe,
        QWEN_MOE,
        config,
        Gguf("qwen3moe", LLAMA_EXPERTS, gguf_qwen3moe),
        lora_stacked=("gate_proj", "up_proj", "down_proj", "gate"),
        config_alone=True,
    ),
)

__all__ = ["RECORDS"]
