"""A Hugging Face family's linear modules as its checkpoint names them (for LoRA's count, analysis/lora.py): every
2-D weight of the family's layout but lookups and the output head, a fused projection (c_attn, qkv_proj,
query_key_value, gate_up_proj) one module, each with its in and out features.

A mixture of experts is what peft (0.21) targets on the model transformers 5 builds, which holds the experts as
stacked parameters rather than the checkpoint's linear modules, and its router as a module of its own:

- Mixtral, and the families transformers converts as it converts Qwen2-MoE (Qwen3-MoE, DeepSeek-V2/V3; its
  `_MODEL_TO_CONVERSION_PATTERN`): peft maps the names its targets give in the checkpoint's way (w1, w3, w2,
  gate; gate_proj, up_proj, down_proj, gate: its `_MOE_TARGET_MODULE_MAPPING`) to the stacked parameters, so
  each block has one module for the gate and up stack (rank 2 r), one for the down stack and one for the
  router; and since those names then mean parameters, no linear module of those names is targeted (a dense
  block's feedforward, a shared expert: peft leaves them frozen).
- Every other mixture (Qwen2-MoE itself, Phi-3.5-MoE, gpt-oss): the linear modules alone; the stacked experts
  are not targeted, nor a router that is not a linear module (Phi-3.5-MoE's is one, named `router`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..components.linear import Module, linear
from ..families import RECORDS
from ..spec.definition import Spec
from .layouts import hf_shape, rules, tensor_shapes
from .weights import family_for

# model_type: the checkpoint's names of the gate, up and down experts, and of the router
STACKED = {kind: record.lora_stacked for kind, record in RECORDS.items() if record.lora_stacked}
# the families whose router is a linear module in transformers 5: its name
LINEAR_ROUTER = {kind: record.lora_router for kind, record in RECORDS.items() if record.lora_router}


def hf_linear_modules(spec: Spec, config: Mapping[str, Any]) -> list[Module]:
    """The linear modules of the model of `config` (its config.json, read as `spec`), as peft targets them."""
    shapes = tensor_shapes(spec)
    out = []
    for rule in rules(family_for(config), spec):
        if rule.zeros or not rule.hf.endswith(".weight") or not all(linear(name) for name in rule.tfm):
            continue
        shape = hf_shape(rule, shapes)
        if len(shape) != 2:
            continue
        rows, columns = shape[::-1] if rule.transposed else shape  # (out, in) (GPT-2's Conv1D stores (in, out))
        out.append(Module(rule.hf[: -len(".weight")], columns, rows, rule.tfm))
    return _experts(out, str(config.get("model_type")), spec.zero_experts or 0) if spec.E else out


def _experts(modules: list[Module], model_type: str, zero: int) -> list[Module]:
    """A mixture's modules as peft targets them on transformers 5's model (the module's docstring); its gate and up
    stack holds the `zero` experts' too (LongCat-Flash's: allocated, never read, adapted all the same)."""
    routed = [m for m in modules if _routed(m)]
    others = [m for m in modules if not _routed(m)]
    if model_type not in STACKED:
        router = LINEAR_ROUTER.get(model_type)
        return [m if router is None else _renamed(m, router) for m in others if _kind(m) != "ff.router" or router]
    gate, up, down, router = STACKED[model_type]
    kept = [m for m in others if m.short not in (gate, up, down, router) and _kind(m) != "ff.router"]
    by_block: dict[str, list[Module]] = {}
    for module in routed + [m for m in others if _kind(m) == "ff.router"]:
        by_block.setdefault(module.tfm[0].split(".")[1], []).append(module)
    stacked = []
    for block, found in by_block.items():
        experts = {m.tfm[0] for m in found if _kind(m).startswith("ff.W1")}
        first = next(m for m in found if _kind(m).startswith("ff.W1"))
        prefix = first.name.rsplit(".experts.", 1)[0].rsplit(".", 1)[0] + ".mlp"  # (transformers 5's name)
        stacked += [
            Module(
                f"{prefix}.experts.gate_up_proj",
                first.features_in,
                2 * first.features_out,
                (f"blocks.{block}.ff.W1", f"blocks.{block}.ff.W3"),
                len(experts) + zero,
                2,
                (gate, up),
                True,
            ),
            Module(
                f"{prefix}.experts.down_proj",
                first.features_out,
                first.features_in,
                (f"blocks.{block}.ff.W2",),
                len(experts),
                1,
                (down,),
                True,
            ),
        ]
        stacked += [
            Module(f"{prefix}.gate", m.features_in, m.features_out, m.tfm, aliases=(router,), wrapped=True)
            for m in found
            if _kind(m) == "ff.router"
        ]
    return kept + stacked


def _kind(module: Module) -> str:
    """The tfm tensor's name within its block: attention.W_Q, ff.router, ff.W1[3] (expert 3's), ..."""
    return module.tfm[0].split(".", 2)[-1] if module.tfm else ""


def _routed(module: Module) -> bool:
    return _kind(module).startswith(("ff.W1[", "ff.W2[", "ff.W3["))


def _renamed(module: Module, name: str) -> Module:
    """The router as transformers 5 names it: `name` under the block's mlp, or "*": the checkpoint's own name."""
    if _kind(module) != "ff.router" or name == "*":
        return module
    prefix = module.name.rsplit(".", 2)[0]
    return Module(f"{prefix}.mlp.{name}", module.features_in, module.features_out, module.tfm)


__all__ = ["LINEAR_ROUTER", "STACKED", "hf_linear_modules"]
