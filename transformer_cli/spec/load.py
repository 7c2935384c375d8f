"""A spec file read: a regular file within a byte limit, UTF-8, YAML 1.2 (yaml12.py), then validated."""

from __future__ import annotations

from pathlib import Path

from ..errors import SpecError
from ..files import read_bounded
from .choices import LEARNED
from .definition import DEFAULT_SPEC, Spec
from .validate import spec_from_mapping
from .yaml12 import read_yaml

MAX_SPEC_BYTES = 1 << 20  # a spec is a dozen lines; anything over 1 MiB is not one


def _refuse_other_formats(path: Path, head: bytes) -> None:
    """A weights or array file given where a spec was expected (by its extension or its first bytes)."""
    safetensors = len(head) > 8 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") < 1 << 32
    if path.suffix.lower() in (".safetensors", ".npz") or safetensors or head.startswith(b"PK\x03\x04"):
        raise SpecError(f"{path}: is a weights file, expected a YAML spec (pass it with -w)")
    if path.suffix.lower() == ".npy" or head.startswith(b"\x93NUMPY"):
        raise SpecError(f"{path}: is a .npy array, expected a YAML spec (pass an input with -i)")


def _read_text(path: Path) -> str:
    if not path.exists() and not path.is_symlink():
        raise SpecError(f"{path}: no such spec file")
    raw = read_bounded(path, MAX_SPEC_BYTES, "a YAML spec file", SpecError)  # a regular file, never a FIFO
    _refuse_other_formats(path, raw[:16])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: byte {exc.start} is not UTF-8; expected a UTF-8 text file") from None


def load_spec(path: str | Path | None) -> Spec:
    """Load and validate a YAML spec file (read as YAML 1.2, see yaml12.py); `None` gives the built-in default."""
    if path is None:
        return DEFAULT_SPEC
    path = Path(path)
    return spec_from_mapping(read_yaml(_read_text(path), str(path)), str(path))


def check_length(spec: Spec, n: int, where: str) -> None:
    """Refuse a sequence longer than the spec's learned positions cover (every command that takes n asks here)."""
    if spec.positional in LEARNED and spec.max_len is not None and n > spec.max_len:
        raise SpecError(
            f"{where}: n = {n}, expected at most max_len = {spec.max_len} (learned positions of {spec.label})"
        )


__all__ = ["check_length", "load_spec"]
