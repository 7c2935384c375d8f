"""The JSON Schema of the spec format, derived from the same field declarations the loader validates with."""

from __future__ import annotations

import sys
from dataclasses import MISSING
from typing import Any

from .definition import FIELDS, REQUIRED
from .dependent import DEPENDENT

FLOAT_MAX = sys.float_info.max  # refuses YAML's .inf, as the loader does (JSON itself has no infinity)


def _property(name: str) -> dict[str, Any]:
    field = FIELDS[name]
    meta = field.metadata
    kind, choices = meta["kind"], list(meta["choices"])
    kinds: dict[str, dict[str, Any]] = {
        "posint": {"type": "integer", "minimum": 1},
        "index": {"type": "integer", "minimum": 0},
        "posfloat": {"type": "number", "exclusiveMinimum": 0, "maximum": FLOAT_MAX},
        "fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "bool": {"type": "boolean"},
        "str": {"type": "string"},
        "choice": {"enum": choices},
        "floats": {
            "type": "array",
            "items": {"type": "number", "exclusiveMinimum": 0, "maximum": FLOAT_MAX},
            "minItems": 1,
        },
        "layers": {"type": "array", "items": {"enum": choices}, "minItems": 1},
        "sizes": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1},
        "blocks": {"type": "array", "items": {"type": "integer", "minimum": 0}, "uniqueItems": True},
        "levels": {"type": "array", "items": {"type": "number", "minimum": 0, "exclusiveMaximum": 1}, "minItems": 1},
        "scale": {"anyOf": [{"enum": choices}, {"type": "number", "exclusiveMinimum": 0, "maximum": FLOAT_MAX}]},
    }
    if kind == "stack":  # (the encoder's own keys: a mapping of some of the spec's, each as the spec declares it)
        own = {key: {k: v for k, v in _property(key).items() if k != "default"} for key in choices}
        kinds[kind] = {"type": "object", "properties": own, "additionalProperties": False, "minProperties": 1}
    prop = dict(kinds[kind])
    prop["description"] = meta["doc"]
    if field.default is not MISSING and field.default is not None and field.default != "":
        prop["default"] = field.default
    return prop


def spec_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) for a tfm spec file."""
    rules: list[dict[str, Any]] = [  # the per-layer kinds need what their kinds choose between
        {"if": {"required": [key]}, "then": {"required": [other]}}
        for key, other in (
            ("attention_layers", "window"),
            ("feedforward_layers", "E"),
            ("positional_layers", "positional"),
        )
    ]
    for key, (other, values, required) in DEPENDENT.items():
        when = {"properties": {other: {"enum": list(values)}}, "required": [other]}
        rules.append(
            {"if": when, "then": {"required": [key]} if required else {}, "else": {"not": {"required": [key]}}}
        )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "tfm transformer spec",
        "description": "N blocks of H heads of size m over model size d, feedforward size r, and the variants.",
        "type": "object",
        "properties": {name: _property(name) for name in FIELDS},
        "required": list(REQUIRED),
        "additionalProperties": False,
        "allOf": rules,
    }
