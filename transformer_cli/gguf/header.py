"""A GGUF file's header, checked against the file's size before anything is read from it by the `gguf` package.

GGUF (v2, v3): magic "GGUF", version, tensor count, metadata count, the metadata (key, type, value), the tensor
table (name, dims innermost first, type, offset), padding to the alignment, then the data. A lying header (a string
longer than the file, an array of 10^12 entries, a tensor past the end or over another, an element count that
overflows, an unknown type) is one line naming what is wrong, found by walking the header with every length checked
against the bytes that remain: nothing of a claimed size is ever allocated.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..errors import ArrayError, SpecError, clipped

MAGIC = b"GGUF"
VERSIONS = (2, 3)
MAX_DIMS = 4  # GGML_MAX_DIMS
DEFAULT_ALIGNMENT = 32
# GGUFValueType: (struct format, size); 8 is a string, 9 an array
SCALARS = {
    0: ("<B", 1),
    1: ("<b", 1),
    2: ("<H", 2),
    3: ("<h", 2),
    4: ("<I", 4),
    5: ("<i", 4),
    6: ("<f", 4),
    7: ("<?", 1),
    10: ("<Q", 8),
    11: ("<q", 8),
    12: ("<d", 8),
}
UINT32, FLOAT32, STRING, ARRAY = 4, 6, 8, 9
# GGUFValueType's names
TYPE_NAMES = {
    0: "UINT8",
    1: "INT8",
    2: "UINT16",
    3: "INT16",
    4: "UINT32",
    5: "INT32",
    6: "FLOAT32",
    7: "BOOL",
    8: "STRING",
    9: "ARRAY",
    10: "UINT64",
    11: "INT64",
    12: "FLOAT64",
}
KEPT_ITEMS = 1 << 16  # numeric arrays up to this many items are kept as values; longer ones by their count only


@dataclass(frozen=True)
class TensorInfo:
    """One entry of the tensor table: dims as GGUF lists them (innermost first), its GGML type, where its data is."""

    name: str
    dims: tuple[int, ...]
    type: int
    offset: int  # from the start of the data section
    nbytes: int

    @property
    def shape(self) -> tuple[int, ...]:
        """NumPy's order (outermost first): a weight of out x in features is (out, in)."""
        return self.dims[::-1]

    @property
    def elements(self) -> int:
        out = 1
        for n in self.dims:
            out *= n
        return out


@dataclass(frozen=True)
class Header:
    path: Path
    version: int
    metadata: dict[str, Any]  # key -> value (long arrays: ArrayCount)
    tensors: dict[str, TensorInfo]
    data_offset: int
    size: int


@dataclass(frozen=True)
class ArrayCount:
    """A metadata array too long to keep (a vocabulary's tokens): its item type and length."""

    item_type: int
    count: int


class _Reader:
    def __init__(self, f: BinaryIO, size: int, path: Path, whole: frozenset[str] = frozenset()):
        self.f, self.size, self.path, self.whole = f, size, path, whole  # whole: arrays kept at any length

    @property
    def left(self) -> int:
        return self.size - self.f.tell()

    def fail(self, what: str) -> ArrayError:
        return ArrayError(f"{self.path}: not a valid GGUF file: {clipped(what)}")

    def take(self, n: int, what: str) -> bytes:
        if n > self.left:
            raise self.fail(f"{what} needs {n:,} bytes at offset {self.f.tell():,}, the file has {self.left:,} left")
        return self.f.read(n)

    def scalar(self, kind: int, what: str) -> Any:
        fmt, n = SCALARS[kind]
        return struct.unpack(fmt, self.take(n, what))[0]

    def string(self, what: str) -> str:
        n = self.scalar(10, f"the length of {what}")
        raw = self.take(n, f"{what} ({n:,} bytes)")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8") from None

    def pass_strings(self, count: int, key: str) -> None:
        """Past `count` strings by their lengths alone, each checked against the file, none decoded or kept (a
        vocabulary of 10^7 tokens is 10^7 steps of a few operations)."""
        length, pos, i = struct.Struct("<Q").unpack_from, self.f.tell(), 0
        with mmap.mmap(self.f.fileno(), 0, access=mmap.ACCESS_READ) as raw:
            try:
                for i in range(count):  # noqa: B007 (i said in the error)
                    pos += 8 + length(raw, pos)[0]  # (a length past the end: the next read fails)
            except struct.error:
                pos = self.size + 1
        if pos > self.size:
            raise self.fail(f"item {i} of {key} runs past the end of the file ({self.size:,} bytes)")
        self.f.seek(pos)

    def value(self, kind: int, key: str) -> Any:
        if kind == FLOAT32:  # the shortest decimal that is this float32: 1e-05, not 9.999999747378752e-06
            return float(np.format_float_scientific(np.float32(self.scalar(kind, f"the value of {key}")), unique=True))
        if kind in SCALARS:
            return self.scalar(kind, f"the value of {key}")
        if kind == STRING:
            return self.string(f"the value of {key}")
        if kind != ARRAY:
            raise self.fail(f"metadata {key}: unknown value type {kind}")
        item, count = self.scalar(4, f"the item type of {key}"), self.scalar(10, f"the length of {key}")
        if item == ARRAY:
            raise self.fail(f"metadata {key}: an array of arrays")
        smallest = SCALARS[item][1] if item in SCALARS else 8 if item == STRING else None
        if smallest is None:
            raise self.fail(f"metadata {key}: unknown item type {item}")
        if count * smallest > self.left:
            raise self.fail(
                f"metadata {key}: an array of {count:,} items needs at least {count * smallest:,} bytes, "
                f"the file has {self.left:,} left"
            )
        if item == STRING and (count <= KEPT_ITEMS or key in self.whole):
            return [self.string(f"item {i} of {key}") for i in range(count)]
        if item == STRING:
            self.pass_strings(count, key)
            return ArrayCount(item, count)
        if count > KEPT_ITEMS and key not in self.whole:  # passed over, not read
            self.f.seek(count * smallest, 1)
            return ArrayCount(item, count)
        raw = self.take(count * smallest, f"the items of {key}")
        return list(struct.unpack(f"<{count}{SCALARS[item][0][1]}", raw))


def read_header(path: str | Path, whole: frozenset[str] = frozenset()) -> Header:
    """The header of the GGUF file at `path`, every length and offset checked against the file (ArrayError); the
    metadata arrays named in `whole` (a vocabulary's) kept whatever their length."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    path = Path(path)
    if not path.exists():
        raise SpecError(f"{path}: no such GGUF file")
    if not path.is_file():
        raise ArrayError(f"{path}: not a regular file (a GGUF file is one)")
    try:
        f = path.open("rb")
    except OSError as e:
        raise ArrayError(f"{path}: cannot be read ({e.strerror})") from None
    size = path.stat().st_size
    with f:
        r = _Reader(f, size, path, whole)
        if r.take(4, "the magic number") != MAGIC:
            raise r.fail("it does not start with GGUF")
        version = r.scalar(4, "the version")
        if version not in VERSIONS:
            raise r.fail(f"version {version}; tfm reads GGUF versions 2 and 3 (little-endian)")
        n_tensors, n_kv = r.scalar(10, "the tensor count"), r.scalar(10, "the metadata count")
        if n_kv * 13 > r.left or n_tensors * 25 > r.left:  # the smallest entry of each
            raise r.fail(f"{n_kv:,} metadata entries and {n_tensors:,} tensors cannot fit in {size:,} bytes")
        metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = r.string("a metadata key")
            if key in metadata:  # (the gguf package refuses it: which value is meant?)
                raise r.fail(f"metadata key {key} appears twice")
            kind = r.scalar(4, f"the type of {key}")
            if key == "general.alignment" and kind != UINT32:  # (the gguf package reads it as UINT32 alone)
                raise r.fail(f"general.alignment has value type {TYPE_NAMES.get(kind, kind)}, expected UINT32")
            metadata[key] = r.value(kind, key)
        infos = []
        for _ in range(n_tensors):
            name = r.string("a tensor name")
            n_dims = r.scalar(4, f"the dimensions of {name}")
            if not 1 <= n_dims <= MAX_DIMS:
                raise r.fail(f"tensor {name}: {n_dims} dimensions (1 to {MAX_DIMS})")
            dims = tuple(r.scalar(10, f"a dimension of {name}") for _ in range(n_dims))
            kind = r.scalar(4, f"the type of {name}")
            offset = r.scalar(10, f"the offset of {name}")
            if kind not in GGMLQuantizationType._value2member_map_:
                raise r.fail(f"tensor {name}: unknown type {kind}")
            block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
            if min(dims) < 1 or dims[0] % block:
                raise r.fail(
                    f"tensor {name}: dims {list(dims)} (each at least 1, the first a multiple of {block} for "
                    f"{GGMLQuantizationType(kind).name})"
                )
            elements = 1
            for n in dims:
                elements *= n
            infos.append(TensorInfo(name, dims, kind, offset, elements // block * type_size))
        alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if not isinstance(alignment, int) or alignment < 1 or alignment & (alignment - 1):
            raise r.fail(f"general.alignment {alignment!r} is not a power of two")
        data_offset = -(-f.tell() // alignment) * alignment
    _check_table(r, infos, data_offset, alignment)
    tensors = {t.name: t for t in infos}
    if len(tensors) != len(infos):
        raise r.fail("two tensors have the same name")
    return Header(path, version, metadata, tensors, data_offset, size)


def _check_table(r: _Reader, infos: list[TensorInfo], data_offset: int, alignment: int) -> None:
    """Each tensor's data inside the file, aligned, and over no other's."""
    end = r.size - data_offset
    previous: TensorInfo | None = None
    for t in sorted(infos, key=lambda t: t.offset):
        if t.offset % alignment:
            raise r.fail(f"tensor {t.name}: offset {t.offset:,} is not a multiple of the alignment {alignment}")
        if t.offset + t.nbytes > end:
            raise r.fail(
                f"tensor {t.name}: {t.nbytes:,} bytes at offset {t.offset:,} run past the end of the data "
                f"({end:,} bytes)"
            )
        if previous is not None and previous.offset + previous.nbytes > t.offset:
            raise r.fail(f"tensors {previous.name} and {t.name} overlap")
        previous = t


__all__ = ["ArrayCount", "Header", "TensorInfo", "read_header"]
