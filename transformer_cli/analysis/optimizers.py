"""The model states an optimizer keeps, bytes a parameter (weights + gradients + optimizer), split by ZeRO:
- adam-mixed: bfloat16 weights and gradients, float32 master weights and Adam's two moments: 2 + 2 + 12 = 16;
- adam: float32 weights, gradients and two moments: 4 + 4 + 8 = 16;
- sgd: float32 weights and gradients, no momentum: 4 + 4 = 8; sgd-momentum adds a float32 buffer: 12;
- paged-adamw: adam's bytes, the moments paged (bitsandbytes' PagedAdamW32bit, QLoRA's: in unified memory that
  moves to the CPU's under memory pressure, so the device needs the rest at least);
- paged-adamw-8bit: float32 weights and gradients, and bitsandbytes' 8-bit moments (PagedAdamW8bit, AdamW8bit):
  for a tensor of k >= 4,096 elements a byte a moment, a float32 absmax per 256 elements for each, and two
  256-entry float32 maps: 2k + 8 ceil(k / 256) + 2,048 bytes; a smaller tensor keeps float32 moments, 8k.
ZeRO (Rajbhandari et al. 2020) over D data-parallel devices: stage 1 splits the optimizer's states, stage 2 the
gradients too, stage 3 the weights too; a device holds its share, rounded up. Communication buffers, gradient
bucketing and the allocator's fragmentation are not included.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..spec.definition import Spec

BLOCK, SMALLEST, MAPS = 256, 4096, 2 * 256 * 4  # bitsandbytes' 8-bit states: blocks, min_8bit_size, qmap1 + qmap2


@dataclass(frozen=True)
class Optimizer:
    weights: int
    gradients: int
    states: int  # bytes a parameter (8-bit: a tensor's own, `blockwise`)
    note: str
    paged: bool = False
    blockwise: bool = False


OPTIMIZERS = {
    "adam-mixed": Optimizer(2, 2, 12, "bfloat16 weights and gradients, float32 master weights and two moments"),
    "adam": Optimizer(4, 4, 8, "float32 weights, gradients and two moments"),
    "sgd": Optimizer(4, 4, 0, "float32 weights and gradients, no momentum"),
    "sgd-momentum": Optimizer(4, 4, 4, "float32 weights, gradients and a momentum buffer"),
    "paged-adamw": Optimizer(4, 4, 8, "float32 weights and gradients, two float32 moments paged", paged=True),
    "paged-adamw-8bit": Optimizer(
        4,
        4,
        2,
        "float32 weights and gradients, two 8-bit moments paged (bitsandbytes: a float32 absmax per 256)",
        paged=True,
        blockwise=True,
    ),
}


def state_bytes(optimizer: str, sizes: Iterable[tuple[int, int]]) -> int:
    """The optimizer's states for tensors of (elements, copies)."""
    opt = OPTIMIZERS[optimizer]
    if not opt.blockwise:
        return opt.states * sum(k * copies for k, copies in sizes)
    return sum(copies * (2 * k + 8 * -(-k // BLOCK) + MAPS if k >= SMALLEST else 8 * k) for k, copies in sizes)


def tensor_sizes(spec: Spec) -> list[tuple[int, int]]:
    """(elements, copies) of the model's tensors: one block of each stack, and the tensors outside them."""
    from math import prod

    from ..components.tensors import global_tensors
    from .params import count_params

    sections = count_params(spec, check=False).sections
    return [(prod(t.shape), 1) for t in global_tensors(spec)] + [
        (prod(t.shape), s.copies) for s in sections for t in s.tensors
    ]


def model_states(
    params: int,
    optimizer: str = "adam-mixed",
    zero: int = 0,
    devices: int = 1,
    sizes: Iterable[tuple[int, int]] | None = None,
) -> dict[str, int]:
    """Bytes one device holds of the weights, gradients and optimizer states, with ZeRO stage `zero` over D; an
    8-bit optimizer's states need the tensors' `sizes` (elements, copies) [default: one tensor of them all]."""
    opt = OPTIMIZERS[optimizer]
    split = {"weights": zero >= 3, "gradients": zero >= 2, "optimizer": zero >= 1}
    states = state_bytes(optimizer, [(params, 1)] if sizes is None else sizes)
    whole = {"weights": opt.weights * params, "gradients": opt.gradients * params, "optimizer": states}
    out = {part: -(-size // devices) if split[part] else size for part, size in whole.items()}
    return out | {"total": sum(out.values())}


__all__ = ["OPTIMIZERS", "Optimizer", "model_states", "state_bytes", "tensor_sizes"]
