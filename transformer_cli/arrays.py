"""Reading arrays safely and writing files atomically (whole or not at all)."""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, NamedTuple

import numpy as np

from .errors import ArrayError, OutputError

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"


def open_npy(path: Path) -> np.ndarray:
    """Load a .npy file without pickle; every failure becomes an ArrayError naming the file."""
    _check_readable(path, NPY_MAGIC, ".npy")
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc).lower():
            raise ArrayError(f"{path}: holds pickled or object data, which tfm never loads") from None
        raise ArrayError(f"{path}: not a valid .npy file ({exc})") from None
    except (OSError, EOFError) as exc:
        raise ArrayError(f"{path}: not a readable .npy file ({exc})") from None
    return array


def open_npz(path: Path) -> dict[str, np.ndarray]:
    """Load every array of an .npz archive without pickle."""
    _check_readable(path, ZIP_MAGIC, ".npz")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except ValueError as exc:
        if "pickle" in str(exc).lower():
            raise ArrayError(f"{path}: holds pickled or object arrays, which tfm never loads") from None
        raise ArrayError(f"{path}: not a valid .npz file ({exc})") from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ArrayError(f"{path}: not a readable .npz file ({exc})") from None


def _check_readable(path: Path, magic: bytes, kind: str) -> None:
    """The path is a readable file that starts like a `kind` file (so NumPy never guesses at pickle)."""
    if not path.exists():
        raise ArrayError(f"{path}: no such file")
    if path.is_dir():
        raise ArrayError(f"{path}: is a directory, expected a {kind} file")
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(magic))
    except OSError as exc:
        raise ArrayError(f"{path}: cannot read: {exc.strerror}") from None
    if head != magic:
        other = {NPY_MAGIC[:4]: "a single .npy array", ZIP_MAGIC: "an .npz archive"}.get(head[:4])
        if other:
            raise ArrayError(f"{path}: is {other}, expected a {kind} file")
        raise ArrayError(f"{path}: not a valid {kind} file (it does not start with the {kind} header)")


class Header(NamedTuple):
    """What a .npy header says about the array behind it, read without loading the data."""

    shape: tuple[int, ...]
    dtype: np.dtype


def _read_header(handle: IO[bytes], where: str) -> Header:
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    try:
        version = np.lib.format.read_magic(handle)
        if version not in readers:
            raise ValueError(f"format version {version} is not supported")
        shape, _, dtype = readers[version](handle)  # bounded: NumPy refuses headers over 10,000 bytes
    except (ValueError, OSError, EOFError, SyntaxError) as exc:
        raise ArrayError(f"{where}: not a valid .npy header ({exc})") from None
    if dtype.hasobject:
        raise ArrayError(f"{where}: holds pickled or object data, which tfm never loads")
    return Header(tuple(shape), dtype)


def peek_npy(path: Path) -> Header:
    """The shape and dtype of a .npy file, from its header alone."""
    _check_readable(path, NPY_MAGIC, ".npy")
    with open(path, "rb") as handle:
        return _read_header(handle, str(path))


def peek_npz(path: Path) -> dict[str, Header]:
    """The names, shapes and dtypes in an .npz archive, from the member headers alone."""
    _check_readable(path, ZIP_MAGIC, ".npz")
    try:
        with zipfile.ZipFile(path) as archive:
            headers = {}
            for member in archive.namelist():
                name = member.removesuffix(".npy")
                with archive.open(member) as handle:
                    headers[name] = _read_header(handle, f"{path}: array '{name}'")
            return headers
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ArrayError(f"{path}: not a readable .npz file ({exc})") from None


def first_nonfinite(array: np.ndarray) -> tuple[int, ...] | None:
    """Index of the first NaN or inf in `array`, or None if all are finite."""
    bad = ~np.isfinite(array)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), array.shape))


def check_output_path(out: Path, reads: list[Path], force: bool) -> None:
    """Refuse an output that would overwrite an input being read, or an existing file without --force."""
    for src in reads:
        if src.exists() and out.exists() and out.resolve() == src.resolve():
            raise OutputError(f"{out}: is also an input of this command; choose another output path")
    if out.is_dir():
        raise OutputError(f"{out}: is a directory, expected a file path")
    if out.exists() and not force:
        raise OutputError(f"{out}: already exists; pass --force to overwrite it")
    if not out.parent.is_dir():
        raise OutputError(f"{out}: folder {out.parent} does not exist")


def write_atomic(out: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write through a temp file in the same folder, fsync, then rename: the file appears whole or not at all."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    except OSError as exc:
        raise OutputError(f"{out}: cannot write: {exc.strerror}") from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; the output gets the usual permissions
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, out)
    except OSError as exc:
        raise OutputError(f"{out}: cannot write: {exc.strerror}") from None
    finally:  # also on KeyboardInterrupt: no temp file left behind
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save_npy(out: Path, array: np.ndarray) -> None:
    """Save one array as .npy, atomically."""
    write_atomic(out, lambda handle: np.save(handle, array, allow_pickle=False))


def save_npz(out: Path, arrays: dict[str, np.ndarray]) -> None:
    """Save named arrays as an uncompressed .npz, atomically."""
    write_atomic(out, lambda handle: np.savez(handle, **arrays))
