"""Typed reads of a config.json's keys, with transformers' defaults, and errors that name the file and the key.

A key that is absent or JSON null takes the default given by the caller (the family's value in transformers),
except where transformers gives null a meaning of its own (`nullable`: Mistral's `sliding_window: null` is no
window, while an absent one is 4096).
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..errors import SpecError
from ..text import shown

REQUIRED = object()  # no default: the key must be in the file
_ABSENT = object()


def _shown(value: Any) -> str:
    """A value as JSON spells it (null, true, "big"), cut for a one-line message."""
    try:
        return shown(json.dumps(value, ensure_ascii=False))
    except ValueError:  # an integer of more digits than Python will print
        return "an integer of thousands of digits"


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value) and value > 0
    except OverflowError:  # an integer too large for a float
        return False


class Keys:
    """The keys of one JSON object of a config: the file's top level, or a nested one such as rope_parameters."""

    def __init__(self, data: dict[str, Any], source: str, prefix: str = "", notes: list[str] | None = None) -> None:
        self.data, self.source, self.prefix = data, source, prefix
        self.notes = [] if notes is None else notes  # what reading it says on stderr (shared with nested objects)

    def raw(self, key: str, *aliases: str) -> tuple[str, Any]:
        """(the key found, its value): the first of `key`, `aliases` present in the file, else (key, _ABSENT)."""
        for name in (key, *aliases):
            if name in self.data:
                return name, self.data[name]
        return key, _ABSENT

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def fail(self, key: str, value: Any, expected: str) -> SpecError:
        return SpecError(f"{self.source}: key '{self.prefix}{key}': got {_shown(value)}, expected {expected}")

    def ignored(self, key: str, why: str, unless: Any = _ABSENT) -> None:
        """A key set in the file that transformers stores and never uses: tfm follows it, and says so (unless its
        value is `unless`, what transformers does anyway)."""
        if self.has(key) and self.data[key] != unless:
            value = _shown(self.data[key])
            self.notes.append(f"{self.source}: key '{self.prefix}{key}': {value} is ignored, as transformers {why}")

    def refuse(self, key: str, value: Any, why: str) -> SpecError:
        """A valid setting that tfm cannot represent (or that transformers cannot build)."""
        return SpecError(f"{self.source}: key '{self.prefix}{key}': {_shown(value)} is not supported: {why}")

    def _get(self, key: str, aliases: tuple[str, ...], default: Any, ok, expected: str) -> Any:
        name, value = self.raw(key, *aliases)
        if value is _ABSENT or value is None:
            if default is REQUIRED:
                raise SpecError(f"{self.source}: key '{self.prefix}{key}': missing, expected {expected}")
            return default
        if not ok(value):
            raise self.fail(name, value, expected)
        return value

    def count(self, key: str, default: Any = REQUIRED, *aliases: str) -> Any:
        """A positive integer (a size or a number of heads, layers, experts)."""
        return self._get(key, aliases, default, lambda v: _integer(v) and v > 0, "a positive integer")

    def index(self, key: str, default: int) -> int:
        """An integer from 0 (a layer index)."""
        return self._get(key, (), default, lambda v: _integer(v) and v >= 0, "an integer from 0")

    def nullable_count(self, key: str, absent: int | None) -> int | None:
        """A positive integer, `absent` when the key is missing, None when the file says null."""
        return None if key in self.data and self.data[key] is None else self.count(key, absent)

    def nullable_number(self, key: str, absent: float | None) -> float | None:
        """A positive number, `absent` when the key is missing, None when the file says null (soft-capping off)."""
        return None if key in self.data and self.data[key] is None else self.number(key, absent)

    def number(self, key: str, default: Any = REQUIRED, *aliases: str) -> Any:
        value = self._get(key, aliases, default, _number, "a positive number")
        return value if value is None else float(value)

    def cap(self, key: str) -> float | None:
        """A soft cap: a positive number, or 0 (or null) for none."""
        value = self._get(key, (), 0.0, lambda v: _number(v) or (isinstance(v, (int, float)) and v == 0), "a cap >= 0")
        return float(value) or None

    def fraction(self, key: str, default: float | None, *aliases: str) -> float | None:
        value = self._get(key, aliases, default, lambda v: _number(v) and v <= 1, "a number in (0, 1]")
        return value if value is None else float(value)

    def numbers(self, key: str, length: int) -> tuple[float, ...]:
        """A list of `length` positive numbers (LongRoPE's factors, one per rotated pair)."""
        expected = f"a list of {length} positive numbers"
        value = self._get(
            key,
            (),
            REQUIRED,
            lambda v: isinstance(v, list) and len(v) == length and all(_number(x) for x in v),
            expected,
        )
        return tuple(float(x) for x in value)

    def flag(self, key: str, default: bool) -> bool:
        return self._get(key, (), default, lambda v: isinstance(v, bool), "true or false")

    def text(self, key: str, default: Any = REQUIRED, *aliases: str) -> str:
        return self._get(key, aliases, default, lambda v: isinstance(v, str), "a string")

    def nested(self, key: str) -> Keys | None:
        """The JSON object under `key` (rope_parameters, rope_scaling), None when absent, null or empty."""
        value = self.data.get(key)
        if value is None or value == {}:
            return None
        if not isinstance(value, dict):
            raise self.fail(key, value, "a JSON object")
        return Keys(value, self.source, f"{self.prefix}{key}.", self.notes)


__all__ = ["REQUIRED", "Keys"]
