"""ERNIE 4.5 MoE (Ernie4_5_MoeForCausalLM, Baidu's ERNIE-4.5-21B-A3B and 300B-A47B): ERNIE 4.5's attention
(ernie4_5.py: rotary on interleaved pairs, use_bias on every projection and on the head) with heads of d / H, and
routed layers from moe_layer_start_index to moe_layer_end_index every moe_layer_interval-th. Their router: a
float32 softmax over all E, the top k of it plus a correction bias (held as a frozen parameter, moe_statics, (1, E)
in the file), the chosen weights renormalised; shared experts of moe_num_shared_experts x moe_intermediate_size.
transformers 5.24 stores partial_rotary_factor and turns whole heads: tfm follows it and says so. Its routed
experts have no biases even with use_bias, which tfm's experts cannot hold apart: refused with experts.

Its GGUF file (ernie4_5-moe) is ERNIE 4.5's names (adjacent pairs, not permuted) with the experts stacked, the
correction bias as exp_probs_b (1, E), the routed layers from leading_dense_block_count on every
interleave_moe_layer_step-th. The converter writes the shared experts' width as intermediate_size // num_key_value_heads
(right for the published 21B model only): tfm reads it from ffn_gate_shexp's rows."""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..spec.definition import Spec
from .config_keys import feedforward_kinds, shared_keys
from .deepseek_gguf import ROUTED_NAMES
from .expert_checkpoints import ERNIE_MOE
from .gguf_keys import rows
from .gguf_layout import EXPERTS, LLAMA_LAYOUT
from .keys import Keys
from .layout import Family
from .parts import llama_like
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: 64 experts of 1,536, 6 chosen, 2 shared, routed from layer 1 on)."""
    whole = _whole_heads(c)
    plain = llama_like(whole, c.count("num_key_value_heads", 4), None, 1e-5, True, 131072, theta=500000.0)
    bias = c.flag("use_bias", False)
    out = plain | {"rope_pairing": "interleaved", "attention_bias": bias, "ff_bias": bias, "head_bias": bias}
    kinds = _layer_kinds(c, plain["N"])
    if "routed" not in kinds:
        return out
    if bias:
        raise c.refuse("use_bias", True, "ERNIE's routed experts have no biases, which tfm's experts cannot hold apart")
    E, k = c.count("moe_num_experts", 64, "num_experts"), c.count("moe_k", 6, "num_experts_per_tok")
    if k > E:
        raise c.fail("moe_k", k, f"at most moe_num_experts = {E}")
    r_e, shared = c.count("moe_intermediate_size", 1536), c.index("moe_num_shared_experts", 2)
    out |= {"E": E, "k": k, "expert_r": r_e, "router_bias": True, "router_bias_param": True}
    out |= {"shared_r": shared * r_e} if shared else {}
    return out | ({"feedforward_layers": kinds} if "dense" in kinds else {})


def _whole_heads(c: Keys) -> Keys:
    """The config without partial_rotary_factor (top-level or in rope_parameters), said where it is not 1."""
    why = "5.24's Ernie4_5_Moe turns whole heads"
    c.ignored("partial_rotary_factor", why, unless=1.0)
    data = {k: v for k, v in c.data.items() if k != "partial_rotary_factor"}
    nested = c.nested("rope_parameters")
    if nested is not None:
        nested.ignored("partial_rotary_factor", why, unless=1.0)
        data["rope_parameters"] = {k: v for k, v in nested.data.items() if k != "partial_rotary_factor"}
    return Keys(data, c.source, notes=c.notes)


def _layer_kinds(c: Keys, N: int) -> list[str]:
    """Layer i routed when (i + 1) % moe_layer_interval == 0 and start <= i <= end (-1: the last layer)."""
    start, every = c.index("moe_layer_start_index", 1), c.count("moe_layer_interval", 1)
    end = c.data.get("moe_layer_end_index", -1)
    if end != -1:
        end = c.index("moe_layer_end_index", N - 1)
    end = N - 1 if end == -1 else end
    return ["routed" if (i + 1) % every == 0 and start <= i <= end else "dense" for i in range(N)]


def config(spec: Spec) -> dict[str, Any]:
    """spec -> ERNIE 4.5 MoE's config.json (the routed layers as a first, a last and an interval)."""
    out = shared_keys(spec) | {"use_bias": spec.attention_bias, "hidden_act": "silu"}
    if not spec.E:
        return out | {"moe_layer_start_index": spec.N}
    kinds = feedforward_kinds(spec)
    routed = [i for i, kind in enumerate(kinds) if kind == "routed"]
    for every in range(1, spec.N + 1):
        layers = {"moe_layer_start_index": routed[0], "moe_layer_end_index": routed[-1], "moe_layer_interval": every}
        if _layer_kinds(Keys(layers, spec.label), spec.N) == kinds:
            break
    else:
        raise SpecError(f"{spec.label}: ERNIE 4.5's config.json cannot list these routed layers: {routed}")
    experts = {"moe_num_experts": spec.E, "moe_k": spec.k, "moe_intermediate_size": spec.expert_r}
    shared = {"moe_num_shared_experts": (spec.shared_r or 0) // (spec.expert_r or 1)}
    return out | experts | shared | layers


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """ERNIE 4.5's reader with its experts: softmax, the correction bias to choose, the routed layers."""
    N, E, k = spec["N"], spec.pop("E", 0), spec.pop("k", 0)
    out = {key: value for key, value in spec.items() if key != "out_bias"} | {"rope_pairing": "interleaved"}
    out |= {"ff_bias": "blk.0.ffn_up.bias" in header.tensors}
    if not E:
        return out
    layers = {"moe_layer_start_index": c.index("leading_dense_block_count", 0)}
    kinds = _layer_kinds(Keys(layers | {"moe_layer_interval": c.count("interleave_moe_layer_step")}, c.source), N)
    first = kinds.index("routed")
    out |= {"E": E, "k": k, "expert_r": c.count("expert_feed_forward_length"), "router_bias": True}
    out |= {"router_bias_param": True} | ({"feedforward_layers": kinds} if "dense" in kinds else {})
    if f"blk.{first}.ffn_gate_shexp.weight" in header.tensors:
        out["shared_r"] = rows(header, f"blk.{first}.ffn_gate_shexp.weight", "the shared experts' width")
    return out


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """The routed layers' start and step, the experts' and shared experts' widths."""
    if not spec.E:
        return {}
    routed = [i for i, kind in enumerate(feedforward_kinds(spec)) if kind == "routed"]
    step = routed[1] - routed[0] if len(routed) > 1 else 1
    out = {"leading_dense_block_count": routed[0], "interleave_moe_layer_step": step}
    shared = (spec.shared_r or 0) // (spec.expert_r or 1)
    return out | ({"expert_shared_count": shared, "expert_shared_feed_forward_length": spec.shared_r} if shared else {})


_BIAS = "exp_probs_b.bias"
GGUF_LAYOUT = Family(
    "blk.{i}.",
    LLAMA_LAYOUT.names | {n: t for n, t in ROUTED_NAMES.items() if t != _BIAS},
    LLAMA_LAYOUT.globals_,
    fused=(*EXPERTS, (_BIAS, ("ff.router_bias",), lambda spec: 1)),
    stacked=frozenset(t for t, _, _ in EXPERTS),
    leading_one=frozenset({_BIAS}),
)
RECORD = Record(
    "ernie4_5_moe",
    "Ernie4_5_MoeForCausalLM",
    spec,
    ERNIE_MOE,
    config,
    Gguf("ernie4_5-moe", GGUF_LAYOUT, gguf_spec, gguf_metadata),
    lora_stacked=("gate_proj", "up_proj", "down_proj", "gate"),
    config_alone=True,
    skipped=(r"(^|\.)mtp",),  # its multi-token prediction layers, which transformers does not build
)

__all__ = ["RECORD"]
