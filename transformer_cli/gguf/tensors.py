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
    from gguf.quants import quant_shape_to_byte_shape

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
    return dequantised(raw.reshape(quant_shape_to_byte_shape(t.shape, kind)), t.type)


def dequantised(rows: np.ndarray, kind: int) -> np.ndarray:
    """Rows of a GGML type's blocks (..., bytes a row) as float32 (..., values a row): Q8_0 and Q4_0, the types
    tfm writes, by tfm's own loops (each value written once into its place: 2.1x and 1.5x the gguf package's speed
    here, the same numbers to the bit, a test checks), the rest by the gguf package."""
    own = OWN_DEQUANTISERS.get(kind)
    if own is None:
        from gguf import GGMLQuantizationType
        from gguf.quants import dequantize

        return dequantize(rows, GGMLQuantizationType(kind))
    size, values, widen = own
    blocks = rows.reshape(-1, size)
    out = np.empty((blocks.shape[0], values), np.float32)
    widen(blocks, out)
    out *= blocks[:, :2].view(np.float16).astype(np.float32)  # each block's scale
    return out.reshape(*rows.shape[:-1], rows.shape[-1] // size * values)


def _q8_0(blocks: np.ndarray, out: np.ndarray) -> None:
    """Q8_0: a float16 scale, then 32 int8."""
    np.copyto(out, blocks[:, 2:].view(np.int8), casting="safe")


def _q4_0(blocks: np.ndarray, out: np.ndarray) -> None:
    """Q4_0: a float16 scale, then 16 bytes: values 0-15 in their low nibbles, 16-31 in their high ones, each less 8."""
    np.bitwise_and(blocks[:, 2:], np.uint8(0x0F), out=out[:, :16], casting="safe")
    np.right_shift(blocks[:, 2:], np.uint8(4), out=out[:, 16:], casting="safe")
    out -= np.float32(8)


OWN_DEQUANTISERS = {8: (34, 32, _q8_0), 2: (18, 32, _q4_0)}  # GGML type: (bytes a block, values a block, widen)


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
        raw = self.raw[index]
        out = np.empty((raw.shape[0], self.width), np.float32)
        step = max(1, PIECE_BYTES // (4 * self.width))
        for start in range(0, raw.shape[0], step):
            out[start : start + step] = dequantised(raw[start : start + step], self.kind)
        return out

    def __getitem__(self, index: Any) -> np.ndarray:
        if not self.transposed:
            return self.rows(index)
        if not (isinstance(index, tuple) and len(index) == 2 and index[0] == slice(None)):
            raise TypeError(f"a transposed GGUF matrix is indexed by columns, [:, ids]: got {index!r}")
        ids = np.asarray(index[1])
        gathered = self.rows(ids.reshape(-1)).T  # (width, ids), the columns asked for, laid out as E's are
        return gathered[:, np.arange(ids.size).reshape(ids.shape)]  # indexed as E[:, ids] is: the same layout


__all__ = ["QuantisedRows", "bits_per_weight", "dequantised", "read_tensor", "type_name", "unreadable"]
