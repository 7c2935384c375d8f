"""What the keys of a mixture of experts need of each other beyond their types (validate.py's checks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import SpecError
from .choices import DENSE, HASHED, ROUTED
from .definition import Spec
from .expert_keys import EXPERT_FIELDS
from .stacks import kind_of

Fail = Callable[[str, str, Any, str], SpecError]


def check_experts(spec: Spec, data: dict[str, Any], source: str, fail: Fail) -> None:
    """E with k and the other keys with E; k within the experts there are (with Z zero experts: E + Z); a shared
    expert for its options; routed_later's routed blocks each followed by a dense one (`fail`: validate.py's one-line
    error)."""
    if (spec.E is None) != (spec.k is None):
        key, other = ("E", "k") if spec.E is None else ("k", "E")
        raise SpecError(f"{source}: key '{key}': missing, expected a positive integer with {other}")
    for key in EXPERT_FIELDS:
        if key in data and spec.E is None:
            raise fail(source, key, data[key], f"no {key} without experts (E)")
    _check_groups(spec, data, source, fail)
    if spec.expert_clamp is not None and spec.feedforward != "gated":
        raise fail(source, "expert_clamp", spec.expert_clamp, "feedforward gated (it clamps the gate and the up rows)")
    if spec.router_bias_param and not spec.router_bias:
        raise fail(source, "router_bias_param", True, "no router_bias_param without router_bias")
    if "router_renorm_eps" in data and (not spec.router_renorm or spec.router_score != "sigmoid"):
        why = "router_renorm and router_score: sigmoid (the renormalised sigmoid weights it is added to)"
        raise fail(source, "router_renorm_eps", data["router_renorm_eps"], why)
    if "shared_scale" in data and spec.shared_r is None:
        raise fail(source, "shared_scale", data["shared_scale"], "no shared_scale without a shared expert (shared_r)")
    if spec.shared_gate and spec.shared_r is None:
        raise fail(source, "shared_gate", True, "no shared_gate without a shared expert (shared_r)")
    if spec.E is None or spec.k is None:
        return
    if spec.expert_norms and (spec.shared_r is None or spec.norm != "sandwich"):
        raise fail(source, "expert_norms", True, "a shared expert (shared_r) and norm: sandwich (Gemma 4's layout)")
    zero = spec.zero_experts or 0
    if spec.k > spec.E + zero:
        within = f"E = {spec.E}" if not zero else f"E + zero_experts = {spec.E + zero}"
        raise fail(source, "k", spec.k, f"at most {within} (the experts each token can choose from)")
    hashed = spec.router_hash or HASHED in (spec.feedforward_layers or ())
    if hashed and (spec.V is None or zero or spec.router_groups):
        key = "router_hash" if spec.router_hash else "feedforward_layers"
        why = "a vocabulary (V) and no zero_experts or router_groups with hashed blocks (a table of k experts an id)"
        raise fail(source, key, data.get(key), why)
    added = spec.positional not in ("rope", "none", "alibi", "relative")
    if hashed and (added or spec.embed_dim or spec.ple_dim or spec.type_vocab or spec.embed_norm):
        key = "router_hash" if spec.router_hash else "feedforward_layers"
        why = "rotary positions or none, and no embed_dim, ple_dim, type_vocab or embed_norm with hashed blocks"
        raise fail(source, key, data.get(key), why)
    if zero and spec.router_score != "softmax":
        raise fail(source, "zero_experts", zero, "router_score: softmax with zero_experts (LongCat-Flash's)")
    if spec.routed_later:
        kinds = spec.feedforward_layers
        later = [i for i in range(spec.N) if kind_of(kinds, i, ROUTED) == ROUTED]
        if kinds is None or any(i + 1 >= spec.N or kind_of(kinds, i + 1, ROUTED) != DENSE for i in later):
            expected = (
                f"feedforward_layers in which every {ROUTED} block is followed by a {DENSE} one (whose output it joins)"
            )
            raise fail(source, "routed_later", True, expected)


def _check_groups(spec: Spec, data: dict[str, Any], source: str, fail: Fail) -> None:
    """Group-limited routing: groups that divide the experts, fewer chosen than there are, room for k experts."""
    for key in ("router_topk_groups", "router_group_score"):
        if key in data and spec.router_groups is None:
            raise fail(source, key, data[key], f"no {key} without router_groups")
    if "router_jitter" in data and spec.router_score != "sparsemixer":
        raise fail(source, "router_jitter", data["router_jitter"], "no router_jitter unless router_score: sparsemixer")
    if spec.router_score == "sparsemixer" and spec.E is not None and spec.k is not None:
        if spec.k != 2:
            raise fail(source, "k", spec.k, "k = 2 with router_score: sparsemixer (it chooses two experts)")
        for key in ("router_groups", "router_bias", "router_logit_bias"):
            if getattr(spec, key):
                raise fail(source, key, getattr(spec, key), f"no {key} with router_score: sparsemixer")
    groups, chosen = spec.router_groups, spec.router_topk_groups
    if groups is None or spec.E is None or spec.k is None:
        return
    if spec.E % groups:
        raise fail(source, "router_groups", groups, f"a divisor of E = {spec.E} (experts per group alike)")
    if chosen is None:
        raise SpecError(f"{source}: key 'router_topk_groups': missing, expected a positive integer with router_groups")
    if chosen > groups or chosen * (spec.E // groups) < spec.k:
        raise fail(
            source,
            "router_topk_groups",
            chosen,
            f"at most router_groups = {groups} groups holding at least k = {spec.k} experts",
        )


__all__ = ["check_experts"]
