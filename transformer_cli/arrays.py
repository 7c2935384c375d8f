"""Reading arrays safely and writing files atomically (whole or not at all)."""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

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
