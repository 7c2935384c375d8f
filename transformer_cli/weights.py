"""Model weights: seeded initialisation, loading with full validation, and saving.

Weights are a flat dict from the public tensor names (`blocks.{i}.attention.W_Q`, ...) to arrays, exactly
as stored in a weights file, so a file and the in-memory model are the same thing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .arrays import Header, first_nonfinite, open_npz, peek_npz, save_npz
from .errors import ArrayError
from .params import Tensor, all_tensors
from .spec import Spec

Weights = dict[str, np.ndarray]


def _init_std(spec: Spec, tensor: Tensor) -> float:
    """Standard deviation of a weight's entries; 0 means the tensor is initialised to a constant."""
    leaf = tensor.name.rsplit(".", 1)[-1]
    depth = 2 * spec.N  # residual sublayers: their outputs are scaled so the sum over depth stays O(1)
    stds = {
        "W_Q": spec.d**-0.5,
        "W_K": spec.d**-0.5,
        "W_V": spec.d**-0.5,
        "W_O": (spec.H * spec.m * depth) ** -0.5,
        "W1": (2.0 / spec.d) ** 0.5,
        "W2": (spec.r * depth) ** -0.5,
        "P": 0.5**0.5,
    }
    return stds.get(leaf, 0.0)


def init_weights(spec: Spec, seed: int = 0) -> Weights:
    """Deterministic float64 weights from `seed` (scheme in the README: fan-in scaled, residual outputs / sqrt(2N))."""
    rng = np.random.default_rng(seed)
    weights = {}
    for tensor in all_tensors(spec):
        std = _init_std(spec, tensor)
        if std > 0:
            weights[tensor.name] = rng.normal(0.0, std, size=tensor.shape)
        elif tensor.name.endswith("gamma"):
            weights[tensor.name] = np.ones(tensor.shape)
        else:
            weights[tensor.name] = np.zeros(tensor.shape)
    return weights


def _listed(items: list[str], limit: int = 4) -> str:
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def check_layout(layout: dict[str, Header], spec: Spec, source: str) -> None:
    """Raise an ArrayError listing every tensor that is missing, unexpected, misshapen or not floating point."""
    expected = {t.name: t.shape for t in all_tensors(spec)}
    problems = []
    missing = [name for name in expected if name not in layout]
    unexpected = [name for name in layout if name not in expected]
    if missing:
        problems.append(f"missing {_listed(missing)}")
    if unexpected:
        problems.append(f"unexpected {_listed(unexpected)}")
    present = [name for name in expected if name in layout]
    shapes = [f"{n} {layout[n].shape} (expected {expected[n]})" for n in present if layout[n].shape != expected[n]]
    if shapes:
        problems.append(f"wrong shape {_listed(shapes, 3)}")
    dtypes = [f"{n} {layout[n].dtype}" for n in present if not np.issubdtype(layout[n].dtype, np.floating)]
    if dtypes:
        problems.append(f"not floating point {_listed(dtypes)}")
    if problems:
        raise ArrayError(f"{source}: weights do not fit spec '{spec.label}': " + "; ".join(problems))


def check_weights(weights: Weights, spec: Spec, source: str) -> None:
    """Check names, shapes and dtypes against `spec`, then that every value is finite."""
    check_layout({name: Header(w.shape, w.dtype) for name, w in weights.items()}, spec, source)
    nonfinite = [f"{n} at {first_nonfinite(w)}" for n, w in weights.items() if first_nonfinite(w) is not None]
    if nonfinite:
        raise ArrayError(f"{source}: NaN or inf in {_listed(nonfinite)}")


def load_weights(path: str | Path, spec: Spec) -> Weights:
    """Load a weights .npz (never pickle): the layout is checked from the headers before any data is read."""
    path = Path(path)
    check_layout(peek_npz(path), spec, str(path))
    weights = open_npz(path)
    check_weights(weights, spec, str(path))
    return weights


def save_weights(path: str | Path, weights: Weights) -> None:
    """Write weights as an .npz, atomically."""
    save_npz(Path(path), weights)


def cast_weights(weights: Weights, dtype: np.dtype) -> Weights:
    """The same weights in the compute dtype."""
    return {name: np.asarray(w, dtype=dtype) for name, w in weights.items()}
