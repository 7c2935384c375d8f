"""Weights in the element types people deploy, with the bytes of their scales: exact integers from the shapes.

What is quantised: the blocks' matrices (attention, cross-attention, feedforward and experts' weights: every
tensor of a block with two or more axes but the router). What stays in 16 bits (bfloat16): the token embedding
and the head (GPTQ and AWQ checkpoints keep them), norms, biases, positions, routers and relative-bias tables.

- float32, float16, bfloat16: every tensor in that type.
- float8 (E4M3): one byte an element and one float32 scale per quantised tensor.
- int8: one byte an element and a float16 scale per output row (LLM.int8's row-wise scaling).
- int4 with group size g (default 128): half a byte an element, and per group of g inputs a float16 scale and a
  float16 zero point (GPTQ's and AWQ's asymmetric groups); a row of k inputs has ceil(k / g) groups.
"""

from __future__ import annotations

import math

from ..spec.definition import Spec
from .params import count_params, global_tensors

PLAIN = {"float32": 4, "float16": 2, "bfloat16": 2}
KEPT = 2  # bytes an element of what stays unquantised (bfloat16)
GROUP = 128
QUANT_NOTE = (
    "float8: 1 B + a float32 scale per tensor; int8: 1 B + a float16 scale per output row; int4: 0.5 B + a "
    "float16 scale and zero point per group of {g} inputs; embeddings, head, norms, biases and positions stay "
    "bfloat16"
)


def quantised(name: str, shape: tuple[int, ...]) -> bool:
    """Whether a tensor is one of the blocks' matrices that quantisation packs."""
    in_block = name.startswith(("blocks.", "encoder."))
    return in_block and len(shape) >= 2 and not name.endswith(("router", "rel_bias"))


def _rows_and_inputs(name: str, shape: tuple[int, ...]) -> tuple[int, int]:
    """(output rows, inputs per row) of a block matrix as a linear layer holds it: W_O (H, d, m) is d rows of
    H m inputs; the others (heads..., out, in), experts stacked in front."""
    if name.endswith("W_O"):
        H, d, m = shape[-3:]
        return math.prod(shape[:-3]) * d, H * m
    return math.prod(shape[:-1]), shape[-1]


def tensor_bytes(name: str, shape: tuple[int, ...], group: int = GROUP) -> dict[str, int]:
    """One tensor's bytes in every type."""
    count = math.prod(shape)
    out = {dtype: count * size for dtype, size in PLAIN.items()}
    if not quantised(name, shape):
        return out | {dtype: count * KEPT for dtype in ("float8", "int8", "int4")}
    rows, inputs = _rows_and_inputs(name, shape)
    return out | {
        "float8": count + 4,
        "int8": count + 2 * rows,
        "int4": (count + 1) // 2 + 4 * rows * -(-inputs // group),
    }


def weight_bytes(spec: Spec, group: int = GROUP) -> dict[str, int]:
    """The model's weights in float32, float16, bfloat16, float8, int8 and int4 (group size `group`): one block
    of each stack counted and multiplied, so any size counts at once."""
    sections = count_params(spec, check=False).sections  # blocks alike, of every stack
    parts = [(1, t) for t in global_tensors(spec)] + [(s.copies, t) for s in sections for t in s.tensors]
    out = {dtype: 0 for dtype in [*PLAIN, "float8", "int8", "int4"]}
    for copies, t in parts:
        for dtype, size in tensor_bytes(t.name, t.shape, group).items():
            out[dtype] += copies * size
    return out
