"""Weights as safetensors, through the safetensors package's NumPy API, with the spec in the file's metadata."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .arrays import Header, write_atomic
from .errors import ArrayError

DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
          "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}  # fmt: skip


def _open(path: Path):  # type: ignore[no-untyped-def]
    from safetensors import SafetensorError, safe_open

    if not path.is_file():
        raise ArrayError(f"{path}: no such file" if not path.exists() else f"{path}: is a directory, expected a file")
    try:
        return safe_open(str(path), framework="numpy")
    except (SafetensorError, OSError, ValueError) as exc:
        raise ArrayError(f"{path}: not a readable .safetensors file ({exc})") from None


def peek(path: Path) -> tuple[dict[str, Header], dict[str, str]]:
    """Names, shapes and dtypes from the header, and the metadata, without reading the data."""
    with _open(path) as handle:
        layout = {}
        for name in handle.keys():  # noqa: SIM118 - safe_open has keys(), not iteration
            part = handle.get_slice(name)
            code = part.get_dtype()
            dtype = np.dtype(DTYPES[code]) if code in DTYPES else np.dtype("V2")  # e.g. BF16: no NumPy dtype
            layout[name] = Header(tuple(part.get_shape()), dtype)
        return layout, dict(handle.metadata() or {})


def load(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of the file as a NumPy array."""
    with _open(path) as handle:
        return {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118


def save(path: Path, weights: dict[str, np.ndarray], spec_dict: dict | None) -> None:
    """Write atomically, with the spec as JSON under the metadata key 'tfm_spec'."""
    from safetensors.numpy import save as to_bytes

    metadata = {"format": "tfm"} | ({"tfm_spec": json.dumps(spec_dict)} if spec_dict else {})
    data = to_bytes({k: np.ascontiguousarray(v) for k, v in weights.items()}, metadata=metadata)
    write_atomic(path, lambda handle: handle.write(data))


def stored_spec(metadata: dict[str, str], path: Path) -> dict | None:
    """The spec mapping stored in a file's metadata, if any."""
    if "tfm_spec" not in metadata:
        return None
    try:
        data = json.loads(metadata["tfm_spec"])
    except json.JSONDecodeError:
        raise ArrayError(f"{path}: metadata 'tfm_spec' is not valid JSON") from None
    return data
