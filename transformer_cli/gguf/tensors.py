"""A GGUF tensor's data as float32 in NumPy's order, dequantised by the `gguf` package, read one at a time from the
file (a memory map of that tensor's bytes alone), and what each type costs per weight."""

from __future__ import annotations

import functools

import numpy as np

from ..errors import ArrayError
from .header import Header, TensorInfo

PLAIN = {0: np.float32, 1: np.float16, 28: np.float64}  # F32, F16, F64: read as they are
INTEGERS = ("I8", "I16", "I32", "I64")  # (not weights)


def type_name(kind: int) -> str:
    from gguf import GGMLQuantizationType

    return GGMLQuantizationType(kind).name


def bits_per_weight(kind: int) -> float:
    """The type's stored bits per weight, its scales included (Q4_K: 4.5, Q8_0: 8.5, F16: 16)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    block, size = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
    return 8 * size / block


@functools.cache
def unreadable(kind: int) -> str | None:
    """Why tfm cannot read a tensor of GGML type `kind` as weights (None: it can): an integer type, or one the gguf
    package cannot dequantise (tried on one block of zeros)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
    from gguf.quants import dequantize

    if kind in PLAIN:
        return None
    qtype = GGMLQuantizationType(kind)
    if qtype.name in INTEGERS:
        return f"is of integer type {qtype.name}, expected weights"
    try:
        dequantize(np.zeros((1, GGML_QUANT_SIZES[qtype][1]), dtype=np.uint8), qtype)
    except NotImplementedError:
        return f"is of type {qtype.name}, which the gguf package cannot dequantise"
    return None


def read_tensor(header: Header, name: str, mapped: np.ndarray | None = None) -> np.ndarray:
    """Tensor `name` of the file as float32 (float64 if stored so), shaped (outermost first): dequantised exactly as
    the package's reference dequantiser does; a type it cannot dequantise is an ArrayError naming it. `mapped`: the
    whole file memory-mapped as bytes, kept by the caller (else the tensor's bytes are mapped for this read)."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize, quant_shape_to_byte_shape

    t: TensorInfo = header.tensors[name]
    begin = header.data_offset + t.offset
    if mapped is not None:
        raw = mapped[begin : begin + t.nbytes]
    else:
        raw = np.memmap(header.path, dtype=np.uint8, mode="r", offset=begin, shape=(t.nbytes,))
    if t.type in PLAIN:
        return np.asarray(raw.view(PLAIN[t.type]).reshape(t.shape))
    why = unreadable(t.type)
    if why is not None:
        raise ArrayError(f"{header.path}: tensor {name} {why}")
    kind = GGMLQuantizationType(t.type)
    return dequantize(raw.reshape(quant_shape_to_byte_shape(t.shape, kind)), kind)


__all__ = ["bits_per_weight", "read_tensor", "type_name", "unreadable"]
