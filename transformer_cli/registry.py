"""The kinds one spec key chooses between, each registered by name by the module that implements it.

spec/choices.py holds one registry per choice key (`POSITIONALS`, `NORM_TYPES`, ...); the component that
implements a kind registers it (`@POSITIONALS.register("rope")` on its class), and the spec reads the registry's
names when it checks or prints a value, so a kind is named once, where it is implemented, in the order its module
registers it. The spec sits below the components and may not import them: the package's front door
(transformer_cli/__init__.py) says, with `fill_with`, how to import the modules that register, which happens the
first time any registry is read (so `tfm --help`, which reads none, imports no component).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import TypeVar

T = TypeVar("T")

_FILLERS: list[Callable[[], object]] = []  # what imports the modules that register kinds (the package's components)
_filled = False


def fill_with(filler: Callable[[], object]) -> None:
    """Have `filler` import the registering modules before any registry is first read."""
    _FILLERS.append(filler)


def _fill() -> None:
    global _filled
    if not _filled:
        _filled = True  # first, so a registry read while the modules import does not import them again
        for filler in _FILLERS:
            filler()


class Registry(MutableMapping[str, T]):
    """A spec key's kinds: name -> what implements it, in the order registered (the order errors and docs list)."""

    def __init__(self, key: str) -> None:
        self.key = key  # the spec key whose values these are
        self._kinds: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """`@REGISTRY.register(name)` on what implements the kind, or `REGISTRY.register(name)(implementation)`."""

        def add(kind: T) -> T:
            if name in self._kinds:
                raise ValueError(f"{self.key}: the kind {name!r} is registered twice")
            self._kinds[name] = kind
            return kind

        return add

    def __getitem__(self, name: str) -> T:
        _fill()
        return self._kinds[name]

    def __iter__(self) -> Iterator[str]:
        _fill()
        return iter(self._kinds)

    def __len__(self) -> int:
        _fill()
        return len(self._kinds)

    def __setitem__(self, name: str, kind: T) -> None:  # a test's stand-in (monkeypatch.setitem)
        self._kinds[name] = kind

    def __delitem__(self, name: str) -> None:
        del self._kinds[name]

    def __repr__(self) -> str:
        return f"Registry({self.key!r}: {', '.join(self)})"


__all__ = ["Registry", "fill_with"]
