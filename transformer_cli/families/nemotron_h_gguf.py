"""Nemotron-H's GGUF files as llama.cpp reads them (src/models/nemotron-h.cpp) and its converter writes them
(conversion/nemotron.py: NemotronHModel): arch nemotron_h, or nemotron_h_moe where the model has experts.

Each block is one sublayer, and its kind is in two lists: attention.head_count_kv (its key/value heads where it
attends) and feed_forward_length (its MLP's width, or its experts' where it routes); a block with neither mixes by
Mamba-2 (families/mamba_gguf.py's tensors and ssm.* keys). No positions; Q and K rows permuted as LlamaModel
permutes them (the converter's, harmless without rotary); the norms' eps in attention.layer_norm_epsilon. The
router is DeepSeek-V3's sigmoid with its correction bias (exp_probs_b), groups, renormalisation and scale.

llama.cpp clamps no step of the state space, where transformers clamps a prefill's at time_step_min (0.001 by
default): tfm writes such a model and says so, and reads a file as llama.cpp runs it (no clamp). With ordinary
weights no step comes near it. It routes every feedforward block of a file with experts (a model with both MLP and
expert blocks is refused), loads no bias of the state space's projections nor of a mixture's shared expert, and
aborts when every group is chosen (written as one group: the same routing). The vendored converter writes a dense
model as nemotron_h_moe with no MLP widths (transformers 5.24's config always has num_experts_per_tok), a file
llama.cpp cannot load: tfm writes nemotron_h.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..errors import SpecError
from ..spec.definition import FIELDS, Spec
from ..spec.stacks import kind_of
from .gguf_keys import llama_stack
from .gguf_layout import LLAMA_LAYOUT
from .hybrid_gguf import layer_heads, mamba2_keys, mamba2_metadata
from .keys import Keys
from .layout import Family
from .mamba_gguf import GLOBALS, MAMBA2_HELD, MAMBA2_NAMES

UNGROUPED = str(FIELDS["router_group_score"].default)  # (the score of no groups)


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """nemotron_h.* and nemotron_h_moe.* -> spec: each block's kind from its heads and its width."""
    N, H, d = c.count("block_count"), c.count("attention.head_count"), c.count("embedding_length")
    kv = layer_heads(c, N, H)
    listed = c.data.get("feed_forward_length")
    ff = listed if isinstance(listed, list) else [c.count("feed_forward_length", 0)] * N
    if (
        len(ff) != N
        or not all(isinstance(w, int) and w >= 0 for w in ff)
        or any(w and g for w, g in zip(ff, kv, strict=False))
    ):
        raise c.fail("feed_forward_length", listed, f"a list of {N} widths, 0 where a block attends or mixes")
    routed = c.count("expert_count", 0) > 0
    sized = Keys(c.data | {"feed_forward_length": max(ff) or d}, c.source, notes=c.notes)  # (r: the widest's)
    out = llama_stack(sized, header, N, H, c.count("attention.key_length", d // H), 1e-5)
    out = {k: v for k, v in out.items() if k != "positional"} | {"positional": "none", "feedforward": "plain"}
    out |= {"activation": "relu2", "norm_eps": c.number("attention.layer_norm_epsilon")}
    G = next((g for g in kv if g), H)
    out |= {"G": G} if G != H else {}
    out |= {"attention_bias": any(f"blk.{i}.attn_q.bias" in header.tensors for i in range(N))}
    out |= {"ff_bias": any(f"blk.{i}.ffn_up.bias" in header.tensors for i in range(N))}
    out |= mamba2_keys(c)
    out["mixer_layers"] = ["standard" if g else "none" if w else "mamba2" for g, w in zip(kv, ff, strict=True)]
    out["feedforward_layers"] = [("routed" if routed else "dense") if w else "none" for w in ff]
    if not routed:
        return out
    out |= {"E": c.count("expert_count"), "k": c.count("expert_used_count"), "expert_r": out["r"]}
    out |= {"router_score": "sigmoid", "router_bias": True, "router_renorm": c.flag("expert_weights_norm", False)}
    out |= {"router_scale": c.number("expert_weights_scale", 1.0)}
    groups = c.count("expert_group_count", 1) if c.has("expert_group_count") else 1
    if groups > 1:
        chosen = c.count("expert_group_used_count")
        out |= {"router_groups": groups, "router_topk_groups": chosen, "router_group_score": "top2"}
    shared = c.count("expert_shared_feed_forward_length", 0) if c.has("expert_shared_feed_forward_length") else 0
    return out | ({"shared_r": shared} if shared else {})


def block_kinds(spec: Spec) -> list[tuple[str, str]]:
    """Each block's (mixer, feedforward) kinds."""
    return [
        (kind_of(spec.mixer_layers, i, spec.attention), kind_of(spec.feedforward_layers, i, "routed"))
        for i in range(spec.N)
    ]


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> the architecture's keys beyond the shared ones; what llama.cpp cannot run refused."""
    kinds = block_kinds(spec)
    lost = (
        "feedforward_layers: llama.cpp routes every feedforward block of a file with experts"
        if spec.E and any(ff == "dense" for _, ff in kinds)
        else "ff_bias: llama.cpp loads no bias of a shared expert"
        if spec.E and spec.ff_bias
        else None
    )
    if lost is not None:
        raise SpecError(
            f"{spec.label}: the GGUF nemotron_h_moe architecture cannot hold this model ({lost}): not written"
        )
    width = {"dense": spec.r, "routed": spec.expert_r or 0, "none": 0}
    out = mamba2_metadata(spec, "nemotron_h") | {"attention.layer_norm_epsilon": float(spec.norm_eps)}
    out |= {"attention.head_count_kv": [spec.kv_heads if mixer == "standard" else 0 for mixer, _ in kinds]}
    out |= {"feed_forward_length": [width[ff] for _, ff in kinds], "context_length": spec.context or 2**20}
    if not spec.E:
        return out
    grouped = (spec.router_groups or 1) > 1 and spec.router_topk_groups != spec.router_groups  # (all chosen: none)
    out |= {"expert_feed_forward_length": spec.expert_r, "expert_shared_count": 1 if spec.shared_r else 0}
    out |= {"expert_weights_norm": bool(spec.router_renorm), "expert_weights_scale": float(spec.router_scale)}
    out |= {"expert_group_count": spec.router_groups if grouped else 1}
    return out | {"expert_group_used_count": spec.router_topk_groups if grouped else 1}


def as_run(spec: Spec, weights: Mapping[str, Any]) -> tuple[Spec, Mapping[str, Any], str]:
    """The model as llama.cpp runs the file: no clamp of the steps; a mixture's width that of its experts (no
    block of an MLP reads the other); every group chosen written as one group."""
    held = replace(spec, ssm_dt_min=None)
    if not any(ff == "dense" for _, ff in block_kinds(spec)):  # (the width no block reads: the file's)
        held = replace(held, r=spec.expert_r or spec.d if spec.E else spec.d)
    if spec.E and spec.router_groups and spec.router_topk_groups == spec.router_groups:
        held = replace(held, router_groups=None, router_topk_groups=None, router_group_score=UNGROUPED)
    told = ""
    if spec.ssm_dt_min:
        told = (
            f"llama.cpp clamps no step of the state space (transformers clamps a prefill's at time_step_min = "
            f"{spec.ssm_dt_min:g}): the file's model has no clamp"
        )
    return held, weights, told


_NAMES = {k: v for k, v in LLAMA_LAYOUT.names.items() if k.startswith("attention.")}
_NAMES |= {"norm1.gamma": "attn_norm.weight", "norm2.gamma": "attn_norm.weight"}  # (one norm a block: its sublayer's)
_NAMES |= {"ff.W1": "ffn_up.weight", "ff.b1": "ffn_up.bias", "ff.W2": "ffn_down.weight", "ff.b2": "ffn_down.bias"}
_NAMES |= {ours: theirs for ours, theirs in MAMBA2_NAMES.items() if ours != "norm1.gamma"}
LAYOUT = Family("blk.{i}.", _NAMES, GLOBALS, held_as=MAMBA2_HELD)
_ROUTED = {k: v for k, v in _NAMES.items() if not k.startswith("ff.")} | {"ff.router": "ffn_gate_inp.weight"}
_ROUTED |= {"ff.router_bias": "exp_probs_b.bias", "ff.shared.W1": "ffn_up_shexp.weight"}
_ROUTED |= {"ff.shared.W2": "ffn_down_shexp.weight"}
_EXPERTS = (("ffn_up_exps.weight", ("ff.W1",), lambda spec: 1), ("ffn_down_exps.weight", ("ff.W2",), lambda spec: 1))
EXPERTS_LAYOUT = Family(
    "blk.{i}.",
    _ROUTED,
    GLOBALS,
    fused=_EXPERTS,
    stacked=frozenset(name for name, _, _ in _EXPERTS),
    held_as=MAMBA2_HELD,
)

__all__ = ["EXPERTS_LAYOUT", "LAYOUT", "as_run", "block_kinds", "gguf_metadata", "gguf_spec"]
