"""What several families read alike from a GGUF file's `{arch}.*` keys."""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from .keys import Keys


def partial_rotary(c: Keys, m: int) -> dict[str, Any]:
    """rope_fraction where rope.dimension_count turns fewer than a head's m dims (a partial rotary), else none."""
    rotated = c.count("rope.dimension_count", m)
    return {} if rotated == m else {"rope_fraction": rotated / m}


def rows(header: Any, name: str, what: str, *elsewhere: str) -> int:
    """The rows of tensor `name`, the last place the file says `what` (after the keys `elsewhere`): a SpecError
    naming them all if it is not there."""
    if name not in header.tensors:
        lacking = ", no ".join((*elsewhere, f"tensor {name}"))
        raise SpecError(f"{header.path}: {what} is not in the file: no {lacking}")
    return header.tensors[name].shape[0]


def vocabulary(c: Keys, header: Any) -> int:
    """V: {arch}.vocab_size, else the tokenizer's token list (a long one kept as its length: gguf/header.py's
    ArrayCount), else the embedding's rows."""
    if c.has("vocab_size"):
        return c.count("vocab_size")
    tokens = header.metadata.get("tokenizer.ggml.tokens")
    if isinstance(tokens, list):
        return len(tokens)
    if isinstance(getattr(tokens, "count", None), int):
        return tokens.count
    return rows(header, "token_embd.weight", "the vocabulary size", f"{c.prefix}vocab_size", "tokenizer.ggml.tokens")


__all__ = ["partial_rotary", "rows", "vocabulary"]
