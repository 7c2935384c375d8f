"""A config.json written for a test, and the one-line refusal every bad config must give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transformer_cli import SpecError
from transformer_cli.hf.config import spec_from_config


def assert_refused_in_one_line(tmp_path: Path, config: dict | str, message: str) -> None:
    """The config refused with one line that names its file and holds `message`."""
    folder = _write(tmp_path / "model", config)
    with pytest.raises(SpecError) as caught:
        spec_from_config(folder)
    text = str(caught.value)
    assert text.startswith(f"{folder / 'config.json'}: ") and "\n" not in text
    assert message in text


def _write(folder: Path, config: dict | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = config if isinstance(config, str) else json.dumps(config)
    (folder / "config.json").write_text(text)
    return folder
