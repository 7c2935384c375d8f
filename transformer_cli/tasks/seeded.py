"""`tfm init`: seeded weights written tensor by tensor to tfm's files or to a Hugging Face folder, and the memory
each way holds, from the counts alone (checked before anything is written)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.memory import MemoryEstimate
from ..analysis.params import count_params
from ..components.tensors import iter_tensors
from ..errors import ArrayError
from ..hf.config import read_config
from ..hf.layouts import hf_shape, rules, tensor_shapes
from ..hf.weights import family_for
from ..io import safetensors_io
from ..io.arrays import Header
from ..io.weights import (
    BUFFERS,
    MIN_ENTRY_BYTES,
    NPY_CHUNK,
    ZIP_ENTRY_BYTES,
    init_weights,
    iter_init,
    weights_format,
    write_weights,
)
from ..spec.definition import Spec
from .conversions import write_folder


def write_init(path: str | Path, spec: Spec, seed: int = 0, overwrite: bool = True) -> tuple[int, int]:
    """Write the seeded weights tensor by tensor (never all at once); returns (tensors, parameters)."""
    path, float64 = Path(path), np.dtype(np.float64)
    tensors = count_params(spec, check=False).tensor_count
    if weights_format(path) == ".safetensors" and tensors * MIN_ENTRY_BYTES > safetensors_io.MAX_HEADER:
        raise ArrayError(
            f"{path}: {tensors:,} tensors need a header over the {safetensors_io.MAX_HEADER:,} bytes safetensors "
            "allows; use .npz"
        )
    layout = lambda: ((t.name, Header(t.shape, float64)) for t in iter_tensors(spec))  # noqa: E731
    write_weights(path, layout, iter_init(spec, seed), spec, overwrite)
    return tensors, count_params(spec, check=False).total


def init_memory(spec: Spec, path: str | Path) -> MemoryEstimate:
    """What write_init holds at once: the largest tensor, NumPy's write chunk, and zipfile's per-member records."""
    count = count_params(spec, check=False)
    largest = 8 * max(math.prod(shape) for shape in count.shapes())
    tensors = count.tensor_count
    if weights_format(Path(path)) == ".npz":
        held = largest + min(largest, NPY_CHUNK) + ZIP_ENTRY_BYTES * tensors
    else:
        held = largest  # the header is written piece by piece, each tensor straight from its array
    return MemoryEstimate(weights=held + BUFFERS, activations=0, attention=0, feedforward=0)


def init_folder(config_path: Path, out: Path, spec: Spec, seed: int, overwrite: bool = False) -> tuple[int, int]:
    """A Hugging Face folder of tfm's seeded weights (as `tfm init` makes them), in float32; returns the tensors
    written and the parameters."""

    config = read_config(config_path)
    write_folder(out, spec, config, init_weights(spec, seed), np.float32, overwrite=overwrite)
    return len(rules(family_for(config), spec)), count_params(spec).total


def init_folder_memory(spec: Spec, config: Mapping[str, Any]):
    """What init_folder holds: every seeded float64 tensor, and the largest checkpoint tensor joined from them.

    From the counts alone (block 0's tensors stand for every block's), so a model of 10^9 blocks is refused at
    once."""

    shapes = tensor_shapes(spec, first=True)
    largest = max(math.prod(hf_shape(rule, shapes)) for rule in rules(family_for(config), spec, first=True))
    return MemoryEstimate(
        weights=8 * count_params(spec).total + 12 * largest, activations=0, attention=0, feedforward=0
    )


__all__ = ["init_folder", "init_folder_memory", "init_memory", "write_init"]
