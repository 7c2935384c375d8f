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


def open_npy(path: Path) -> np.ndarray:
    """Load a .npy file without pickle; every failure becomes an ArrayError naming the file."""
    _check_readable(path)
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc).lower():
            raise ArrayError(f"{path}: holds pickled or object data, which tfm never loads") from None
        raise ArrayError(f"{path}: not a valid .npy file ({exc})") from None
    except (OSError, EOFError) as exc:
        raise ArrayError(f"{path}: not a readable .npy file ({exc})") from None
    if not isinstance(array, np.ndarray):
        raise ArrayError(f"{path}: is an .npz archive, expected a single .npy array")
    return array


def open_npz(path: Path) -> dict[str, np.ndarray]:
    """Load every array of an .npz archive without pickle."""
    _check_readable(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise ArrayError(f"{path}: is a single array, expected an .npz archive of named arrays")
            return {name: archive[name] for name in archive.files}
    except ValueError as exc:
        if "pickle" in str(exc).lower():
            raise ArrayError(f"{path}: holds pickled or object arrays, which tfm never loads") from None
        raise ArrayError(f"{path}: not a valid .npz file ({exc})") from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ArrayError(f"{path}: not a readable .npz file ({exc})") from None


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise ArrayError(f"{path}: no such file")
    if path.is_dir():
        raise ArrayError(f"{path}: is a directory, expected a file")


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


def save_npy(out: Path, array: np.ndarray) -> None:
    """Save one array as .npy, atomically."""
    write_atomic(out, lambda handle: np.save(handle, array, allow_pickle=False))


def save_npz(out: Path, arrays: dict[str, np.ndarray]) -> None:
    """Save named arrays as an uncompressed .npz, atomically."""
    write_atomic(out, lambda handle: np.savez(handle, **arrays))
