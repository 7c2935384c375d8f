"""The published configs of issue 44's families (tests/data/real-models-3.json: each config.json's values as its
publisher wrote them, the source in its note) counted by tfm, equal to transformers' model of that config built on
the meta device (recorded as total_params, and rebuilt here). Where a publisher states a figure, the note
says how the count stands beside it (their figures are rounded, or leave out a prediction layer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers_hf_config import _write

from transformer_cli import count_params
from transformer_cli.hf.config import spec_from_config

ROOT = Path(__file__).resolve().parents[2]
REAL_3 = json.loads((ROOT / "tests/data/real-models-3.json").read_text())


@pytest.mark.parametrize("entry", REAL_3, ids=lambda e: e["name"])
def test_issue_44s_published_configs_count_as_transformers_models_of_them(tmp_path, entry):
    folder = _write(tmp_path / entry["name"], {"model_type": entry["model_type"]} | entry["config"])
    assert count_params(spec_from_config(folder)).total == entry["total_params"]


@pytest.mark.parametrize("entry", REAL_3, ids=lambda e: e["name"])
def test_the_recorded_totals_are_transformers_models_on_the_meta_device(entry):
    """The reference itself: transformers 5.24 builds each config's model on the meta device (no memory)."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")

    config = transformers.AutoConfig.for_model(entry["model_type"], **entry["config"])
    with torch.device("meta"):
        model = getattr(transformers, entry["hf_class"])(config)
    from helpers_hf_transformers import parameters  # (less LongCat-Flash's unread zero-expert projections)

    assert parameters(model) == entry["total_params"]
