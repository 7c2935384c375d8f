"""What several families read alike from a GGUF file's `{arch}.*` keys."""

from __future__ import annotations

from typing import Any

from .keys import Keys


def partial_rotary(c: Keys, m: int) -> dict[str, Any]:
    """rope_fraction where rope.dimension_count turns fewer than a head's m dims (a partial rotary), else none."""
    rotated = c.count("rope.dimension_count", m)
    return {} if rotated == m else {"rope_fraction": rotated / m}


__all__ = ["partial_rotary"]
