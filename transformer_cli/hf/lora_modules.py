"""A Hugging Face family's linear modules as its checkpoint names them (for LoRA's count, analysis/lora.py): every
2-D weight of the family's layout but lookups and the output head, a fused projection (c_attn, qkv_proj,
query_key_value, gate_up_proj) one module, each with its in and out features."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..analysis.lora import Module, linear, refuse_experts
from ..spec.definition import Spec
from .layouts import hf_shape, rules, tensor_shapes
from .weights import family_for


def hf_linear_modules(spec: Spec, config: Mapping[str, Any]) -> list[Module]:
    """The linear modules of the model of `config` (its config.json, read as `spec`)."""
    refuse_experts(spec)
    shapes = tensor_shapes(spec)
    out = []
    for rule in rules(family_for(config), spec):
        if not rule.hf.endswith(".weight") or not all(linear(name) for name in rule.tfm):
            continue
        shape = hf_shape(rule, shapes)
        if len(shape) != 2:
            continue
        rows, columns = shape[::-1] if rule.transposed else shape  # (out, in) (GPT-2's Conv1D stores (in, out))
        out.append(Module(rule.hf[: -len(".weight")], columns, rows, rule.tfm))
    return out


__all__ = ["hf_linear_modules"]
