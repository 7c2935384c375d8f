"""LFM2's and LFM2-MoE's GGUF files, as llama.cpp's converter writes them (conversion/lfm2.py: LFM2Model, arch
lfm2; LFM2MoeModel, arch lfm2moe) and llama.cpp reads them (src/models/lfm2.cpp).

Each layer's kind is its attention.head_count_kv entry: 0 for a short convolution, the key/value heads for
attention. The convolution's kernel is shortconv.l_cache taps, its (d, 1, L) weight written (d, L); the final norm
is written token_embd_norm (llama.cpp's LLM_TENSOR_OUTPUT_NORM_LFM2, applied after the last block); the MLP's width
is feed_forward_length, the adjusted one. llama.cpp reads no biases of the convolution: a model with conv_bias is
not written (tfm's writer refuses what a file cannot hold).

LFM2-MoE: expert_feed_forward_length, leading_dense_block_count, expert_gating_func 2 (sigmoid) and the correction
bias exp_probs_b, always there. The converter writes neither routed_scaling_factor nor norm_topk_prob, and
llama.cpp always renormalises the chosen weights (dividing by their sum clamped at 6.1e-5, where transformers adds
1e-6 to it): a file is read as transformers' model of those defaults (renormalised over the sum + 1e-6, scale 1),
and a model with another scale or without the renormalisation is not written.
"""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .deepseek_gguf import ROUTED_NAMES, SIGMOID
from .gguf_keys import llama_stack
from .gguf_layout import EXPERTS, LLAMA_LAYOUT
from .keys import Keys
from .layout import Family

CONV, ATTENTION = "short_conv", "standard"


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """lfm2.* -> spec: the layers' kinds from head_count_kv, heads of key_length (else d / H)."""
    N, H, d = c.count("block_count"), c.count("attention.head_count"), c.count("embedding_length")
    listed = c.data.get("attention.head_count_kv")
    kv = listed if isinstance(listed, list) else [c.count("attention.head_count_kv", H)] * N
    if len(kv) != N or not all(isinstance(g, int) and g >= 0 for g in kv):
        raise c.fail("attention.head_count_kv", listed, f"a list of {N} counts (0: a short convolution's layer)")
    attending = sorted({g for g in kv if g})
    if len(attending) > 1 or (attending and H % attending[0]):
        raise c.refuse("attention.head_count_kv", listed, f"one count dividing {H} in every attention layer")
    G = attending[0] if attending else H
    if not c.has("attention.key_length") and d % H:
        raise c.fail("attention.head_count", H, f"a divisor of embedding_length = {d} (no key_length)")
    m = c.count("attention.key_length", d // H)
    out = llama_stack(c, header, N, H, m, 1e-5) | {"qk_norm": True, "rope_theta": c.number("rope.freq_base", 1e4)}
    out |= {"G": G} if G != H else {}
    if 0 in kv:
        out |= {"mixer_layers": [ATTENTION if g else CONV for g in kv], "conv_kernel": c.count("shortconv.l_cache")}
    return out


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> lfm2.* keys beyond the shared ones: each layer's key/value heads (0: a convolution), the kernel."""
    kinds = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    heads = [spec.kv_heads if kind == ATTENTION else 0 for kind in kinds]
    return {"attention.head_count_kv": heads, "shortconv.l_cache": spec.conv_kernel}


def gguf_moe_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """lfm2moe.* -> spec: LFM2's, then the mixture after the leading dense blocks."""
    out = gguf_spec(c, header, spec)
    if not c.has("expert_count"):
        return out
    if c.index("expert_gating_func", SIGMOID) != SIGMOID:
        raise c.refuse("expert_gating_func", c.data["expert_gating_func"], f"{SIGMOID} (sigmoid), LFM2-MoE's scores")
    N, dense = out["N"], c.index("leading_dense_block_count", 0)
    out |= {"E": c.count("expert_count"), "k": c.count("expert_used_count")}
    out |= {"expert_r": c.count("expert_feed_forward_length"), "router_score": "sigmoid", "router_bias": True}
    out |= {"router_renorm_eps": 1e-6}
    return out | ({"feedforward_layers": ["dense"] * dense + ["routed"] * (N - dense)} if dense else {})


def gguf_moe_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> lfm2moe.* keys beyond the shared ones."""
    out = gguf_metadata(spec)
    if spec.E:
        dense = sum(1 for i in range(spec.N) if kind_of(spec.feedforward_layers, i, "routed") == "dense")
        out |= {"leading_dense_block_count": dense, "expert_gating_func": SIGMOID}
    return out


_NAMES = LLAMA_LAYOUT.names | {
    "conv.W_in": "shortconv.in_proj.weight",
    "conv.kernel": "shortconv.conv.weight",
    "conv.W_out": "shortconv.out_proj.weight",
}
_GLOBALS = {"embedding.E": "token_embd.weight", "head.W": "output.weight", "final_norm.gamma": "token_embd_norm.weight"}
_HELD = {"shortconv.conv.weight": lambda spec, shape: (shape[0], shape[2])}  # (d, 1, L) as (d, L)
LAYOUT = Family("blk.{i}.", _NAMES, _GLOBALS, held_as=_HELD)
MOE_LAYOUT = Family(
    "blk.{i}.",
    _NAMES | ROUTED_NAMES,
    _GLOBALS,
    fused=EXPERTS,
    stacked=frozenset(t for t, _, _ in EXPERTS),
    held_as=_HELD,
)

__all__ = ["LAYOUT", "MOE_LAYOUT", "gguf_metadata", "gguf_moe_metadata", "gguf_moe_spec", "gguf_spec"]
