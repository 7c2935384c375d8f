"""Spec files read as YAML 1.2 (core schema), the way JSON and editors read them, with PyYAML's safe parser.

PyYAML resolves plain scalars by YAML 1.1: `1e-6` is a string, `017` is octal 15, `1:30` is 90 and `yes` is
true. A spec is read with the 1.2 core schema instead (yaml.org/spec/1.2.2, 10.3.2): `1e-6` is a float, `017`
is 17, `0o17` is 15, `0x1f` is 31, `1:30`, `1_000`, `yes`, `on` and `2001-12-14` are strings, and only
true/True/TRUE and false/False/FALSE are booleans. Aliases, duplicate keys and deep nesting are refused.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

from ..errors import SpecError
from ..text import codepoint, shown

MAX_DEPTH = 20  # a spec is one flat mapping; deeper nesting only serves to exhaust the parser's stack
MAX_DIGITS = 1000  # products of four such keys stay within Python's 4,300-digit limit for printing

INT, FLOAT, BOOL, NULL = (f"tag:yaml.org,2002:{kind}" for kind in ("int", "float", "bool", "null"))

CORE_SCHEMA = [  # (tag, regular expression, possible first characters), from the 1.2 core schema's table
    (NULL, r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    (BOOL, r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    (INT, r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    (
        FLOAT,
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        list("-+.0123456789"),
    ),
]


class TooLong:
    """An integer with more than MAX_DIGITS digits, kept unconverted (int() of it would be slow or refused)."""

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"an integer of {self.digits:,} digits"


def parse_int(text: str) -> int | TooLong:
    """A YAML 1.2 or JSON integer: decimal (leading zeros allowed), 0o octal or 0x hexadecimal."""
    digits = len(text.lstrip("+-"))
    if digits > MAX_DIGITS:
        return TooLong(digits)
    if text[:2] in ("0o", "0x"):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)


def parse_float(text: str) -> float:
    """A YAML 1.2 float: decimal with optional exponent, .inf, -.inf or .nan."""
    if text.lstrip("+-").lower() == ".inf":
        return -math.inf if text.startswith("-") else math.inf
    return math.nan if text.lower() == ".nan" else float(text)


def parse_bool(text: str) -> bool:
    """A YAML 1.2 boolean: true or false (also True, TRUE, False, FALSE); yes, no, on, off are strings."""
    if text not in ("true", "True", "TRUE", "false", "False", "FALSE"):
        raise ValueError(text)
    return text.lower() == "true"


class SpecLoader(yaml.SafeLoader):
    """SafeLoader with the YAML 1.2 core schema; refuses aliases ("billion laughs"), duplicate keys, deep nesting."""

    yaml_implicit_resolvers: dict = {}  # noqa: RUF012 - replaces PyYAML's 1.1 table; filled below
    yaml_constructors = dict(yaml.SafeLoader.yaml_constructors)  # noqa: RUF012 - a copy, changed below
    depth = 0
    key = ""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise self._error("aliases (*name) are not allowed in a spec file")
        if self.depth == 1 and isinstance(index, yaml.ScalarNode):
            self.key = index.value  # the top-level key whose value is being read, for the message
        self.depth += 1
        if self.depth > MAX_DEPTH:
            where = f"key '{shown(self.key)}': " if self.key else ""
            raise self._error(f"{where}nested deeper than {MAX_DEPTH} levels; a spec is one flat mapping")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def _error(self, problem: str) -> yaml.MarkedYAMLError:
        return yaml.composer.ComposerError(None, None, problem, self.peek_event().start_mark)

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (str, int, float)) and key in seen:
                problem = f"key '{shown(str(key))}' appears twice"
                raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
            if isinstance(key, (str, int, float)):
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _scalar(parse):
    def construct(loader: SpecLoader, node: yaml.ScalarNode) -> Any:
        text = loader.construct_scalar(node)
        try:
            return parse(text)
        except ValueError:  # only with an explicit tag: !!int 1:30
            raise yaml.constructor.ConstructorError(
                None, None, f"'{shown(text)}' is not a {node.tag.rsplit(':', 1)[-1]}", node.start_mark
            ) from None

    return construct


for _tag, _pattern, _first in CORE_SCHEMA:
    SpecLoader.add_implicit_resolver(_tag, re.compile(_pattern), _first)
SpecLoader.add_constructor(INT, _scalar(parse_int))
SpecLoader.add_constructor(FLOAT, _scalar(parse_float))
SpecLoader.add_constructor(BOOL, _scalar(parse_bool))


def _position(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    return f"line {line}, column {index - (text.rfind(chr(10), 0, index) + 1) + 1}"


def read_yaml(text: str, source: str) -> Any:
    """The one document of a spec file (None if empty); every problem is a one-line SpecError naming `source`."""
    try:
        documents = list(yaml.load_all(text, Loader=SpecLoader))  # noqa: S506 - a SafeLoader subclass
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow anywhere (NUL, BEL, ESC, ...)
        char = chr(exc.character) if isinstance(exc.character, int) else str(exc.character)
        raise SpecError(
            f"{source}: {codepoint(char)} at {_position(text, exc.position)} is a control character, "
            "which YAML does not allow (write it as an escape inside double quotes)"
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SpecError(f"{source}: invalid YAML{where}: {shown(str(exc.problem or exc.context), 200)}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: invalid YAML: {shown(str(exc), 200)}") from None
    except RecursionError:  # MAX_DEPTH stops nesting first; this guards what it does not foresee
        raise SpecError(f"{source}: nested too deeply; a spec is one flat mapping") from None
    if len(documents) > 1:
        raise SpecError(f"{source}: {len(documents)} YAML documents, expected one")
    return documents[0] if documents else None
