"""Qwen3-Next (Qwen3NextForCausalLM) and Qwen3.5's text models (qwen3_5_text, Qwen3_5ForCausalLM; qwen3_5_moe_text,
Qwen3_5MoeForCausalLM): pre-norm blocks whose mixer is Gated DeltaNet (components/deltanet.py) in the
linear_attention layers of layer_types (by default three of every four: full_attention_interval) and gated attention
in the full_attention ones: grouped-query heads of head_dim with an output gate sigmoid(W_G x) an entry (q_proj
holds each head's query rows, then its gate rows), a norm of each query and key head, rotary positions on
partial_rotary_factor (0.25) of each head. Every RMSNorm but the linear attention's gated one scales by 1 + w
(zero-centred gains). Qwen3.5's text rotary is MRoPE, which for text (every axis the same position) is the 1-D
rotary of its share; its mrope sections play no part.

Qwen3-Next's feedforward is Qwen2-MoE's (experts of moe_intermediate_size where decoder_sparse_step and
mlp_only_layers say, softmax scores renormalised with norm_topk_prob, a shared expert gated by sigmoid(w . x)),
Qwen3.5's text models' a SwiGLU of intermediate_size, Qwen3.5-MoE's the experts in every layer, always renormalised.
The linear attention's projections are Qwen3-Next's in_proj_qkvz and in_proj_ba, each key head's rows together
([q; k; v; z] and [b; a] of its value heads), Qwen3.5's in_proj_qkv, in_proj_z, in_proj_b and in_proj_a. Their
GGUF files: qwen3_next_gguf.py (qwen3next), qwen3_5_gguf.py (qwen35, qwen35moe).
"""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .config_keys import shared_keys
from .expert_checkpoints import _qwen_moe_names
from .keys import Keys
from .layout import Family
from .parts import llama_like
from .qwen3_5_gguf import GGUF as QWEN3_5_GGUF
from .qwen3_5_gguf import MOE_GGUF as QWEN3_5_MOE_GGUF
from .qwen3_next_gguf import GGUF
from .qwen_moe import _experts
from .record import Record


def _linear(c: Keys) -> dict[str, Any]:
    """The linear attention's keys (Qwen3NextConfig's defaults: 16 key heads and 32 value heads of 128)."""
    nk, nv = c.count("linear_num_key_heads", 16), c.count("linear_num_value_heads", 32)
    if nv % nk:
        raise c.fail("linear_num_value_heads", nv, f"a multiple of linear_num_key_heads = {nk}")
    return {
        "linear_k_heads": nk,
        "linear_k_dim": c.count("linear_key_head_dim", 128),
        "linear_v_heads": nv,
        "linear_v_dim": c.count("linear_value_head_dim", 128),
        "conv_kernel": c.count("linear_conv_kernel_dim", 4),
    }


def _kinds(c: Keys, N: int) -> dict[str, Any]:
    """layer_types (else three linear layers of every full_attention_interval) as mixer_layers."""
    interval = c.count("full_attention_interval", 4)
    kinds = c.data.get("layer_types") or [
        "linear_attention" if (i + 1) % interval else "full_attention" for i in range(N)
    ]
    if not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= {"linear_attention", "full_attention"}:
        raise c.fail("layer_types", kinds, f"a list of {N} 'linear_attention' or 'full_attention'")
    mixers = ["deltanet" if kind == "linear_attention" else "standard" for kind in kinds]
    return {} if set(mixers) == {"standard"} else {"mixer_layers": mixers}


def _base(c: Keys, G: int, head_dim: int) -> dict[str, Any]:
    """What the three share: the gated attention, the zero-centred norms, the linear layers."""
    if c.flag("attention_bias", False):
        raise c.refuse("attention_bias", True, "false: tfm's output gate has no bias (q_proj's gate rows would)")
    out = llama_like(c, c.count("num_key_value_heads", G), head_dim, 1e-6, False, 32768, partial=0.25)
    out |= {"qk_norm": True, "norm_plus_one": True, "attn_gate": True}
    return out | _linear(c) | _kinds(c, out["N"])


def qwen3_next(c: Keys) -> dict[str, Any]:
    """Qwen3NextForCausalLM (its defaults: 16 heads of 256, 2 key/value heads, 512 experts of 512, 10 chosen)."""
    out = _base(c, 2, 256)
    experts = _experts(c, out["N"], 512, 10, 512)
    if experts:
        out |= experts | {"shared_r": c.count("shared_expert_intermediate_size", 512), "shared_gate": True}
    return out


def qwen3_5(c: Keys) -> dict[str, Any]:
    """Qwen3_5ForCausalLM's text model: a SwiGLU in every block."""
    return _base(c, 4, 256)


def qwen3_5_moe(c: Keys) -> dict[str, Any]:
    """Qwen3_5MoeForCausalLM's text model: experts in every block, renormalised, and the gated shared expert (its
    config has no intermediate_size: r is the experts' width, no dense MLP reading it)."""
    width = {"intermediate_size": c.data.get("moe_intermediate_size", 512)}
    out = _base(Keys(width | c.data, c.source, notes=c.notes), 2, 256)
    E, k = c.count("num_experts", 256), c.count("num_experts_per_tok", 8)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_experts = {E}")
    out |= {"E": E, "k": k, "expert_r": c.count("moe_intermediate_size", 512), "router_renorm": True}
    return out | {"shared_r": c.count("shared_expert_intermediate_size", 512), "shared_gate": True}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> the config.json keys the three share."""
    kinds = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    out = shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": "silu"}
    out |= {"layer_types": ["linear_attention" if kind == "deltanet" else "full_attention" for kind in kinds]}
    out |= {"partial_rotary_factor": spec.rope_fraction, "linear_conv_kernel_dim": spec.conv_kernel}
    out |= {"linear_num_key_heads": spec.linear_k_heads, "linear_key_head_dim": spec.linear_k_dim}
    out |= {"linear_num_value_heads": spec.linear_v_heads, "linear_value_head_dim": spec.linear_v_dim}
    if spec.E:
        out |= {"num_experts": spec.E, "num_experts_per_tok": spec.k, "moe_intermediate_size": spec.expert_r}
        out |= {"norm_topk_prob": spec.router_renorm, "shared_expert_intermediate_size": spec.shared_r}
    return out


def _names(next_: bool) -> dict[str, str]:
    names = {k: v for k, v in _qwen_moe_names().items() if k not in ("attention.W_Q", "attention.b_Q")}
    delta = {"kernel": "conv1d.weight", "A_log": "A_log", "dt_bias": "dt_bias", "norm.gamma": "norm.weight"}
    delta |= {"W_out": "out_proj.weight"}
    if not next_:
        delta |= {"W_z": "in_proj_z.weight", "W_b": "in_proj_b.weight", "W_a": "in_proj_a.weight"}
    return names | {f"delta.{k}": f"linear_attn.{v}" for k, v in delta.items()}


def _family(next_: bool) -> Family:
    """The checkpoint: q_proj each head's query rows then its gate rows; the linear layers' projections fused."""
    fused: tuple = (("self_attn.q_proj.weight", ("attention.W_Q", "attention.W_G"), lambda spec: spec.H),)
    if next_:  # (each key head's rows of q, k, v, z together, and its value heads' b and a)
        qkvz = ("delta.W_q", "delta.W_k", "delta.W_v", "delta.W_z")
        fused += (("linear_attn.in_proj_qkvz.weight", qkvz, lambda spec: spec.linear_k_heads),)
        fused += (("linear_attn.in_proj_ba.weight", ("delta.W_b", "delta.W_a"), lambda spec: spec.linear_k_heads),)
    else:
        fused += (("linear_attn.in_proj_qkv.weight", ("delta.W_q", "delta.W_k", "delta.W_v"), lambda spec: 1),)
    globals_ = {"embedding.E": "model.embed_tokens.weight", "head.W": "lm_head.weight"}
    return Family("model.layers.{i}.", _names(next_), globals_ | {"final_norm.gamma": "model.norm.weight"}, fused=fused)


NEXT, QWEN3_5 = _family(True), _family(False)
RECORDS = (
    Record("qwen3_next", "Qwen3NextForCausalLM", qwen3_next, NEXT, config, GGUF),
    Record("qwen3_5_text", "Qwen3_5ForCausalLM", qwen3_5, QWEN3_5, config, QWEN3_5_GGUF),
    Record("qwen3_5_moe_text", "Qwen3_5MoeForCausalLM", qwen3_5_moe, QWEN3_5, config, QWEN3_5_MOE_GGUF),
)

__all__ = ["RECORDS"]
