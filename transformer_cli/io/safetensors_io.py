"""Weights as safetensors, read and written by tfm itself, with the spec as JSON in the metadata.

The format (huggingface/safetensors): 8 bytes, the header's length n (unsigned, little-endian); n bytes of
JSON `{NAME: {"dtype": "F64", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {str: str}}`; then
the data, offsets counted from its start. The whole header is checked before any data is read, so a hostile
header is a one-line error, and tensors are read one by one into arrays of exactly the announced size.
tfm writes the header first and then each tensor as it is made, so writing holds one tensor at a time.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np

from ..errors import ArrayError
from ..files import open_regular
from ..kernels import bfloat16_to_float32
from ..spec.yaml12 import MAX_DIGITS, parse_int
from ..text import shown
from .arrays import BFLOAT16, Header
from .outputs import Writer, write_atomic

MAX_HEADER = 100_000_000  # bytes; the reference implementation refuses more
DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "BF16": "<u2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U64": "<u8",
    "U32": "<u4",
    "U16": "<u2",
    "U8": "u1",
    "BOOL": "?",
    "F8_E4M3": "u1",
    "F8_E5M2": "u1",
}
FLOAT8 = ("F8_E4M3", "F8_E5M2")  # read as bytes, decoded exactly to float32 (quantised checkpoints hold them)
CODES = {np.dtype(v): k for k, v in DTYPES.items() if k not in ("BF16", *FLOAT8)} | {BFLOAT16: "BF16"}
DECODED = {code: np.dtype(np.float32) if code in ("BF16", *FLOAT8) else np.dtype(v) for code, v in DTYPES.items()}


def _e4m3() -> np.ndarray:
    """The 256 values of float8 E4M3 ("fn": no infinities; S.1111.111 is NaN) as float32, exactly."""
    b = np.arange(256)
    exponent, mantissa = (b >> 3) & 15, b & 7
    magnitude = np.where(exponent == 0, mantissa / 8 * 2.0**-6, (1 + mantissa / 8) * 2.0 ** (exponent - 7))
    values = np.where(b >> 7, -magnitude, magnitude)
    values[(exponent == 15) & (mantissa == 7)] = np.nan
    return values.astype(np.float32)


# E5M2 is the top byte of an IEEE float16 (infinities and NaN included), so float16's bits decode it.
FLOAT8_VALUES = {
    "F8_E4M3": _e4m3(),
    "F8_E5M2": (np.arange(256, dtype=np.uint16) << 8).view(np.float16).astype(np.float32),
}


class Entry(NamedTuple):
    """One tensor as the header announces it: its dtype code, shape and byte range in the data."""

    code: str
    shape: tuple[int, ...]
    begin: int
    end: int


class Contents(NamedTuple):
    entries: dict[str, Entry]
    metadata: dict[str, str]
    data_start: int


def _bad(path: Path, problem: str) -> ArrayError:
    return ArrayError(f"{path}: not a valid .safetensors file: {shown(problem, 240)}")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key '{shown(key)}' appears twice")
        out[key] = value
    return out


def _strict(token: str) -> None:
    raise ValueError(f"{token} is not JSON")


def parse_json(text: str | bytes) -> Any:
    """Strict JSON: no duplicate keys, no NaN, integers of at most MAX_DIGITS digits; ValueError otherwise."""
    try:
        return json.loads(text, object_pairs_hook=_unique, parse_constant=_strict, parse_int=_checked_int)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"byte {exc.start} is not UTF-8") from None


def _checked_int(text: str) -> int:
    value = parse_int(text)
    if not isinstance(value, int):
        raise ValueError(f"an integer of {value.digits:,} digits (at most {MAX_DIGITS:,})")
    return value


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _nbytes(shape: list[int], itemsize: int, cap: int) -> int:
    """prod(shape) * itemsize, or the first partial product past `cap` (a hostile shape may hold huge numbers)."""
    if 0 in shape:
        return 0
    size = itemsize
    for n in shape:
        size *= n
        if size > cap:
            break
    return size


def _entry(path: Path, name: str, info: Any, data_size: int) -> Entry:
    where = f"tensor '{shown(name)}'"
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise _bad(path, f"{where}: expected exactly the fields dtype, shape, data_offsets")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(code, str) or code not in DTYPES:
        known = ", ".join(DTYPES)
        raise _bad(path, f"{where}: dtype {shown(str(code), 20)} is not supported (tfm reads {known})")
    if not isinstance(shape, list) or not all(_is_count(n) for n in shape):
        raise _bad(path, f"{where}: shape {shown(str(shape), 40)} is not a list of non-negative integers")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(n) for n in offsets)):
        raise _bad(path, f"{where}: data_offsets {shown(str(offsets), 40)} is not two non-negative integers")
    begin, end = offsets
    size = _nbytes(shape, np.dtype(DTYPES[code]).itemsize, data_size)
    if end - begin != size:
        needs = f"{size:,}" if size <= data_size else f"more than the data's {data_size:,}"
        dims = str(tuple(shape)) if len(shape) <= 8 else f"({', '.join(map(str, shape[:8]))}, ...)"
        raise _bad(path, f"{where}: {end - begin:,} bytes at offsets {begin}..{end}, but {code} {dims} is {needs}")
    if end > data_size:
        raise _bad(path, f"{where}: offsets {begin}..{end} run past the end of the data ({data_size} bytes)")
    return Entry(code, tuple(shape), begin, end)


def _metadata(path: Path, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _bad(path, "__metadata__ is not a mapping of strings to strings")
    return value


def open_file(path: Path) -> IO[bytes]:
    return open_regular(path, "a .safetensors file")  # a regular file, opened without blocking on a FIFO


def read_contents(path: Path, handle: IO[bytes]) -> Contents:
    """The header's tensors and metadata, every field checked against the file's size."""
    file_size = os.fstat(handle.fileno()).st_size  # of the file opened, not of what the path names now
    head = handle.read(8)
    if len(head) < 8:
        raise _bad(path, f"{len(head)} bytes, too short for the 8-byte header length")
    n = int.from_bytes(head, "little")
    if n > MAX_HEADER:
        # Nothing of the file is echoed: it may be any file a link points to (its first 8 bytes as a number
        # spell its first 8 characters).
        raise _bad(path, f"its first 8 bytes are not a header length of at most {MAX_HEADER:,} bytes")
    if 8 + n > file_size:
        raise _bad(path, f"header length {n:,} runs past the end of the file ({file_size:,} bytes)")
    raw = handle.read(n)
    try:
        top = parse_json(raw)
    except ValueError as exc:
        raise _bad(path, f"header is not JSON: {shown(str(exc))}") from None
    if not isinstance(top, dict):
        raise _bad(path, f"header is a JSON {type(top).__name__}, expected an object")
    metadata = _metadata(path, top.pop("__metadata__", None))
    data_size = file_size - 8 - n
    entries = {name: _entry(path, name, info, data_size) for name, info in top.items()}
    spans = sorted((e.begin, e.end, name) for name, e in entries.items() if e.end > e.begin)
    for (_, end, first), (begin, _, second) in zip(spans, spans[1:], strict=False):
        if begin < end:
            raise _bad(path, f"tensors '{shown(first)}' and '{shown(second)}' overlap")
    return Contents(entries, metadata, 8 + n)


def peek(path: Path) -> tuple[dict[str, Header], dict[str, str]]:
    """Names, shapes and dtypes (as loaded: BF16 as float32) from the header, and the metadata; no data read."""
    with open_file(path) as handle:
        contents = read_contents(path, handle)
    layout = {name: Header(e.shape, DECODED[e.code]) for name, e in contents.entries.items()}
    return layout, contents.metadata


def read_tensor(path: Path, handle: IO[bytes], name: str, entry: Entry, data_start: int) -> np.ndarray:
    array = np.empty(entry.shape, dtype=DTYPES[entry.code])
    handle.seek(data_start + entry.begin)
    view = memoryview(array.reshape(-1)).cast("B")  # type: ignore[arg-type]  # an ndarray is a buffer
    if array.size and handle.readinto(view) != entry.end - entry.begin:  # type: ignore[attr-defined]
        raise _bad(path, f"tensor '{shown(name)}': the file ends inside its data")
    return decode(entry, array)


def mapped_tensor(path: Path, data: np.ndarray, name: str, entry: Entry, data_start: int) -> np.ndarray:
    """A tensor decoded from `data`, the whole file memory-mapped as bytes: a view of its pages where the stored
    dtype is the one given (float32, float16), else decoded from them."""
    return decode(entry, mapped_elements(path, data, name, entry, data_start))


def mapped_elements(path: Path, data: np.ndarray, name: str, entry: Entry, data_start: int) -> np.ndarray:
    """A tensor's elements as stored, undecoded (bfloat16 as its uint16 bits): a view of `data`'s pages, the whole
    file memory-mapped as bytes."""
    raw = data[data_start + entry.begin : data_start + entry.end]
    if raw.size != entry.end - entry.begin:
        raise _bad(path, f"tensor '{shown(name)}': the file ends inside its data")
    return raw.view(DTYPES[entry.code]).reshape(entry.shape)


def decode(entry: Entry, array: np.ndarray) -> np.ndarray:
    """A tensor's stored elements as tfm reads them: BF16 and float8 decoded exactly to float32, the rest in
    native byte order."""
    if entry.code == "BF16":  # bfloat16 is the top half of a float32: shifting the bits back is exact
        return bfloat16_to_float32(array)
    if entry.code in FLOAT8:
        return FLOAT8_VALUES[entry.code][array]
    return array.astype(array.dtype.newbyteorder("="), copy=False)


def load(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of the file as a NumPy array (F16 as float16, BF16 decoded exactly to float32)."""
    with open_file(path) as handle:
        contents = read_contents(path, handle)
        return {name: read_tensor(path, handle, name, e, contents.data_start) for name, e in contents.entries.items()}


# -- writing ----------------------------------------------------------------------------------------

Layout = Callable[[], Iterable[tuple[str, Header]]]  # called twice: to measure the header, then to write it


def _header_parts(layout: Layout, metadata: dict[str, str]) -> Iterator[bytes]:
    yield b"{" + json.dumps({"__metadata__": metadata})[1:-1].encode()
    offset = 0
    for name, header in layout():
        size = math.prod(header.shape) * header.dtype.itemsize
        info = {"dtype": CODES[header.dtype], "shape": list(header.shape), "data_offsets": [offset, offset + size]}
        yield b", " + json.dumps({name: info})[1:-1].encode()
        offset += size
    yield b"}"


def header_size(layout: Layout, metadata: dict[str, str]) -> int:
    """Bytes of the header (padded to 8, as the reference implementation pads) before the data."""
    n = sum(len(part) for part in _header_parts(layout, metadata))
    return n + (-n) % 8


def writer(layout: Layout, arrays: Iterable[tuple[str, np.ndarray]], metadata: dict[str, str], path: Path) -> Writer:
    """What writes a file: the header from `layout`, then each array as `arrays` yields it (in layout order).

    The header's size is checked here, before anything is written (`path` names the file in the error)."""
    n = header_size(layout, metadata)
    if n > MAX_HEADER:
        raise ArrayError(f"{path}: a header of {n:,} bytes, more than the {MAX_HEADER:,} safetensors allows; use .npz")

    def write(handle: IO[bytes]) -> None:
        handle.write(n.to_bytes(8, "little"))
        written = 0
        for part in _header_parts(layout, metadata):
            written += handle.write(part)
        handle.write(b" " * (n - written))
        for (name, header), (name_, array) in zip(layout(), arrays, strict=True):
            assert name == name_ and array.shape == header.shape, (name, name_)  # the caller's own invariant
            stored = np.dtype("<u2") if header.dtype == BFLOAT16 else header.dtype.newbyteorder("<")  # BF16: bits
            handle.write(memoryview(np.ascontiguousarray(array, dtype=stored)).cast("B"))  # type: ignore[arg-type]

    return write


def save(
    path: Path,
    layout: Layout,
    arrays: Iterable[tuple[str, np.ndarray]],
    metadata: dict[str, str],
    overwrite: bool = True,
) -> None:
    """Write atomically (see `writer`). Without `overwrite`, a file that appeared at `path` meanwhile is never
    replaced (outputs.write_atomic)."""
    write_atomic(path, writer(layout, arrays, metadata, path), overwrite)


def stored_spec(metadata: dict[str, str], path: Path) -> dict | None:
    """The spec mapping stored in a file's metadata under 'tfm_spec', if any (strict JSON, no duplicate keys)."""
    if "tfm_spec" not in metadata:
        return None
    try:
        return parse_json(metadata["tfm_spec"])
    except ValueError as exc:
        raise ArrayError(f"{path}: metadata 'tfm_spec' is not valid JSON: {shown(str(exc))}") from None
