"""Reading arrays safely and writing files atomically (whole or not at all).

Arrays are read by tfm itself, never by np.load: the header is checked first, then exactly the bytes it
declares are read into an array of that size, and only if the file (or the .npz member) holds them. An .npz
archive may hold only NAME.npy members, each once, so no name can mean two members (np.load would read
`X` for the name X even beside an `X.npy` whose header was the one checked).
"""

from __future__ import annotations

import errno
import math
import os
import secrets
import stat
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, BinaryIO, NamedTuple

import numpy as np

from ..errors import ArrayError, OutputError, clipped
from .files import open_regular, what_is

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"
READ_CHUNK = 1 << 20  # bytes read at a time: a zip member is never held twice over in memory
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, zlib.error, NotImplementedError,
              RuntimeError)  # fmt: skip


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
            got = handle.readinto(into[done : done + READ_CHUNK])
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
    """Index of the first NaN or inf in `array`, or None if all are finite."""
    bad = ~np.isfinite(array)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), array.shape))


# -- writing -----------------------------------------------------------------------------------------


def _existing(out: Path) -> os.stat_result | None:
    """What is at `out` now: None, or a file tfm may replace (a regular file, a link to one, a dangling link).

    Anything else (a directory, a FIFO, a device, a socket, or a link to one) is refused, whatever the flags.
    """
    try:
        found = os.lstat(out)
        target = os.stat(out) if stat.S_ISLNK(found.st_mode) and os.path.exists(out) else found
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OutputError(f"{out}: cannot write: {_reason(exc)}") from None
    if stat.S_ISLNK(target.st_mode):
        return target  # a dangling link: replaced like a file, with --force
    link = "a symbolic link to " if target is not found else ""
    if stat.S_ISDIR(target.st_mode) and not link:
        raise OutputError(f"{out}: is a directory, expected a file path")
    if not stat.S_ISREG(target.st_mode):
        raise OutputError(f"{out}: is {link}{what_is(target.st_mode)}, expected a regular file (tfm never replaces it)")
    return target


def check_output_path(out: Path, reads: list[Path], force: bool) -> None:
    """Refuse an output that is an input, is not a regular file, or exists without --force (a link counts)."""
    for src in reads:
        if src.exists() and out.exists() and out.resolve() == src.resolve():
            raise OutputError(f"{out}: is also an input of this command; choose another output path")
    if _existing(out) is not None and not force:
        raise OutputError(f"{out}: already exists; pass --force to overwrite it")
    if not out.parent.is_dir():
        raise OutputError(f"{out}: folder {out.parent} does not exist")


def write_atomic(out: Path, write: Callable[[IO[bytes]], None], overwrite: bool = True) -> None:
    """Write through a temp file in the same folder, fsync, then rename: the file appears whole or not at all.

    With `overwrite` False the temp file is linked to `out`, which fails if anything appeared there meanwhile:
    of two racing writers exactly one wins. A replaced file keeps its permissions; a symbolic link at `out`
    is itself replaced, its target never touched.
    """
    existing = _existing(out)
    if existing is not None and not overwrite:
        raise OutputError(f"{out}: already exists; pass --force to overwrite it")
    # Named before it exists (64 random bits), so that an interrupt at any moment after it is created finds it
    # below; mkstemp returns the name only after creating the file.
    tmp = out.parent / f".{out.name}.{secrets.token_hex(8)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)  # less umask
        if existing is not None and stat.S_ISREG(existing.st_mode):
            os.chmod(tmp, stat.S_IMODE(existing.st_mode))
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        _publish(tmp, out, overwrite)
    except OSError as exc:
        raise OutputError(f"{out}: cannot write: {_reason(exc)}") from None
    finally:  # also on KeyboardInterrupt and SIGTERM: no temp file left behind
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _publish(tmp: Path, out: Path, overwrite: bool) -> None:
    if overwrite:
        _existing(out)  # again at the last moment: a device swapped in since the check is still refused
        os.replace(tmp, out)
        return
    try:
        os.link(tmp, out)  # fails if anything exists at `out`, even a dangling link
    except FileExistsError:
        raise OutputError(f"{out}: already exists (written meanwhile); pass --force to overwrite it") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
            raise
        if _existing(out) is not None:  # a file system without hard links: check, then rename
            raise OutputError(f"{out}: already exists (written meanwhile); pass --force to overwrite it") from None
        os.replace(tmp, out)


def _reason(exc: OSError) -> str:
    """The OS's words for a failed write ('No space left on device'), whatever form the error came in."""
    return exc.strerror or (os.strerror(exc.errno) if exc.errno else clipped(exc) or type(exc).__name__)


class _Stream:
    """Only `write`: NumPy then writes through Python, whose errors keep errno (its C path loses it)."""

    def __init__(self, handle: IO[bytes]):
        self.write = handle.write


def save_npy(out: Path, array: np.ndarray, overwrite: bool = True) -> None:
    """Save one array as .npy, atomically (see `write_atomic` for `overwrite`)."""
    write_atomic(out, lambda handle: np.save(_Stream(handle), array, allow_pickle=False), overwrite)  # type: ignore[arg-type]


def save_npz(out: Path, arrays: dict[str, np.ndarray], overwrite: bool = True) -> None:
    """Save named arrays as an uncompressed .npz, atomically."""
    write_atomic(out, lambda handle: np.savez(handle, **arrays), overwrite)
