"""Write a Hugging Face folder (config.json and model.safetensors, or shards and their index) from tfm's weights.

The folder is built in a hidden temporary folder beside it and renamed into place when complete, so an
interrupted or failed write leaves nothing behind, and an existing folder is replaced only with `overwrite`.
Tensors are written one at a time, each joined from tfm's tensors just before it is written.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OutputError
from ..io import safetensors_io
from ..io.arrays import Header
from ..spec.definition import Spec
from .checkpoint import INDEX, SINGLE
from .layouts import Rule, hf_shape, join, rules, tensor_shapes
from .weights import family_for

TORCH_NAMES = {np.dtype(np.float64): "float64", np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}


def _piece(weights: Mapping[str, np.ndarray], name: str) -> np.ndarray:
    """tfm's tensor `name`, or one expert of it: 'blocks.0.ff.W1[3]'."""
    if "[" in name:
        base, e = name[:-1].split("[")
        return np.asarray(weights[base])[int(e)]
    return np.asarray(weights[name])


def _shards(sized: list[tuple[Rule, int]], shard_bytes: int | None) -> list[list[Rule]]:
    """Rules in file order, cut into consecutive shards of at most shard_bytes (one tensor may exceed it)."""
    shards: list[list[Rule]] = [[]]
    held = 0
    for rule, size in sized:
        if shard_bytes is not None and shards[-1] and held + size > shard_bytes:
            shards.append([])
            held = 0
        shards[-1].append(rule)
        held += size
    return shards


def write_folder(
    folder: str | Path,
    spec: Spec,
    config: Mapping[str, Any],
    weights: Mapping[str, np.ndarray],
    dtype: Any = np.float32,
    shard_bytes: int | None = None,
    overwrite: bool = False,
) -> list[str]:
    """Write config.json and the weights as the config's family lays them out; returns the files written."""
    folder, dtype = Path(folder), np.dtype(dtype)
    if os.path.lexists(folder) and not overwrite:
        raise OutputError(f"{folder}: already exists; pass --force to replace it")
    shapes = tensor_shapes(spec)
    layout = rules(family_for(config), spec)
    sized = [(rule, math.prod(hf_shape(rule, shapes)) * dtype.itemsize) for rule in layout]
    shards = _shards(sized, shard_bytes)
    names = [SINGLE] if len(shards) == 1 else [f"model-{i:05d}-of-{len(shards):05d}.safetensors"
                                                for i in range(1, len(shards) + 1)]  # fmt: skip
    tmp = folder.parent / f".{folder.name}.{secrets.token_hex(8)}.tmp"
    try:
        tmp.mkdir()
        for name, shard in zip(names, shards, strict=True):
            _write_shard(tmp / name, shard, spec, shapes, weights, dtype)
        if len(shards) > 1:
            weight_map = {rule.hf: name for name, shard in zip(names, shards, strict=True) for rule in shard}
            index = {"metadata": {"total_size": sum(size for _, size in sized)}, "weight_map": weight_map}
            (tmp / INDEX).write_text(json.dumps(index, indent=2) + "\n")
        written = dict(config) | {"dtype": TORCH_NAMES.get(dtype, str(dtype)), "torch_dtype": TORCH_NAMES.get(dtype)}
        (tmp / "config.json").write_text(json.dumps(written, indent=2) + "\n")
        _publish(tmp, folder, overwrite)
    except OSError as exc:
        raise OutputError(f"{folder}: cannot write: {exc.strerror or exc}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return ["config.json", *names, *([INDEX] if len(shards) > 1 else [])]


def _write_shard(path: Path, shard: list[Rule], spec: Spec, shapes: dict, weights: Mapping, dtype: np.dtype) -> None:
    def layout() -> Iterator[tuple[str, Header]]:
        return ((rule.hf, Header(hf_shape(rule, shapes), dtype)) for rule in shard)

    def arrays() -> Iterator[tuple[str, np.ndarray]]:
        for rule in shard:
            yield rule.hf, join(rule, {name: _piece(weights, name) for name in rule.tfm}, spec).astype(dtype)

    safetensors_io.save(path, layout, arrays(), {"format": "pt"})


def _publish(tmp: Path, folder: Path, overwrite: bool) -> None:
    """Rename the finished folder into place; an existing one is moved aside first and removed after."""
    old = None
    if os.path.lexists(folder):
        if not overwrite:
            raise OutputError(f"{folder}: already exists; pass --force to replace it")
        old = folder.parent / f".{folder.name}.{secrets.token_hex(8)}.old"
        os.rename(folder, old)
    os.rename(tmp, folder)
    if old is not None:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink()
