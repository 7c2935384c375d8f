"""A GGUF tensor's data as float32 in NumPy's order, dequantised by the `gguf` package, read one at a time from the
file (a memory map of that tensor's bytes alone), and what each type costs per weight."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..errors import ArrayError
from ..model.narrow import PIECE_BYTES
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


class QuantisedRows:
    """A GGUF matrix of quantised rows (the embedding, the head) kept as the file stores them, rows dequantised by
    the `gguf` package only as the pass asks, a piece of PIECE_BYTES of float32 at a time: a model whose blocks are
    not all held keeps its vocabulary matrices so (model/narrow.py; an 8B model's Q4_K and Q6_K embedding and head
    take 0.6 GB where their float32 takes 4.2). `transposed`: tfm's matrix is the rows' transpose (the embedding's
    (d, V) of the file's (V, d)), indexed by columns, E[:, ids]."""

    dtype = np.dtype(np.float32)

    def __init__(self, raw: np.ndarray, kind: int, width: int, transposed: bool = False):
        self.raw, self.kind, self.width, self.transposed = raw, kind, width, transposed  # raw: (rows, bytes a row)

    @property
    def shape(self) -> tuple[int, int]:
        shape = (self.raw.shape[0], self.width)
        return shape[::-1] if self.transposed else shape

    @property
    def nbytes(self) -> int:
        return self.raw.nbytes

    @property
    def T(self) -> QuantisedRows:
        return QuantisedRows(self.raw, self.kind, self.width, not self.transposed)

    def rows(self, index: slice | np.ndarray) -> np.ndarray:
        """The rows at `index` (a slice, or row numbers), dequantised: (k, width) float32."""
        from gguf import GGMLQuantizationType
        from gguf.quants import dequantize

        raw = self.raw[index]
        out = np.empty((raw.shape[0], self.width), np.float32)
        step = max(1, PIECE_BYTES // (4 * self.width))
        for start in range(0, raw.shape[0], step):
            out[start : start + step] = dequantize(raw[start : start + step], GGMLQuantizationType(self.kind))
        return out

    def __getitem__(self, index: Any) -> np.ndarray:
        if not self.transposed:
            return self.rows(index)
        if not (isinstance(index, tuple) and len(index) == 2 and index[0] == slice(None)):
            raise TypeError(f"a transposed GGUF matrix is indexed by columns, [:, ids]: got {index!r}")
        ids = np.asarray(index[1])
        gathered = self.rows(ids.reshape(-1)).T  # (width, ids), the columns asked for, laid out as E's are
        return gathered[:, np.arange(ids.size).reshape(ids.shape)]  # indexed as E[:, ids] is: the same layout


__all__ = ["QuantisedRows", "bits_per_weight", "read_tensor", "type_name", "unreadable"]
