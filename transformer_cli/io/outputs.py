"""Where tfm writes: outputs checked before any work, and files and folders written whole or not at all.

Nothing a user owns is lost. An output is never an input, nor a folder holding one, nor inside one (links
resolved); never a directory, FIFO, device or socket where a file goes, nor a file or a device where a folder
goes; and it exists already only with --force. A file is written to a temporary file beside it, synced, and
renamed into place. A new folder is built as a temporary folder beside it and renamed into place. An existing
folder (with --force) keeps every file tfm does not write: tfm's files are written into a temporary folder
inside it, then moved into place, and the stale files of the checkpoint they replace (`stale`) removed, under
a lock (two writers take turns) with Ctrl-C and SIGTERM held back until those few renames are done. Files copied
beside the checkpoint (`optional`: a tokenizer, a README) are written only where the folder has none: the
folder's own are the user's.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import signal
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..errors import OutputError, clipped
from ..files import what_is

Writer = Callable[[IO[bytes]], None]
TEMP_STEM = 100  # characters of the output's name kept in a temporary name (255 is the usual file-name limit)


def temp_name(name: str) -> str:
    """A hidden name beside `name` that no other writer picks (64 random bits), short enough for any output."""
    return f".{name[:TEMP_STEM]}.{secrets.token_hex(8)}.tmp"


def reason(exc: OSError) -> str:
    """The OS's words for a failed write ('No space left on device'), whatever form the error came in."""
    return exc.strerror or (os.strerror(exc.errno) if exc.errno else clipped(exc) or type(exc).__name__)


# -- what may be written where ------------------------------------------------------------------------------


def inputs(paths: Iterable[Path | None]) -> list[Path]:
    """The files a command reads: each file, and for a folder (a Hugging Face model) every file in it; so an
    output may go beside a model's files (`tfm run . -o logits.npy`), but never over them."""
    out: list[Path] = []
    for path in paths:
        if path is None:
            continue
        if not Path(path).is_dir():
            out.append(Path(path))
            continue
        try:
            out += [Path(e.path) for e in os.scandir(path) if not e.is_dir()]
        except OSError:
            pass  # an unreadable folder is reported by its reader
    return out


def refuse_inputs(out: Path, reads: Iterable[Path | None]) -> None:
    """Refuse an output that is an input, holds one (a folder) or lies inside one, links resolved."""
    target = Path(os.path.realpath(out))
    for src in inputs(reads):
        if not os.path.lexists(src):
            continue
        source = Path(os.path.realpath(src))
        if source == target:
            also = f" ({src})" if Path(src) != Path(out) else ""
            raise OutputError(f"{out}: is also an input of this command{also}; choose another output path")
        if source.is_relative_to(target):
            raise OutputError(f"{out}: holds {src}, an input of this command; choose another output path")
        if target.is_relative_to(source):
            raise OutputError(f"{out}: lies inside {src}, an input of this command; choose another output path")


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
        raise OutputError(f"{out}: cannot write: {reason(exc)}") from None
    if stat.S_ISLNK(target.st_mode):
        return target  # a dangling link: replaced like a file, with --force
    link = "a symbolic link to " if target is not found else ""
    if stat.S_ISDIR(target.st_mode) and not link:
        raise OutputError(f"{out}: is a directory, expected a file path")
    if not stat.S_ISREG(target.st_mode):
        raise OutputError(f"{out}: is {link}{what_is(target.st_mode)}, expected a regular file (tfm never replaces it)")
    return target


def _existing_folder(out: Path) -> bool:
    """Whether `out` is a folder already (a link to one counts); anything else there is refused, whatever the flags."""
    try:
        found = os.lstat(out)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise OutputError(f"{out}: cannot write: {reason(exc)}") from None
    try:
        mode = os.stat(out).st_mode
    except OSError:
        raise OutputError(f"{out}: is a symbolic link to nothing (or a loop), expected a folder") from None
    link = "a symbolic link to " if stat.S_ISLNK(found.st_mode) else ""
    if stat.S_ISDIR(mode):
        return True
    raise OutputError(f"{out}: is {link}{what_is(mode)}, expected a folder (tfm never replaces it by one)")


def _parent(out: Path) -> None:
    if not out.parent.is_dir():
        raise OutputError(f"{out}: folder {out.parent} does not exist")


def check_output_path(out: Path, reads: Iterable[Path | None], force: bool) -> None:
    """Before any work: refuse a file output that is an input, is not a regular file, or exists without --force
    (a link counts)."""
    refuse_inputs(out, reads)
    if _existing(out) is not None and not force:
        raise OutputError(f"{out}: already exists; pass --force to overwrite it")
    _parent(out)


def check_folder_output(out: Path, reads: Iterable[Path | None], force: bool) -> None:
    """Before any work: refuse a folder output that is or holds an input, is not a folder, or exists without
    --force."""
    refuse_inputs(out, reads)
    if _existing_folder(out) and not force:
        raise OutputError(f"{out}: already exists; pass --force to replace the files tfm writes in it")
    _parent(out)


# -- writing a file ---------------------------------------------------------------------------------------


def _write_synced(path: Path, write: Writer, mode_of: os.stat_result | None) -> None:
    """Create `path` (which must not exist), write it, and sync it to disk; keep the mode of the file it replaces."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)  # less umask
    if mode_of is not None and stat.S_ISREG(mode_of.st_mode):
        os.chmod(path, stat.S_IMODE(mode_of.st_mode))
    with os.fdopen(fd, "wb") as handle:
        write(handle)
        handle.flush()
        os.fsync(handle.fileno())


def write_atomic(out: Path, write: Writer, overwrite: bool = True) -> None:
    """Write through a temp file in the same folder, fsync, then rename: the file appears whole or not at all.

    With `overwrite` False the temp file is linked to `out`, which fails if anything appeared there meanwhile:
    of two racing writers exactly one wins. A replaced file keeps its permissions; a symbolic link at `out`
    is itself replaced, its target never touched.
    """
    existing = _existing(out)
    if existing is not None and not overwrite:
        raise OutputError(f"{out}: already exists; pass --force to overwrite it")
    # Named before it exists, so that an interrupt at any moment after it is created finds it below.
    tmp = out.parent / temp_name(out.name)
    try:
        _write_synced(tmp, write, existing)
        _publish(tmp, out, overwrite)
    except OSError as exc:
        raise OutputError(f"{out}: cannot write: {reason(exc)}") from None
    finally:  # also on KeyboardInterrupt and SIGTERM: no temp file left behind
        if os.path.lexists(tmp):
            os.unlink(tmp)


def publish(tmp: Path, out: Path, overwrite: bool) -> None:
    """Move a finished temp file (named by temp_name, in `out`'s folder) to `out`, as write_atomic does."""
    try:
        _publish(tmp, out, overwrite)
    except OSError as exc:
        raise OutputError(f"{out}: cannot write: {reason(exc)}") from None


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


# -- writing a folder -------------------------------------------------------------------------------------


def write_folder(
    folder: Path,
    files: list[tuple[str, Writer]],
    stale: Callable[[str], bool],
    overwrite: bool = False,
    optional: Iterable[str] = (),
) -> list[str]:
    """Write the named files as the folder `folder`: all of them or none (see the module's docstring). Returns
    the `optional` files not written because the folder has its own (an entry of that name), which it keeps.

    `stale(name)` says which other files in an existing folder belong to what tfm replaces (an earlier
    checkpoint's shards) and are removed with it; every other file, and every folder, is left as it was.
    """
    existing = _existing_folder(folder)
    if existing and not overwrite:
        raise OutputError(f"{folder}: already exists; pass --force to replace the files tfm writes in it")
    copies = set(optional)
    kept = [name for name, _ in files if existing and name in copies and os.path.lexists(folder / name)]
    files = [(name, write) for name, write in files if name not in kept]
    names = [name for name, _ in files]
    if existing:
        _replaceable(folder, names)
    tmp = (folder if existing else folder.parent) / temp_name(folder.name)
    current = ""
    try:
        tmp.mkdir()
        for current, write in files:
            _write_synced(tmp / current, write, _existing(folder / current) if existing else None)
        current = ""
        if not existing and _rename_new(tmp, folder, overwrite):
            return kept
        return kept + _move_into(tmp, folder, names, stale, copies)
    except OSError as exc:
        which = f" {current}" if current else ""
        raise OutputError(f"{folder}: cannot write{which}: {reason(exc)}") from None
    finally:  # on every path, Ctrl-C and SIGTERM included
        if os.path.lexists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def _replaceable(folder: Path, names: list[str]) -> None:
    """Each file tfm writes in an existing folder may replace only a file (or a link) of that name."""
    for name in names:
        _existing(folder / name)


def _rename_new(tmp: Path, folder: Path, overwrite: bool) -> bool:
    """Rename the finished folder into place; False if a folder appeared there meanwhile (replaced in place)."""
    try:
        os.rename(tmp, folder)
        return True
    except OSError as exc:
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
            raise
    if not overwrite:
        raise OutputError(f"{folder}: already exists (written meanwhile); pass --force to replace it")
    _existing_folder(folder)
    return False


def _move_into(
    tmp: Path, folder: Path, names: list[str], stale: Callable[[str], bool], optional: set[str]
) -> list[str]:
    """Move the written files into `folder`, replacing those of their names but the optional ones it has (which
    are returned), then remove the stale ones."""
    with _locked(folder), held_signals():
        kept = [name for name in names if name in optional and os.path.lexists(folder / name)]  # appeared meanwhile
        names = [name for name in names if name not in kept]
        _replaceable(folder, names)  # again at the last moment
        for name in names:
            os.replace(tmp / name, folder / name)
        for entry in os.scandir(folder):
            if entry.name not in names and stale(entry.name) and not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)
    return kept


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on the folder while tfm changes it (POSIX advisory locks; elsewhere none)."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextmanager
def held_signals() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block ends, then act as they would have: for steps that must not stop
    half-way. Only the main thread handles signals; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    handlers = {sig: handler for sig, handler in handlers.items() if handler is not None}
    for sig in handlers:
        signal.signal(sig, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if caught:
            signal.raise_signal(caught[0])  # now handled as it would have been
