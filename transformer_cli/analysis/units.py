"""Sizes in words and back: bytes as '1.50 KiB', '512M' as bytes, huge counts as '1.23e+405'. No NumPy, no model:
a command that only prints sizes imports this alone (start-up)."""

from __future__ import annotations

import math
import re

from ..errors import OptionError, clipped

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str, option: str = "--max-memory") -> int:
    """'512M', '1.5G', '2GB', '1000000B' -> bytes (binary units); errors name `option`. A bare number is refused:
    `--memory 80` meant 80 GB, not 80 bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(i?B)?\s*", text, re.IGNORECASE)
    if not match:
        raise OptionError(f"{option}: got '{text}', expected a size such as 512M, 1.5G or 2GB")
    if not match.group(2) and not match.group(3):
        bare = text.strip()
        raise OptionError(
            f"{option}: got '{bare}', expected a size with its unit such as {bare}G or {bare}M (write "
            f"{bare}B for bytes)"
        )
    value = float(match.group(1)) * UNITS[match.group(2).upper()]
    if value <= 0:
        raise OptionError(f"{option}: got '{text}', expected a positive size")
    return int(value)


def size(value: str | int, option: str) -> int:
    """A size option given as text with its unit (parse_size) or, from Python, as a whole number of bytes."""
    if isinstance(value, str):
        return parse_size(value, option)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise OptionError(
            f"{option}: got {clipped(repr(value), 60)}, expected a positive size (bytes, or text "
            "with its unit such as 5G)"
        )
    return value


def scientific(x: int) -> str:
    """A non-negative integer of any size to 3 significant digits, '1.23e+405', in integer arithmetic."""
    if x < 1000:
        return str(x)
    e = int((x.bit_length() - 1) * math.log10(2))  # floor(log10 x), or one below it
    e += 10 ** (e + 1) <= x
    unit = 10 ** (e - 2)
    lead, rest = divmod(x, unit)
    lead += 2 * rest >= unit  # round half up
    if lead == 1000:
        lead, e = 100, e + 1
    return f"{lead // 100}.{lead % 100:02d}e+{e}"


def human(size: int | float) -> str:
    """Bytes in binary units, 3 significant digits: 1536 -> '1.50 KiB'; beyond 1024 PiB '1.2e+405 bytes'."""
    if isinstance(size, float) and not math.isfinite(size):
        return f"{size} bytes"
    if abs(size) >= 1 << 60:  # no machine holds this: a plain count, which never overflows a float
        sign = "-" if size < 0 else ""
        return f"{sign}{scientific(abs(int(size)))} bytes"
    size = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(size) < 1024 or unit == "PiB":
            break
        size /= 1024
    if unit == "B":
        return f"{size:.0f} B"
    return f"{size:.3g} {unit}" if abs(size) < 1000 else f"{size:,.0f} {unit}"
