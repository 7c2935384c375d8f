"""The Mamba-2 hybrids' GGUF files as llama.cpp reads them (src/models/granite-hybrid.cpp) and its converter writes
them (conversion/granite.py: GraniteHybridModel, arch granitehybrid).

A granitehybrid file is Granite's (its four multipliers, Q and K rows permuted for llama.cpp's rotary, the experts
stacked beside the shared MLP, or the shared MLP alone as the block's feedforward) with Mamba-2's tensors and ssm.*
keys (families/mamba_gguf.py) in the layers whose attention.head_count_kv entry is 0: that list is each layer's
kind. rope.scaling.finetuned says whether the attention turns by rotary positions (transformers' GraniteMoeHybrid:
position_embedding_type "rope"); without them the context is 2**20. llama.cpp takes only a mixer of twice the
model's width (mamba_expand 2), no bias of its projections, and always a bias of its convolution.

llama.cpp's converter as vendored (0.3.36) writes these files from a folder transformers 5.24 saved with three
mistakes, which tfm does not copy (each one makes a file llama.cpp cannot load or runs as another model): it takes
only layer types named "attention" (transformers writes "full_attention": every layer would be a state space's),
it never sets rope.scaling.finetuned for GraniteMoeHybrid (its rotary would be lost), and a dense model's
feedforward width is the shared MLP's, without expert counts. Checked against llama.cpp itself on files of both
writers (benchmarks/gguf_llama_cpp.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import SpecError
from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .gguf_keys import llama_stack
from .gguf_layout import LLAMA_LAYOUT, stacked_experts
from .granite import gguf_metadata as granite_metadata
from .granite import gguf_spec as granite_spec
from .keys import Keys
from .layout import Family
from .mamba_gguf import GLOBALS, MAMBA2_HELD, MAMBA2_NAMES

NOPE_CONTEXT = 2**20  # (the converter's context for a model without positions: "arbitrary")


def layer_heads(c: Keys, N: int, H: int) -> list[int]:
    """attention.head_count_kv as a list of N counts, 0 where a layer mixes by its state space."""
    listed = c.data.get("attention.head_count_kv")
    kv = listed if isinstance(listed, list) else [c.count("attention.head_count_kv", H)] * N
    if len(kv) != N or not all(isinstance(g, int) and g >= 0 for g in kv) or len({g for g in kv if g}) > 1:
        raise c.fail("attention.head_count_kv", listed, f"a list of {N} counts, one count where a layer attends")
    return kv


def mamba2_keys(c: Keys) -> dict[str, Any]:
    """The ssm.* keys of a Mamba-2 mixer: heads (time_step_rank) of inner_size / heads, groups, state, kernel."""
    inner, heads = c.count("ssm.inner_size"), c.count("ssm.time_step_rank")
    if inner % heads:
        raise c.fail("ssm.time_step_rank", heads, f"a divisor of ssm.inner_size = {inner} (the heads of its mixer)")
    out = {"ssm_heads": heads, "ssm_head_dim": inner // heads, "ssm_groups": c.count("ssm.group_count", 1)}
    return out | {"ssm_state": c.count("ssm.state_size"), "conv_kernel": c.count("ssm.conv_kernel"), "conv_bias": True}


def mamba2_metadata(spec: Spec, arch: str) -> dict[str, Any]:
    """spec -> the ssm.* keys; a mixer llama.cpp cannot run refused (no bias of its projections, one of its
    convolution)."""
    lost = "ssm_bias: no bias of its projections" if spec.ssm_bias else "conv_bias false: always one of its kernel"
    if spec.ssm_bias or not spec.conv_bias:
        raise SpecError(
            f"{spec.label}: the GGUF {arch} architecture cannot hold this model ({lost} in llama.cpp's Mamba-2): "
            "not written"
        )
    heads, head_dim = spec.ssm_heads or 0, spec.ssm_head_dim or 0
    return {
        "ssm.conv_kernel": spec.conv_kernel,
        "ssm.inner_size": heads * head_dim,
        "ssm.state_size": spec.ssm_state,
        "ssm.time_step_rank": heads,
        "ssm.group_count": spec.ssm_groups,
    }


def granite_hybrid_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """granitehybrid.* -> spec: Granite's block, the layers' kinds from head_count_kv, rotary where finetuned."""
    N, H, d = c.count("block_count"), c.count("attention.head_count"), c.count("embedding_length")
    kv = layer_heads(c, N, H)
    G = next((g for g in kv if g), H)
    out = granite_spec(c, header, llama_stack(c, header, N, H, c.count("attention.key_length", d // H), 1e-5))
    if c.flag("rope.scaling.finetuned", False):
        out |= {"rope_theta": c.number("rope.freq_base", 10000.0)}
    else:
        out |= {"positional": "none"}
        out.pop("context", None)
    attending = [i for i, g in enumerate(kv) if g]
    if attending and f"blk.{attending[0]}.attn_q.bias" in header.tensors:
        out["attention_bias"] = True
    if c.count("expert_count", 0):
        out |= {"E": c.count("expert_count"), "k": c.count("expert_used_count"), "expert_r": out["r"]}
        out |= {"router_renorm": True}
        out |= (
            {"shared_r": c.count("expert_shared_feed_forward_length")}
            if c.has("expert_shared_feed_forward_length")
            else {}
        )
    out |= {"G": G} if G != H else {}
    out |= mamba2_keys(c) if 0 in kv else {}
    return out | ({"mixer_layers": ["standard" if g else "mamba2" for g in kv]} if 0 in kv and attending else {})


def granite_hybrid_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> granitehybrid.* keys beyond the shared ones."""
    kinds = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    inner = (spec.ssm_heads or 0) * (spec.ssm_head_dim or 0)
    if "mamba2" in kinds and inner != 2 * spec.d:
        raise SpecError(
            f"{spec.label}: the GGUF granitehybrid architecture cannot hold this model (ssm_heads x ssm_head_dim = "
            f"{inner}: llama.cpp's takes twice d = {spec.d} only, mamba_expand 2): not written"
        )
    out = granite_metadata(spec) | mamba2_metadata(spec, "granitehybrid")
    out |= {"attention.head_count_kv": [spec.kv_heads if kind == "standard" else 0 for kind in kinds]}
    out |= {"feed_forward_length": spec.expert_r or spec.r} if spec.E else {}
    rotary = spec.positional == "rope"
    out |= {"rope.scaling.finetuned": rotary} | ({} if rotary else {"context_length": NOPE_CONTEXT})
    return out


_MIXER = {ours: theirs for ours, theirs in MAMBA2_NAMES.items() if ours != "norm1.gamma"}
GRANITE_HYBRID = Family("blk.{i}.", LLAMA_LAYOUT.names | _MIXER, GLOBALS, held_as=MAMBA2_HELD)
GRANITE_HYBRID_EXPERTS = replace(stacked_experts(GRANITE_HYBRID.names, GLOBALS, shared=True), held_as=MAMBA2_HELD)

__all__ = [
    "GRANITE_HYBRID",
    "GRANITE_HYBRID_EXPERTS",
    "granite_hybrid_metadata",
    "granite_hybrid_spec",
    "layer_heads",
    "mamba2_keys",
    "mamba2_metadata",
]
