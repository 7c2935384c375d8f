"""LoRA's trainable parameters (Hu et al. 2021), as peft counts them: each targeted linear module of (in, out)
gains A (r, in) and B (out, r), r (in + out) parameters, its own weight frozen. The modules are the model's as
its checkpoint names them: a Hugging Face family's (q_proj, v_proj, c_attn, qkv_proj, ...: a fused projection is
one module, so LoRA on it is r (d + the fused rows)), and a tfm spec's own projections (W_Q, W_K, W_V, W_O, W1,
W3, W2). `all-linear` is peft's: every linear module but the output head (embeddings are not linear modules).

A mixture of experts' stacked parameters (transformers 5 holds a family's experts as one (E, out, in) tensor, no
longer linear modules) are one module of `experts` E, which peft wraps as a parameter (ParamWrapper): A of rank r
for each expert, (r E, in), and B (out, r E), r E (in + out) parameters; a fused gate and up stack (gate_up_proj)
at rank 2 r, the rank of its two halves (`rank_factor`). Which of a family's modules peft targets is
hf/lora_modules.py's. A tfm spec's experts are its own W1, W3, W2, each expert's adapter of rank r (the router
is no projection LoRA targets).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..components.linear import Module, linear
from ..components.tensors import iter_tensors
from ..errors import SpecError
from ..spec.definition import Spec

ALL_LINEAR = "all-linear"
TFM_MODULES = ("W_Q", "W_K", "W_V", "W_O", "W1", "W3", "W2")  # a tfm spec's projections, by their tensor names


def linear_modules(spec: Spec) -> list[Module]:
    """A tfm spec's linear modules, by its own tensor names (hf/lora_modules.py gives a Hugging Face family's)."""
    return _tfm_modules(spec)


def _tfm_modules(spec: Spec) -> list[Module]:
    out = []
    for tensor in iter_tensors(spec):
        kind = tensor.name.rsplit(".", 1)[-1]
        if kind not in TFM_MODULES or not linear(tensor.name):
            continue
        shape = tensor.shape
        if kind in ("W_Q", "W_K", "W_V"):  # (heads, m, d): d -> heads m
            out.append(Module(tensor.name, shape[-1], shape[0] * shape[1]))
        elif kind == "W_O":  # (heads, d, m): heads m -> d
            out.append(Module(tensor.name, shape[0] * shape[2], shape[1]))
        elif len(shape) == 3:  # a mixture's experts (E, out, in): an adapter of rank r for each
            out.append(Module(tensor.name, shape[-1], shape[-2], experts=shape[0]))
        else:  # (out, in)
            out.append(Module(tensor.name, shape[-1], shape[0]))
    return out


def targeted(modules: list[Module], targets: str) -> list[Module]:
    """The modules `targets` names: all-linear, or a comma-separated list matched as peft matches a list (a
    module whose name is the target or ends with '.' + target). A name that matches no module is refused."""
    if targets == ALL_LINEAR:
        return modules
    names = [t.strip() for t in targets.split(",") if t.strip()]
    chosen = [m for m in modules if m.matched(names)]
    unmatched = [t for t in names if not any(m.matched([t]) for m in modules)]
    for module in chosen:
        missing = [alias for alias in module.aliases if alias not in names]
        if missing:  # peft: "Cannot convert PEFT target(s) w1 without also targeting w3 because they are fused"
            raise SpecError(
                f"--lora-targets {targets}: {', '.join(module.aliases)} are one stacked parameter "
                f"({module.short}) in transformers 5; target all of them (peft refuses a part)"
            )
    if unmatched or not names:
        known = sorted({m.short for m in modules if not m.aliases} | {a for m in modules for a in m.aliases})
        raise SpecError(
            f"--lora-targets {targets}: {', '.join(unmatched) or 'nothing'} names no linear module of "
            f"this model (its modules: {', '.join(known)}, or all-linear)"
        )
    return chosen


def lora_parameters(spec: Spec, rank: int, targets: str = ALL_LINEAR, modules: list[Module] | None = None) -> int:
    """The trainable parameters LoRA of rank `rank` adds on `targets` of `modules` (a Hugging Face model's, from
    hf/lora_modules.py; else the spec's own): the sum of r (in + out) over the targeted modules."""
    return adapters(spec, rank, targets, modules).parameters


@dataclass(frozen=True)
class Adapters:
    """LoRA on a model: its rank and targets, the trainable parameters, and what each stack's blocks target (what
    the training activations depend on, training.py): the tfm kinds (attention.W_Q, cross.W_K, ff.W2, ...) and
    how many adapters a block has (a fused projection is one)."""

    rank: int
    targets: str
    parameters: int
    kinds: dict[str, frozenset[str]]  # by stack: "blocks" (the decoder, or the only stack), "encoder"
    per_block: dict[str, int]
    sizes: tuple[tuple[int, int], ...] = ()  # (elements, copies) of each A and B (an 8-bit optimizer's states)
    merged: tuple[int, ...] = ()  # the elements of each block's wrapped parameters merged with B A (kept by autograd)

    def trains_any(self, stack: str, *kinds: str) -> bool:
        return any(kind in self.kinds.get(stack, ()) for kind in kinds)


def adapters(spec: Spec, rank: int, targets: str = ALL_LINEAR, modules: list[Module] | None = None) -> Adapters:
    """LoRA of rank `rank` on `targets` of `modules` (a Hugging Face model's, from hf/lora_modules.py; else the
    spec's own)."""
    if rank < 1:
        raise SpecError(f"--lora-rank {rank}: expected a positive rank")
    chosen = targeted(linear_modules(spec) if modules is None else modules, targets)
    kinds: dict[str, set[str]] = {}
    per_block: dict[str, int] = {}
    merged: dict[str, int] = {}
    for module in chosen:
        names = module.tfm or (module.name,)
        stack, block, *_ = [*names[0].split("."), ""]
        if not block.isdigit():  # outside the blocks (a narrower embedding's projections)
            kinds.setdefault("model", set()).update(names)
            continue
        kinds.setdefault(stack, set()).update(name.split(".", 2)[2] for name in names)
        if module.wrapped:  # W + B A, each expert's, for the forward: autograd keeps it for the input's gradient
            key = f"{stack}.{block}"
            merged[key] = merged.get(key, 0) + module.experts * module.features_in * module.features_out
        elif block == "0":
            per_block[stack] = per_block.get(stack, 0) + 1
    sizes = tuple((rank * m.columns * features, 1) for m in chosen for features in (m.features_in, m.features_out))
    return Adapters(
        rank,
        targets,
        sum(rank * m.columns * (m.features_in + m.features_out) for m in chosen),
        {stack: frozenset(k) for stack, k in kinds.items()},
        per_block,
        sizes,
        tuple(merged.values()),
    )


__all__ = ["ALL_LINEAR", "Adapters", "Module", "adapters", "linear", "linear_modules", "lora_parameters", "targeted"]
