"""Qwen3-Next's GGUF files (qwen3next), as llama.cpp's converter writes them (conversion/qwen.py: Qwen3NextModel) and
llama.cpp reads them (src/models/qwen3next.cpp).

LLaMA's attention keys and Qwen2-MoE's experts, the linear attention's sizes in ssm.* keys (conv_kernel, state_size
the key heads' size, group_count the key heads, time_step_rank the value heads, inner_size their width) and each
layer's kind in attention.recurrent_layers (true: a linear attention layer; older files: full_attention_interval).
The tensors: the attention's q_proj as attn_q (each head's query rows then its gate rows, as in the folder); the
linear attention's in_proj_qkvz made attn_qkv ([q; k; v] of all heads) and attn_gate (z), in_proj_ba kept as
ssm_ba, A = -exp(A_log) as ssm_a, the convolution (C, K) in F32; every RMSNorm's gain but the gated one's stored
as 1 + w (Qwen3-Next's norms are zero-centred: w back on reading).

llama.cpp's qwen3next routes every layer (no dense MLP), always renormalises the chosen experts' weights, has a
gated shared expert and takes the value heads' size for the key heads': a model with dense layers, without
norm_topk_prob, without a shared expert or with value heads of another size is not written.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import SpecError
from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .gemma import LESS_ONE, PLUS_ONE
from .gguf_layout import LLAMA_LAYOUT, stacked_experts
from .keys import Keys
from .layout import Family
from .mamba_gguf import A_MADE, A_UNDONE
from .record import Gguf

LINEAR, ATTENTION = "deltanet", "standard"


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """qwen3next.* -> spec: LLaMA's reader's, the gated attention, the zero-centred norms, the linear layers (their
    kinds from recurrent_layers, else every full_attention_interval-th attending), the experts renormalised."""
    N = spec["N"]
    nk, nv = c.count("ssm.group_count"), c.count("ssm.time_step_rank")
    if nv % nk or c.count("ssm.inner_size") % nv:
        raise c.fail("ssm.time_step_rank", nv, f"a multiple of ssm.group_count = {nk} dividing ssm.inner_size")
    recurrent = c.data.get("attention.recurrent_layers")
    if recurrent is None:
        every = c.count("full_attention_interval", 4)
        recurrent = [(i + 1) % every != 0 for i in range(N)]
    if not isinstance(recurrent, list) or len(recurrent) < N:
        raise c.fail("attention.recurrent_layers", recurrent, f"a list of {N} flags (true: a linear attention layer)")
    out = spec | {"qk_norm": True, "norm_plus_one": True, "attn_gate": True, "router_renorm": True}
    out |= {
        "linear_k_heads": nk,
        "linear_k_dim": c.count("ssm.state_size"),
        "linear_v_heads": nv,
        "linear_v_dim": c.count("ssm.inner_size") // nv,
        "conv_kernel": c.count("ssm.conv_kernel"),
        "mixer_layers": [LINEAR if flag else ATTENTION for flag in recurrent[:N]],
    }
    if c.has("expert_count"):
        out |= {"expert_r": c.count("expert_feed_forward_length")}
        out |= {"shared_r": c.count("expert_shared_feed_forward_length"), "shared_gate": True}
    return out


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> qwen3next.* keys beyond the shared ones; what llama.cpp cannot run is refused."""
    if spec.feedforward_layers or not spec.E or not spec.router_renorm or not (spec.shared_r and spec.shared_gate):
        raise SpecError(
            f"{spec.label}: llama.cpp's qwen3next routes every layer to renormalised experts beside a gated shared "
            "expert; this model does not (dense layers, norm_topk_prob false or no shared expert)"
        )
    return linear_metadata(spec, "qwen3next")


def linear_metadata(spec: Spec, arch: str) -> dict[str, Any]:
    """The linear layers' sizes and each layer's kind (Qwen3-Next's and Qwen3.5's files); value heads of another
    size than the key heads' refused (llama.cpp takes ssm.state_size for both)."""
    if spec.linear_v_dim != spec.linear_k_dim:
        raise SpecError(
            f"{spec.label}: llama.cpp's {arch} takes the value heads' size for the key heads' (ssm.state_size); "
            f"this model's are {spec.linear_v_dim} and {spec.linear_k_dim}"
        )
    kinds = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    return {
        "ssm.conv_kernel": spec.conv_kernel,
        "ssm.state_size": spec.linear_k_dim,
        "ssm.group_count": spec.linear_k_heads,
        "ssm.time_step_rank": spec.linear_v_heads,
        "ssm.inner_size": (spec.linear_v_dim or 0) * (spec.linear_v_heads or 0),
        "attention.recurrent_layers": [kind == LINEAR for kind in kinds],
        "full_attention_interval": 4,
    }


_LINEAR = {
    "delta.W_z": "attn_gate.weight",
    "delta.kernel": "ssm_conv1d.weight",
    "delta.A_log": "ssm_a",
    "delta.dt_bias": "ssm_dt.bias",
    "delta.norm.gamma": "ssm_norm.weight",
    "delta.W_out": "ssm_out.weight",
}
NAMES = {k: v for k, v in LLAMA_LAYOUT.names.items() if k not in ("attention.W_Q", "norm2.gamma")}
NAMES |= {"norm2.gamma": "post_attention_norm.weight"} | _LINEAR
_ROUTED = stacked_experts(NAMES, LLAMA_LAYOUT.globals_, shared=True)
_FUSED = (
    ("attn_q.weight", ("attention.W_Q", "attention.W_G"), lambda spec: spec.H),
    ("attn_qkv.weight", ("delta.W_q", "delta.W_k", "delta.W_v"), lambda spec: 1),
    ("ssm_ba.weight", ("delta.W_b", "delta.W_a"), lambda spec: spec.linear_k_heads),
)
LAYOUT = Family(
    _ROUTED.block,
    _ROUTED.names,
    _ROUTED.globals_,
    fused=_ROUTED.fused + _FUSED,
    stacked=_ROUTED.stacked,
    held_as={"ssm_conv1d.weight": lambda spec, shape: (shape[0], math.prod(shape[1:]))},  # (C, 1, K) as (C, K)
)
GGUF = Gguf("qwen3next", LAYOUT, gguf_spec, gguf_metadata, transforms=LESS_ONE | A_UNDONE, redo=PLUS_ONE | A_MADE)

__all__ = ["GGUF", "LAYOUT", "NAMES", "linear_metadata"]
