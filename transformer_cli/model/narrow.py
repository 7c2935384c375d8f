"""A matrix kept in the narrowest float form that holds its values exactly, widened in pieces as the pass uses them.

A model whose blocks are not all held (weights stored or streamed: analysis/modes.py) keeps its embedding and its
head so: a bfloat16 checkpoint's are bfloat16 values, which take 2 bytes an element as bfloat16's bits and 4 or 8
in the compute dtype. The embedding then widens the columns of the tokens it sees, and the head widens its rows a
slice at a time (`linear`), so neither is ever whole in the compute dtype. Widening is exact, so the pass gives the
numbers of the whole matrix (a slice of rows is the same product row by row).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kernels
from ..kernels import Array, bfloat16_to_float32

SLICE_BYTES = 64 << 20  # the head's rows widened at once, at most
SLICE_ROWS = 512  # slices are whole multiples of this many rows (the matrix product's own blocks stay whole)
PIECE_BYTES = 4 << 20  # a quantised matrix's rows dequantised at once, at most (the gguf package's temporaries: a few
# times it; gguf/tensors.py)


class Narrow:
    """`array`'s values held as bfloat16 bits where each one is a bfloat16 (its float32's low half zero), else as
    they are (float16, float32: no float64 value is kept narrower, even if it could be); indexing gives float32 (or
    the array's own dtype) pieces, times `factor`."""

    def __init__(self, array: Array, factor: float | None = None, _held: Array | None = None):
        if _held is None:
            array = np.asarray(array)
            bits = bfloat16_bits(array) if array.dtype == np.float32 else None
            _held = array if bits is None else bits
        self.held, self.factor = _held, factor

    @property
    def shape(self) -> tuple[int, ...]:
        return self.held.shape

    @property
    def nbytes(self) -> int:
        return self.held.nbytes

    @property
    def T(self) -> Narrow:
        return Narrow(None, self.factor, self.held.T)  # type: ignore[arg-type]

    def __mul__(self, factor: float) -> Narrow:
        """The matrix times `factor`, applied to each piece once it is widened (to the compute dtype: as the
        whole matrix times it would round)."""
        if self.factor is not None:
            raise ValueError("a Narrow matrix is scaled once")
        return Narrow(None, factor, self.held)  # type: ignore[arg-type]

    def widened(self, index: Any, dtype: np.dtype) -> Array:
        """The piece at `index` in `dtype`."""
        piece = self.held[index]
        values = bfloat16_to_float32(piece) if piece.dtype == np.uint16 else piece
        values = np.asarray(values, dtype=dtype)
        if self.factor is not None:
            values = values * dtype.type(self.factor)
        return values

    def __getitem__(self, index: Any) -> Array:
        return self.widened(index, np.dtype(np.float32) if self.held.dtype == np.uint16 else self.held.dtype)


def held(weights: Any, name: str) -> Narrow:
    """The matrix `name` of `weights` kept narrow: as the file's quantised rows where it gives them (`rows`: a GGUF
    file's, dequantised as the pass asks), else read and held in bfloat16 bits where its values are bfloat16."""
    rows = getattr(weights, "rows", None)
    stored = rows(name) if rows is not None else None
    return Narrow(None, None, stored) if stored is not None else Narrow(weights[name])  # type: ignore[arg-type]


def bfloat16_bits(array: Array) -> Array | None:
    """The bfloat16 bits (uint16) of float32 values that are each a bfloat16, laid out as `array` is (C order or
    its transpose); None where one is not. Made a piece at a time: nothing of the whole size but the bits."""
    flip = not array.flags.c_contiguous and array.T.flags.c_contiguous  # (a transposed view: its own rows)
    values = np.ascontiguousarray(array.T if flip else array).reshape(-1).view(np.uint32)
    bits = np.empty(values.shape, np.uint16)
    step = 1 << 22
    for start in range(0, values.size, step):
        piece = values[start : start + step]
        if np.any(piece & np.uint32(0xFFFF)):
            return None
        np.right_shift(piece, np.uint32(16), out=bits[start : start + step], casting="unsafe")
    shaped = bits.reshape(array.T.shape if flip else array.shape)
    return shaped.T if flip else shaped


def linear(W: Array | Narrow, X: Array) -> Array:
    """W X for X of shape (d, b, n), as kernels.linear; a Narrow W a slice of rows at a time, widened to X's dtype."""
    if not isinstance(W, Narrow):
        return kernels.linear(W, X)
    d, b, n = X.shape
    rows = W.shape[0]
    step = max(SLICE_ROWS, SLICE_BYTES // (X.dtype.itemsize * d) // SLICE_ROWS * SLICE_ROWS)
    out = np.empty((rows, b * n), dtype=X.dtype)
    columns = X.reshape(d, b * n)
    for start in range(0, rows, step):
        np.matmul(W.widened(slice(start, start + step), X.dtype), columns, out=out[start : start + step])
    return out.reshape(rows, b, n)


__all__ = ["Narrow", "held", "linear"]
