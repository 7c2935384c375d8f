"""A Hugging Face `config.json` -> the tfm spec of the model transformers builds from it.

The model is the family's `...ForCausalLM` (`GPT2LMHeadModel`; `BertModel` for bert;
`...ForConditionalGeneration` for the encoder-decoders t5 and bart), as transformers 5.24 builds it; configs
written by 4.x (rope_theta, rope_scaling, torch_dtype) read the same. The family mappings are in families.py
and encoder_decoder.py; every problem is one SpecError naming the file and the key.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..families.keys import Keys
from ..files import read_bounded
from ..io.safetensors_io import parse_json
from ..spec.definition import FIELDS, REQUIRED, Spec
from ..spec.validate import spec_from_mapping
from ..text import shown
from .families import FAMILIES
from .weights import fitted_to_checkpoint

MAX_CONFIG_BYTES = 4 << 20  # real config.json files are a few KB; Mixtral's with its comments is under 1 KB


def config_path(path: str | Path) -> Path:
    """The config.json itself: `path`, or the file of that name in the folder `path`."""
    path = Path(path)
    return path / "config.json" if path.is_dir() else path


def read_config(path: str | Path) -> dict[str, Any]:
    """The JSON object of a config.json (the file, or the one in a folder), read within MAX_CONFIG_BYTES from a
    regular file."""
    path = config_path(path)
    if not os.path.lexists(path) and path.parent.is_dir() and path.name == "config.json":
        raise SpecError(
            f"{path.parent}: is a directory with no config.json in it, expected a YAML spec file or a Hugging Face "
            "model folder (config.json and safetensors)"
        )
    raw = read_bounded(path, MAX_CONFIG_BYTES, "a Hugging Face config.json", SpecError)
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: byte {exc.start} is not UTF-8; expected a JSON config") from None
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # an integer past Python's digit limit; nesting past the stack
        raise SpecError(f"{path}: not a JSON config this reader accepts: {shown(str(exc))}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a JSON object of config keys, got a JSON {_json_kind(data)}")
    return data


def stored_config(text: str, source: str) -> dict[str, Any]:
    """A config.json kept as text (in a weights file's metadata, 'hf_config'): strict JSON, and an object."""

    try:
        data = parse_json(text)
    except ValueError as exc:
        raise SpecError(f"{source}: not JSON: {shown(str(exc))}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{source}: expected a JSON object of config keys, got a JSON {_json_kind(data)}")
    return data


def _json_kind(value: Any) -> str:
    kinds = {list: "array", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


def _model_type(c: Keys) -> str:
    supported = ", ".join(sorted(FAMILIES))
    kind = c.text("model_type", None)
    if kind is None:
        raise SpecError(f"{c.source}: key 'model_type': missing, expected one of {supported}")
    if kind not in FAMILIES:
        raise c.refuse("model_type", kind, f"supported model types are {supported}")
    return kind


def _name(config: dict[str, Any], source: str) -> str:
    """The label for tables: the file's _name_or_path, else its folder's name."""
    name = config.get("_name_or_path")
    if isinstance(name, str) and name.strip():
        return name.strip()
    return Path(source).resolve().parent.name if source.endswith("config.json") else ""


def _minimal(mapping: dict[str, Any]) -> dict[str, Any]:
    """The keys a spec file would hold: the required ones, and the others where they differ from tfm's default."""
    return {k: v for k, v in mapping.items() if k in REQUIRED or v != FIELDS[k].default}


def config_to_spec_mapping(config: dict[str, Any], source: str, notes: list[str] | None = None) -> dict[str, Any]:
    """The tfm spec of a parsed config.json as a plain mapping (what a YAML spec file would hold); `notes` hears
    what reading it says (a key transformers ignores, and so tfm)."""
    c = Keys(config, source, notes=notes)
    model_class, family = FAMILIES[_model_type(c)]
    mapping = _minimal(family(c))
    name = _name(config, source)
    head = {"name": name} if name else {}
    return head | {"description": f"{model_class} as transformers builds it from {Path(source).name}"} | mapping


def spec_of_config(config: dict[str, Any], source: str, notes: list[str] | None = None) -> Spec:
    """The tfm spec of a parsed config.json; `source` names it in errors, `notes` hears what reading it says."""
    return spec_from_mapping(config_to_spec_mapping(config, source, notes), source)


def load_config(path: str | Path, notes: list[str] | None = None) -> tuple[dict[str, Any], Spec]:
    """A config.json (the file, or a folder holding one) read once: its JSON object and its tfm spec, fitted to
    the folder's checkpoint where a part of the model is optional (a BERT checkpoint without its pooler); `notes`
    hears the keys transformers stores and never uses, which tfm follows (each a line for stderr)."""
    path = config_path(path)
    config = read_config(path)
    return config, fitted_to_checkpoint(path.parent, spec_of_config(config, str(path), notes), config)


def spec_from_config(path: str | Path, notes: list[str] | None = None) -> Spec:
    """The tfm spec of the model transformers builds from a config.json (the file, or a folder holding one)."""
    return load_config(path, notes)[1]


__all__ = [
    "config_path",
    "config_to_spec_mapping",
    "load_config",
    "read_config",
    "spec_from_config",
    "spec_of_config",
    "stored_config",
]
