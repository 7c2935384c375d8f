"""Weights in the element types people deploy, with the bytes of their scales: exact integers from the shapes.

What is quantised: the blocks' matrices (attention, cross-attention, feedforward and experts' weights: every
tensor of a block with two or more axes but the router). What stays in 16 bits (bfloat16): the token embedding
and the head (GPTQ and AWQ checkpoints keep them), norms, biases, positions, routers and relative-bias tables.

- float32, float16, bfloat16: every tensor in that type.
- float8 (E4M3): one byte an element and one float32 scale per quantised tensor.
- int8: one byte an element and a float16 scale per output row (LLM.int8's row-wise scaling).
- int4 with group size g (default 128): half a byte an element, and per group of g inputs a float16 scale and a
  float16 zero point (GPTQ's and AWQ's asymmetric groups); a row of k inputs has ceil(k / g) groups.
- nf4 (bitsandbytes' 4-bit NormalFloat with double quantisation, QLoRA's, `quantize_4bit(blocksize=64,
  compress_statistics=True)`): a tensor of k elements holds ceil(k / 2) bytes of packed codes; a uint8 absmax for
  each of its B = ceil(k / 64) blocks; the absmaxes' own float32 scale per 256 of them, 4 ceil(B / 256) bytes; the
  16 float32 NF4 values and the 256 float32 values of the absmaxes' code; a float32 offset: ceil(k / 2) + B +
  4 ceil(B / 256) + 1,092 bytes (a saved checkpoint adds each tensor's state as a short JSON string).
- bnb_int8 (bitsandbytes' LLM.int8, `Linear8bitLt`): one byte an element and a float32 scale per output row.
  bitsandbytes quantises linear modules only: a mixture's stacked experts, which transformers 5 holds as
  (E, out, in) parameters rather than linear modules, stay in 16 bits under nf4 and bnb_int8 (measured: a
  Mixtral loaded with a BitsAndBytesConfig).
- GGML's types (q8_0, q4_0, ... the K-quants, as a GGUF file holds them): the bytes of a block of its weights (scales
  included) for every tensor of two or more axes, the embedding and the head too, as llama.cpp's converter writes
  them; F16 where a tensor's rows are no whole blocks (its fallback); norms, biases, routers and positions F32.
"""

from __future__ import annotations

import math

from ..components.held import KEPT, Held, quantised
from ..components.tensors import global_tensors
from ..spec.definition import Spec
from .params import count_params

PLAIN = {"float32": 4, "float16": 2, "bfloat16": 2}
# GGML's types: (weights a block, bytes a block), as gguf's GGML_QUANT_SIZES has them (a test holds the two equal)
GGML = {
    "q8_0": (32, 34),
    "q4_0": (32, 18),
    "q4_1": (32, 20),
    "q5_0": (32, 22),
    "q5_1": (32, 24),
    "q2_k": (256, 84),
    "q3_k": (256, 110),
    "q4_k": (256, 144),
    "q5_k": (256, 176),
    "q6_k": (256, 210),
    "iq4_nl": (32, 18),
    "iq4_xs": (256, 136),
}
QUANTISED = ("float8", "int8", "int4", "nf4", "bnb_int8")  # the blocks' matrices packed, the rest kept in 16 bits
GROUP = 128
QUANT_NOTE = (
    "float8: 1 B + a float32 scale per tensor; int8: 1 B + a float16 scale per output row; int4: 0.5 B + a "
    "float16 scale and zero point per group of {g} inputs; nf4 (bitsandbytes, double-quantised): 0.5 B + a uint8 "
    "absmax per 64 + a float32 per 256 absmaxes + 1,092 B a tensor; bnb_int8: 1 B + a float32 scale per row "
    "(bitsandbytes: a mixture's stacked experts stay bfloat16); embeddings, head, norms, biases and positions stay "
    "bfloat16"
)
NF4_BLOCK, NF4_NESTED = 64, 256  # bitsandbytes' blocks of weights, and of their absmaxes (double quantisation)
NF4_CONSTANTS = 4 * (16 + 256 + 1)  # the NF4 code, the absmaxes' code, the offset: float32 each


def nf4_bytes(count: int) -> int:
    """A tensor of `count` elements in bitsandbytes' NF4 with double quantisation (the module's docstring)."""
    blocks = -(-count // NF4_BLOCK)
    return (count + 1) // 2 + blocks + 4 * -(-blocks // NF4_NESTED) + NF4_CONSTANTS


def stacked_experts(name: str, shape: tuple[int, ...]) -> bool:
    """A mixture's routed experts, one tensor (E, out, in) as transformers 5 holds them (no linear modules)."""
    return len(shape) == 3 and name.rsplit(".", 1)[-1] in ("W1", "W2", "W3") and ".ff." in name


def _rows_and_inputs(name: str, shape: tuple[int, ...]) -> tuple[int, int]:
    """(output rows, inputs per row) of a block matrix as a linear layer holds it: W_O (H, d, m) is d rows of
    H m inputs; the others (heads..., out, in), experts stacked in front."""
    if name.endswith("W_O"):
        H, d, m = shape[-3:]
        return math.prod(shape[:-3]) * d, H * m
    return math.prod(shape[:-1]), shape[-1]


def _ggml_bytes(name: str, shape: tuple[int, ...]) -> dict[str, int]:
    """A tensor's bytes in each GGML type, as the converter stores it."""
    count = math.prod(shape)
    leaf = name.rsplit(".", 1)[-1]
    if len(shape) < 2 or leaf in ("P", "T", "router", "W_gate") or leaf.startswith(("b", "gamma", "beta")):
        return dict.fromkeys(GGML, 4 * count)  # F32: 1-D tensors, positions, token types, routers
    inputs = shape[0] if leaf == "E" else _rows_and_inputs(name, shape)[1]  # E (d, V): rows of d in the file
    return {kind: count // block * size if inputs % block == 0 else 2 * count for kind, (block, size) in GGML.items()}


def tensor_bytes(name: str, shape: tuple[int, ...], group: int = GROUP) -> dict[str, int]:
    """One tensor's bytes in every type."""
    count = math.prod(shape)
    out = {dtype: count * size for dtype, size in PLAIN.items()} | _ggml_bytes(name, shape)
    if not quantised(name, shape):
        return out | {dtype: count * KEPT for dtype in QUANTISED}
    rows, inputs = _rows_and_inputs(name, shape)
    experts = stacked_experts(name, shape)  # (bitsandbytes leaves them in 16 bits)
    return out | {
        "float8": count + 4,
        "int8": count + 2 * rows,
        "int4": (count + 1) // 2 + 4 * rows * -(-inputs // group),
        "nf4": count * KEPT if experts else nf4_bytes(count),
        "bnb_int8": count * KEPT if experts else count + 4 * rows,
    }


def weight_bytes(spec: Spec, group: int = GROUP) -> dict[str, int]:
    """The model's weights in every type (int4 of group size `group`): one block
    of each stack counted and multiplied, so any size counts at once."""
    sections = count_params(spec, check=False).sections  # blocks alike, of every stack
    parts = [(1, t) for t in global_tensors(spec)] + [(s.copies, t) for s in sections for t in s.tensors]
    out = {dtype: 0 for dtype in [*PLAIN, *QUANTISED, *GGML]}
    for copies, t in parts:
        for dtype, size in tensor_bytes(t.name, t.shape, group).items():
            out[dtype] += copies * size
    return out


def total_bytes(spec: Spec, weights: str | Held) -> int:
    """The model's weights in bytes: a type's formula, or what the file holds."""
    return weights.total() if isinstance(weights, Held) else weight_bytes(spec)[weights]
