"""Files a command reads: regular files only, checked before they are opened, read within a byte limit.

A FIFO blocks the reader forever, a device like /dev/zero never ends (and its size is 0), and opening some
devices has side effects; so the path is stat-ed first, opened non-blocking, and checked again on the open
descriptor (the path may have been swapped in between). Reads stop at a limit counted in bytes actually read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from .errors import ArrayError, TfmError
from .text import shown

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISREG, "a regular file"),
)
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


def what_is(mode: int) -> str:
    """What a file's st_mode says it is: 'a FIFO (named pipe)', 'a character device', 'a regular file', ..."""
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def regular_file(path: str | Path, kind: str, error: type[TfmError] = ArrayError) -> Path:
    """`path`, if it is a regular file or a link to one; else `error` naming what it is and `kind`, the expected.

    Only stat is called: the file is never opened.
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            raise error(f"{path}: is a symbolic link to {shown(os.readlink(path))}, which does not exist") from None
        raise error(f"{path}: no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error(f"{path}: is a symbolic link in a loop, expected {kind}") from None
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL byte in the path
        raise error(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if not stat.S_ISREG(mode):
        raise error(f"{path}: is {what_is(mode)}, expected {kind}")
    return path


def open_regular(path: str | Path, kind: str, error: type[TfmError] = ArrayError) -> BinaryIO:
    """Open a regular file for reading (see `regular_file`), never blocking on whatever the path has become."""
    path = regular_file(path, kind, error)
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # swapped since the stat above
        os.close(fd)
        raise error(f"{path}: is {what_is(mode)}, expected {kind}")
    return os.fdopen(fd, "rb")


def read_bounded(path: str | Path, limit: int, kind: str, error: type[TfmError] = ArrayError) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, counted as read (/proc files report size 0)."""
    with open_regular(path, kind, error) as handle:
        try:
            data = handle.read(limit + 1)
            size = os.fstat(handle.fileno()).st_size
        except OSError as exc:
            raise error(f"{path}: cannot read: {exc.strerror}") from None
    if len(data) > limit:
        told = f"{size} bytes" if size > limit else f"more than {limit} bytes"
        raise error(f"{path}: {told}, expected {kind} of at most {limit} bytes")
    return data


def read_ahead(path: str | Path, ranges: list[tuple[int, int]]) -> None:
    """Ask the kernel to read these (offset, length) byte ranges of a file into the page cache now, without waiting
    for them (posix_fadvise WILLNEED; where the system has no such call, nothing): what a pass reads next is then
    read from disk while it computes."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None or not ranges:
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # (the read itself says what is wrong)
    try:
        for offset, length in ranges:
            advise(fd, offset, length, os.POSIX_FADV_WILLNEED)
    finally:
        os.close(fd)
