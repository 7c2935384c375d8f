"""Attention weights of one block for an input file: what `tfm attention` shows and saves."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .arrays import open_npy, peek_npy
from .errors import TfmError
from .memory import check_memory, estimate_forward
from .model import Transformer
from .runner import check_input, check_input_header, get_weights
from .spec import Spec


def attention_maps(
    spec: Spec,
    input_path: Path,
    weights_path: Path | None,
    seed: int,
    dtype: str,
    block: int,
    head: int | None,
    sequence: int,
) -> np.ndarray:
    """Every head's weights of `block` for one sequence of the input: (H, n_k, n_q), each column summing to 1."""
    if block >= spec.N:
        raise TfmError(f"--block: got {block}, expected 0 .. {spec.N - 1} (the spec has N = {spec.N})")
    if head is not None and head >= spec.H:
        raise TfmError(f"--head: got {head}, expected 0 .. {spec.H - 1} (the spec has H = {spec.H})")
    header = peek_npy(input_path)
    check_input_header(header.shape, header.dtype, spec, str(input_path))
    b = header.shape[0] if len(header.shape) == 3 else 1
    if sequence >= b:
        raise TfmError(f"--sequence: got {sequence}, expected 0 .. {b - 1} (the input holds {b})")
    n = header.shape[-1]
    check_memory(estimate_forward(spec, 1, n, dtype), None, "this forward pass")
    x, _ = check_input(open_npy(input_path), spec, str(input_path), dtype)
    x = x[sequence] if x.ndim == 3 else x
    model = Transformer(spec, get_weights(spec, weights_path, seed)[0], dtype)
    return model.attention_weights(x)[block][0]  # (H, n_k, n_q)
