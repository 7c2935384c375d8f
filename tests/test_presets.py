"""The real models' specs in examples/models/ count exactly the published figures (tests/data/real-models.json:
what transformers builds from each published config, tied tensors once)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA

from transformer_cli import count_params, load_spec

PRESETS = sorted((Path(__file__).parent.parent / "examples" / "models").glob("*.yaml"))
PUBLISHED = {m["name"]: m for m in json.loads((DATA / "real-models.json").read_text())}


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_a_preset_counts_the_published_figure(path):
    spec = load_spec(path)
    count, published = count_params(spec), PUBLISHED[spec.name]
    assert count.total == published["parameters"]
    assert count.active == published.get("active_parameters", published["parameters"])  # Mixtral: 2 of 8 experts


def test_there_are_presets_for_the_gpt2_family():
    assert {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"} <= {p.stem for p in PRESETS}
