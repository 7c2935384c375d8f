"""A GGUF tensor's data as float32 in NumPy's order, dequantised by the `gguf` package, read one at a time from the
file (a memory map of that tensor's bytes alone), and what each type costs per weight."""

from __future__ import annotations

import numpy as np

from ..errors import ArrayError
from .header import Header, TensorInfo

PLAIN = {0: np.float32, 1: np.float16, 28: np.float64}  # F32, F16, F64: read as they are


def type_name(kind: int) -> str:
    from gguf import GGMLQuantizationType

    return GGMLQuantizationType(kind).name


def bits_per_weight(kind: int) -> float:
    """The type's stored bits per weight, its scales included (Q4_K: 4.5, Q8_0: 8.5, F16: 16)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    block, size = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
    return 8 * size / block


def read_tensor(header: Header, name: str) -> np.ndarray:
    """Tensor `name` of the file as float32 (float64 if stored so), shaped (outermost first): dequantised exactly as
    the package's reference dequantiser does; a type it cannot dequantise is an ArrayError naming it."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize, quant_shape_to_byte_shape

    t: TensorInfo = header.tensors[name]
    raw = np.memmap(header.path, dtype=np.uint8, mode="r", offset=header.data_offset + t.offset, shape=(t.nbytes,))
    if t.type in PLAIN:
        return np.asarray(raw.view(PLAIN[t.type]).reshape(t.shape))
    kind = GGMLQuantizationType(t.type)
    if kind.name in ("I8", "I16", "I32", "I64"):  # integers, not weights
        raise ArrayError(f"{header.path}: tensor {name} is of integer type {kind.name}, expected weights")
    try:
        return dequantize(raw.reshape(quant_shape_to_byte_shape(t.shape, kind)), kind)
    except NotImplementedError:
        raise ArrayError(f"{header.path}: tensor {name}: the gguf package cannot dequantise type {kind.name}") from None


__all__ = ["bits_per_weight", "read_tensor", "type_name"]
