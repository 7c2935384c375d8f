"""The model spec: the seed's symbols N, H, m, d, r plus the standard model's variants.

Every key is declared once, as a field of `Spec` with its metadata; the loader validates against those
declarations, so an error always names the file, the key, the value and what was expected.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from .errors import SpecError

MAX_SPEC_BYTES = 1 << 20  # a spec is a dozen lines; anything over 1 MiB is not one

SCALES = ("none", "sqrt")
MASKS = ("none", "causal")
POSITIONALS = ("none", "sinusoidal", "learned")
NORMS = ("none", "pre", "post")
ACTIVATIONS = ("relu", "gelu")


def _key(kind: str, doc: str, choices: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"kind": kind, "doc": doc, "choices": choices}


@dataclass(frozen=True)
class Spec:
    """A transformer spec; the defaults of the optional keys give the seed's plain definition."""

    N: int = field(metadata=_key("posint", "number of blocks"))
    H: int = field(metadata=_key("posint", "number of attention heads"))
    m: int = field(metadata=_key("posint", "size of one head (need not be d/H)"))
    d: int = field(metadata=_key("posint", "model size: rows of X, one column per token"))
    r: int = field(metadata=_key("posint", "hidden size of the feedforward network"))
    name: str = field(default="", metadata=_key("str", "a label for tables"))
    description: str = field(default="", metadata=_key("str", "free text"))
    scale: str | float = field(
        default="none", metadata=_key("scale", "score scale: none (1), sqrt (1/sqrt(m)) or a positive number", SCALES)
    )
    mask: str = field(default="none", metadata=_key("choice", "attention mask", MASKS))
    positional: str = field(default="none", metadata=_key("choice", "positional encoding added to X", POSITIONALS))
    max_len: int | None = field(default=None, metadata=_key("posint", "longest sequence (learned positions only)"))
    norm: str = field(default="none", metadata=_key("choice", "layer norm placement", NORMS))
    norm_eps: float = field(default=1e-5, metadata=_key("posfloat", "layer norm epsilon"))
    attention_bias: bool = field(default=False, metadata=_key("bool", "biases b_Q, b_K, b_V, b_O"))
    activation: str = field(default="relu", metadata=_key("choice", "feedforward activation", ACTIVATIONS))

    @property
    def score_scale(self) -> float:
        """The factor that multiplies every attention score before the softmax."""
        if self.scale == "none":
            return 1.0
        if self.scale == "sqrt":
            return 1.0 / math.sqrt(self.m)
        return float(self.scale)

    @property
    def label(self) -> str:
        return self.name or "unnamed"

    def summary(self) -> str:
        """One line for titles: 'gpt2-small: N=12, H=12, ..., norm=pre'."""
        keys = {k: v for k, v in self.to_dict().items() if k not in ("name", "description")}
        return f"{self.label}: " + ", ".join(
            f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in keys.items()
        )

    def variant_keys(self) -> dict[str, Any]:
        """The optional model keys that differ from the seed's plain definition."""
        plain = Spec(N=1, H=1, m=1, d=1, r=1)
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in REQUIRED + ("name", "description") and getattr(self, f.name) != getattr(plain, f.name)
        }

    def to_dict(self) -> dict[str, Any]:
        """The spec as the mapping a YAML file would hold (optional keys only where set)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in REQUIRED}
        if self.name:
            out["name"] = self.name
        if self.description:
            out["description"] = self.description
        out.update(self.variant_keys())
        return out


FIELDS = {f.name: f for f in fields(Spec)}
REQUIRED = tuple(name for name, f in FIELDS.items() if f.default is MISSING)

# Keys that go with a value of another key: (other key, its values, required then). The loader and the
# JSON Schema (schema.py) both read this table.
DEPENDENT = {
    "max_len": ("positional", ("learned",), True),
    "norm_eps": ("norm", ("pre", "post"), False),
}

DEFAULT_SPEC = Spec(N=2, H=4, m=8, d=32, r=64, name="default", description="built-in default spec")


def _expected(name: str) -> str:
    meta = FIELDS[name].metadata
    kind, choices = meta["kind"], meta["choices"]
    return {
        "posint": "a positive integer",
        "posfloat": "a positive number",
        "bool": "true or false",
        "str": "a string",
        "choice": "one of " + ", ".join(choices),
        "scale": "none, sqrt or a positive number",
    }[kind]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _valid(name: str, value: Any) -> bool:
    meta = FIELDS[name].metadata
    kind = meta["kind"]
    if kind == "posint":
        return _is_int(value) and value > 0
    if kind == "posfloat":
        return _is_number(value) and value > 0
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "choice":
        return isinstance(value, str) and value in meta["choices"]
    return (isinstance(value, str) and value in meta["choices"]) or (_is_number(value) and value > 0)


def _fail(source: str, key: str, value: Any, expected: str) -> SpecError:
    if isinstance(value, bool) or value is None:
        shown = {True: "true", False: "false", None: "null"}[value]  # as YAML spells them
    else:
        shown = repr(value) if not isinstance(value, str) else f"'{value}'"
    return SpecError(f"{source}: key '{key}': got {shown[:80]}, expected {expected}")


def spec_from_mapping(data: Any, source: str = "spec") -> Spec:
    """Validate a parsed YAML document and build the Spec; `source` names it in errors."""
    if not isinstance(data, dict):
        kind = "an empty document" if data is None else f"a {type(data).__name__}"
        raise SpecError(f"{source}: expected a mapping of keys (N, H, m, d, r, ...), got {kind}")
    for key in data:
        if not isinstance(key, str) or key not in FIELDS:
            close = difflib.get_close_matches(str(key), list(FIELDS), n=1, cutoff=0.5)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise SpecError(f"{source}: unknown key '{key}'{hint}; known keys: {', '.join(FIELDS)}")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise SpecError(f"{source}: missing required key{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    for key, value in data.items():
        if not _valid(key, value):
            raise _fail(source, key, value, _expected(key))
    values = dict(data)
    if isinstance(values.get("scale"), int):
        values["scale"] = float(values["scale"])
    if "name" not in values and source.endswith((".yaml", ".yml")):
        values["name"] = Path(source).stem
    spec = Spec(**values)
    _check_combinations(spec, data, source)
    return spec


def _check_combinations(spec: Spec, data: dict[str, Any], source: str) -> None:
    for key, (other, values, required) in DEPENDENT.items():
        allowed = getattr(spec, other) in values
        if allowed and required and key not in data:
            raise SpecError(f"{source}: key '{key}': missing, expected {_expected(key)} when {other} is {values[0]}")
        if not allowed and key in data:
            raise _fail(source, key, data[key], f"no {key} unless {other} is {' or '.join(values)}")


class _SpecLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases (a spec never needs them; they allow "billion laughs") and duplicate keys."""

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.constructor.ConstructorError(
                None, None, "aliases (*name) are not allowed in a spec file", event.start_mark
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (str, int, float)) and key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key '{key}' appears twice", key_node.start_mark)
            if isinstance(key, (str, int, float)):
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _read_text(path: Path) -> str:
    if not path.exists():
        raise SpecError(f"{path}: no such spec file")
    if path.is_dir():
        raise SpecError(f"{path}: is a directory, expected a YAML spec file")
    try:
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise SpecError(f"{path}: {size} bytes, expected a spec file of at most {MAX_SPEC_BYTES} bytes")
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: byte {exc.start} is not UTF-8; expected a UTF-8 text file") from None


def load_spec(path: str | Path | None) -> Spec:
    """Load and validate a YAML spec file; `None` gives the built-in default spec."""
    if path is None:
        return DEFAULT_SPEC
    path = Path(path)
    text = _read_text(path)
    try:
        documents = list(yaml.load_all(text, Loader=_SpecLoader))  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SpecError(f"{path}: invalid YAML{where}: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: invalid YAML: {exc}") from None
    if len(documents) > 1:
        raise SpecError(f"{path}: {len(documents)} YAML documents, expected one")
    return spec_from_mapping(documents[0] if documents else None, str(path))


def check_length(spec: Spec, n: int, where: str) -> None:
    """Refuse a sequence longer than the spec's learned positions cover (every command that takes n asks here)."""
    if spec.positional == "learned" and spec.max_len is not None and n > spec.max_len:
        raise SpecError(
            f"{where}: n = {n}, expected at most max_len = {spec.max_len} (learned positions of {spec.label})"
        )


__all__ = ["DEFAULT_SPEC", "DEPENDENT", "FIELDS", "REQUIRED", "Spec", "check_length", "load_spec", "spec_from_mapping"]
