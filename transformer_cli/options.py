"""The commands' options checked once, by their command-line names, for the CLI and the library alike: a count,
a number in a range, a choice, and a library call's keywords (the command's long option names, snake_case).

Every message names the option as the command line spells it (`--seq-len 0: expected 1 or more`), so `tfm.load(p)
.costs(seq_len=0)` and `tfm count p -n 0` say the same line; the error is an OptionError (a TfmError, exit 2).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
from collections.abc import Callable, Iterable, Mapping
from numbers import Integral, Real
from typing import Any, TypeVar

from .errors import OptionError, clipped

F = TypeVar("F", bound=Callable[..., Any])


def count(value: Any, option: str, least: int = 1, most: int | None = None) -> int:
    """A whole number of `option` (the command's name, "seq-len") from `least` to `most`."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise OptionError(f"--{option} {clipped(repr(value), 60)}: expected a whole number, {expected(least, most)}")
    value = int(value)
    if value < least or (most is not None and value > most):
        raise OptionError(f"--{option} {value}: expected {expected(least, most)}")
    return value


def number(value: Any, option: str, least: float, most: float | None = None) -> float:
    """A finite real number of `option` from `least` to `most`."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise OptionError(f"--{option} {clipped(repr(value), 60)}: expected a number, {expected(least, most)}")
    value = float(value)
    if not math.isfinite(value) or value < least or (most is not None and value > most):
        raise OptionError(f"--{option} {value!r}: expected a finite number, {expected(least, most)}")
    return value


def choice(value: Any, option: str, choices: Iterable[str]) -> str:
    """One of `choices`."""
    choices = tuple(choices)
    if value not in choices:
        raise OptionError(f"--{option} {clipped(value, 60)}: expected one of {', '.join(choices)}")
    return str(value)


def expected(least: float, most: float | None) -> str:
    if most is None:
        return f"{least:g} or more"
    return f"from {least:g} to {most:g}"


def keywords(
    given: Mapping[str, Any], accepted: Iterable[str], where: str, renamed: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A library call's keywords, an old name (`renamed`: old -> new) as its new one; a name neither accepted nor
    renamed is an OptionError naming it, the closest accepted name, and all of them."""
    accepted, renamed = tuple(accepted), renamed or {}
    found: dict[str, Any] = {}
    named_as: dict[str, str] = {}
    for name, value in given.items():
        new = renamed.get(name, name)
        if new not in accepted:
            close = difflib.get_close_matches(name, accepted, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise OptionError(f"{where}: unknown option '{clipped(name, 60)}'{hint}; it takes {', '.join(accepted)}")
        if new in found:
            raise OptionError(f"{where}: '{named_as[new]}' and '{name}' are one option ({new}); give it once")
        found[new], named_as[new] = value, name
    return found


def named(renamed: Mapping[str, str] | None = None) -> Callable[[F], F]:
    """A library call whose keywords keywords() checks against its own parameters' names, an old name in
    `renamed` taken as its new one (where a Python TypeError would name neither the option nor the choices)."""

    def wrap(function: F) -> F:
        accepted = [name for name in parameters(function) if name != "self"]

        @functools.wraps(function)
        def checked(*args: Any, **given: Any) -> Any:
            return function(*args, **keywords(given, accepted, function.__qualname__, renamed))

        return checked  # type: ignore[return-value]

    return wrap


def parameters(function: Callable[..., Any], skip: int = 0) -> list[str]:
    """The names `function` takes by keyword, after its first `skip` parameters (self, a model)."""
    found = list(inspect.signature(function).parameters.values())[skip:]
    return [p.name for p in found if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
