"""Model weights: seeded initialisation, loading with full validation, and saving.

Weights are a flat dict from the public tensor names (`blocks.{i}.attention.W_Q`, ...) to arrays, exactly
as stored in a weights file, so a file and the in-memory model are the same thing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import safetensors_io
from .arrays import Header, first_nonfinite, open_npz, peek_npz, save_npz
from .errors import ArrayError
from .params import Tensor, all_tensors
from .spec import Spec, spec_from_mapping

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


FORMATS = (".npz", ".safetensors")


def weights_format(path: Path) -> str:
    """'.npz' or '.safetensors', from the extension in any case (W.NPZ too); anything else is an error."""
    if path.suffix.lower() not in FORMATS:
        raise ArrayError(f"{path}: unknown weights format '{path.suffix}', expected a .npz or .safetensors file")
    return path.suffix.lower()


def load_weights(path: str | Path, spec: Spec) -> Weights:
    """Load weights (.npz without pickle, or .safetensors), checking the layout from the headers before any data.

    A .safetensors file written by tfm also holds its spec: it must be the spec given.
    """
    path = Path(path)
    if weights_format(path) == ".npz":
        check_layout(peek_npz(path), spec, str(path))
        weights = open_npz(path)
    else:
        layout, metadata = safetensors_io.peek(path)
        stored = safetensors_io.stored_spec(metadata, path)
        if stored is not None and spec_from_mapping(stored, f"{path} metadata").to_dict() != spec.to_dict():
            differ = sorted(k for k in {*stored, *spec.to_dict()} if stored.get(k) != spec.to_dict().get(k))
            raise ArrayError(f"{path}: written for another spec ({', '.join(differ)} differ from '{spec.label}')")
        check_layout(layout, spec, str(path))
        weights = safetensors_io.load(path)
    check_weights(weights, spec, str(path))
    return weights


def spec_of_weights(path: str | Path) -> Spec | None:
    """The spec stored in a .safetensors weights file by `tfm init`, or None."""
    path = Path(path)
    if weights_format(path) != ".safetensors":
        return None
    stored = safetensors_io.stored_spec(safetensors_io.peek(path)[1], path)
    return spec_from_mapping(stored, f"{path} metadata") if stored is not None else None


def save_weights(path: str | Path, weights: Weights, spec: Spec | None = None) -> None:
    """Write weights atomically as .npz or .safetensors (by the extension; the latter also stores the spec)."""
    path = Path(path)
    if weights_format(path) == ".npz":
        save_npz(path, weights)
    else:
        safetensors_io.save(path, weights, spec.to_dict() if spec else None)
