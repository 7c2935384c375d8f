"""Reading arrays safely, and writing .npy and .npz files atomically (outputs.py: whole or not at all).

Arrays are read by tfm itself, never by np.load: the header is checked first, then exactly the bytes it
declares are read into an array of that size, and only if the file (or the .npz member) holds them. An .npz
archive may hold only NAME.npy members, each once, so no name can mean two members (np.load would read
`X` for the name X even beside an `X.npy` whose header was the one checked).
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, BinaryIO, NamedTuple

import numpy as np

from ..errors import ArrayError, NumericalError, clipped
from ..files import open_regular
from .outputs import write_atomic

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"
READ_CHUNK = 1 << 20  # bytes read at a time: a zip member is never held twice over in memory
ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    OSError,
    EOFError,
    zlib.error,
    NotImplementedError,
    RuntimeError,
)


class Header(NamedTuple):
    """What a .npy header says about the array behind it, read without loading the data."""

    shape: tuple[int, ...]
    dtype: np.dtype


def _open(path: Path, magic: bytes, kind: str) -> BinaryIO:
    """A regular file that starts like a `kind` file (so nothing ever guesses at pickle), opened at byte 0."""
    handle = open_regular(path, f"a {kind} file")
    head = handle.read(len(magic))
    handle.seek(0)
    if head != magic:
        handle.close()
        other = {NPY_MAGIC[:4]: "a single .npy array", ZIP_MAGIC: "an .npz archive"}.get(head[:4])
        if other:
            raise ArrayError(f"{path}: is {other}, expected a {kind} file")
        raise ArrayError(f"{path}: not a valid {kind} file (it does not start with the {kind} header)")
    return handle


def _read_header(handle: IO[bytes], where: str) -> tuple[Header, bool]:
    """The header and whether the data is in Fortran order."""
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    try:
        version = np.lib.format.read_magic(handle)
        if version not in readers:
            raise ValueError(f"format version {version} is not supported")
        shape, fortran, dtype = readers[version](handle)  # bounded: NumPy refuses headers over 10,000 bytes
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as exc:
        raise ArrayError(f"{where}: not a valid .npy header ({clipped(exc)})") from None
    if dtype.hasobject:
        raise ArrayError(f"{where}: holds pickled or object data, which tfm never loads")
    return Header(tuple(shape), dtype), fortran


def _read_array(handle: IO[bytes], size: int, where: str) -> np.ndarray:
    """The array behind the header at `handle`, from a file or member of `size` bytes; nothing over that is read."""
    header, fortran = _read_header(handle, where)
    count = math.prod(header.shape)
    nbytes = count * header.dtype.itemsize
    held = size - handle.tell()
    if nbytes > held:  # checked before allocating: a header may claim any size
        raise ArrayError(f"{where}: not a valid .npy file (its header declares {nbytes} bytes of data; {held} follow)")
    flat = np.empty(count, header.dtype)
    if nbytes:
        into, done = flat.view(np.uint8), 0
        while done < nbytes:
            got = handle.readinto(into[done : done + READ_CHUNK])  # type: ignore[attr-defined]  # a binary file
            if not got:
                raise ArrayError(f"{where}: not a valid .npy file (its data ends after {done} of {nbytes} bytes)")
            done += got
    return flat.reshape(header.shape[::-1]).T if fortran else flat.reshape(header.shape)


def open_npy(path: Path) -> np.ndarray:
    """Load a .npy file without pickle; every failure becomes an ArrayError naming the file."""
    with _open(path, NPY_MAGIC, ".npy") as handle:
        try:
            return _read_array(handle, os.fstat(handle.fileno()).st_size, str(path))
        except OSError as exc:
            raise ArrayError(f"{path}: cannot read: {exc.strerror}") from None


def peek_npy(path: Path) -> Header:
    """The shape and dtype of a .npy file, from its header alone."""
    with _open(path, NPY_MAGIC, ".npy") as handle:
        return _read_header(handle, str(path))[0]


def _members(archive: zipfile.ZipFile, path: Path) -> dict[str, zipfile.ZipInfo]:
    """The archive's members by array name; any member NumPy could read under a name other than its own is refused."""
    members: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        if not info.filename.endswith(".npy"):
            raise ArrayError(f"{path}: member '{clipped(info.filename)}' is not a .npy array, expected NAME.npy")
        name = info.filename.removesuffix(".npy")
        if name in members:
            raise ArrayError(f"{path}: member '{clipped(info.filename)}' appears twice, expected each name once")
        members[name] = info
    return members


def _each_member(path: Path, read: Callable[[IO[bytes], zipfile.ZipInfo, str], object]) -> dict:
    """{name: read(member, info, where)} over the members of an .npz archive."""
    with _open(path, ZIP_MAGIC, ".npz") as handle:
        try:
            with zipfile.ZipFile(handle) as archive:
                found = {}
                for name, info in _members(archive, path).items():
                    with archive.open(info) as member:
                        found[name] = read(member, info, f"{path}: array '{clipped(name)}'")
                return found
        except ZIP_ERRORS as exc:
            raise ArrayError(f"{path}: not a readable .npz file ({clipped(exc)})") from None


def peek_npz(path: Path) -> dict[str, Header]:
    """The names, shapes and dtypes in an .npz archive, from the member headers alone."""
    return _each_member(path, lambda member, info, where: _read_header(member, where)[0])


def open_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an .npz archive, each read only as far as its member's declared size."""
    return _each_member(path, lambda member, info, where: _read_array(member, info.file_size, where))


def first_nonfinite(array: np.ndarray) -> tuple[int, ...] | None:
    """Index of the first NaN or inf in `array`, or None if all are finite.

    A float array's sum says it at once, with no array of flags made: a NaN or an inf makes the sum NaN or inf
    (no addition turns them finite); only when the sum is not finite (or finite values overflowed it) are the
    entries looked at one by one. Half the time of `isfinite` on a checkpoint's tensors, which every read checks."""
    if array.dtype.kind == "f":
        wide = np.float32 if array.dtype.itemsize < 4 else None  # (float16 sums overflow at 65,504)
        with np.errstate(over="ignore", invalid="ignore"):  # (finite values may overflow it: looked at below)
            total = np.add.reduce(array, axis=None, dtype=wide)
        if np.isfinite(total):
            return None
    bad = ~np.isfinite(array)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), array.shape))


BFLOAT16 = np.dtype([("bfloat16", "<u2")])  # NumPy has no bfloat16: this marks a tensor written as BF16 bits


def bfloat16_bits(array: np.ndarray) -> np.ndarray:
    """Values rounded to bfloat16 (to nearest, ties to even) as their 16-bit patterns: the top half of a float32,
    so a value read from a BF16 checkpoint comes back bit for bit."""
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def cast_finite(array: np.ndarray, dtype: np.dtype, where: str) -> np.ndarray:
    """`array` as `dtype` (BFLOAT16: its bit patterns), refusing a finite value that the cast turns into inf
    (float16 ends at 65,504, bfloat16 at 3.39e+38)."""
    source = np.asarray(array)
    if np.dtype(dtype) == BFLOAT16:
        out = bfloat16_bits(source)
        grown = ((out & 0x7F80) == 0x7F80) & np.isfinite(source)
        name, largest_allowed = "bfloat16", 3.3895313892515355e38
    else:
        out = np.asarray(source, dtype)
        if out.dtype.kind != "f" or source.dtype.kind != "f":
            return out
        grown = np.isinf(out) & np.isfinite(source)
        name, largest_allowed = np.dtype(dtype).name, float(np.finfo(dtype).max)
    if grown.any():
        largest = float(np.max(np.abs(source[grown])))
        raise NumericalError(
            f"{where}: holds {largest:.6g}, beyond {name}'s largest value ({largest_allowed:,.6g}): it would be "
            "written as inf; nothing was written (choose a wider --dtype)"
        )
    return out


# -- writing (through outputs.write_atomic: whole or not at all) ------------------------------------------


class _Stream:
    """Only `write`: NumPy then writes through Python, whose errors keep errno (its C path loses it)."""

    def __init__(self, handle: IO[bytes]):
        self.write = handle.write


def save_npy(out: Path, array: np.ndarray, overwrite: bool = True) -> None:
    """Save one array as .npy, atomically (see `write_atomic` for `overwrite`)."""
    write_atomic(out, lambda handle: np.save(_Stream(handle), array, allow_pickle=False), overwrite)


def save_npz(out: Path, arrays: dict[str, np.ndarray], overwrite: bool = True) -> None:
    """Save named arrays as an uncompressed .npz, atomically."""
    write_atomic(out, lambda handle: np.savez(handle, **arrays), overwrite)  # type: ignore[arg-type]  # numpy's stub
