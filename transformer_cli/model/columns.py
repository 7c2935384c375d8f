"""The model's column layout: a batch as (d, b, n), one column per token, and what a pass hands its taps."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..kernels import Array

# taps(i, name, columns): block i's sublayer `name` ('attention', 'cross', 'feedforward') made its output, or block i
# its output ('block'); the pass's input after the prologue is block -1's 'input'. Columns (d, b, n), not copies:
# the pass goes on writing into a sublayer's output, so a tap copies what it keeps.
Taps = Callable[[int, str, Array], None]


def pass_taps(squares: list | None, on_block: Callable[[float], None] | None, step: float, taps: Taps | None):
    """The taps of one part of forward's pass: the mean squares of the trace, the progress, the caller's taps."""
    if squares is None and on_block is None:
        return taps

    def heard(i: int, name: str, Z: Array) -> None:
        if name in ("input", "block") and squares is not None:
            squares.append(_mean_square(Z))
        if name == "block" and on_block is not None:
            on_block(step)
        if taps is not None:
            taps(i, name, Z)

    return heard


def to_columns(X: Array, dtype: np.dtype) -> Array:
    """(d, n) or (b, d, n) -> a new contiguous (d, b, n) array in `dtype`."""
    X3 = X[None] if X.ndim == 2 else X
    return np.array(X3.transpose(1, 0, 2), dtype=dtype, order="C", copy=True)  # never a view of the input


def from_columns(Z: Array, ndim: int) -> Array:
    """(k, b, n) -> (k, n) for a 2-d result, else a contiguous (b, k, n) (k: d, or V for logits)."""
    return Z[:, 0, :] if ndim == 2 else np.ascontiguousarray(Z.transpose(1, 0, 2))


def _mean_square(X: Array) -> float:
    return float(np.mean(np.square(X, dtype=np.float64)))
