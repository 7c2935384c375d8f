"""A spec file written for a test, the base spec, and the error a bad one gives."""

from __future__ import annotations

import pytest

from transformer_cli import SpecError
from transformer_cli.spec.load import load_spec  # the YAML reader (transformer_cli.load_spec takes any model)

BASE = "N: 2\nH: 4\nm: 8\nd: 32\nr: 64\n"


def write(tmp_path, text: str | bytes, name: str = "spec.yaml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def error_of(tmp_path, text: str | bytes) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, text))
    message = str(info.value)
    assert "spec.yaml" in message and "\n" not in message
    return message
