"""The docs' table of 2026's published models (docs/hugging-face.md): tfm's count of each config is the published
one, and each peer's column is the figure its own run recorded (benchmarks/peer_counts_2.json, written by
benchmarks/peer_counts.py --models tests/data/real-models-2.json), or — where the peer cannot take the model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import DATA

from transformer_cli import count_params
from transformer_cli.hf.config import spec_from_config

ROOT = Path(__file__).parents[2]
MODELS = json.loads((DATA / "real-models-2.json").read_text())
PEERS = json.loads((ROOT / "benchmarks" / "peer_counts_2.json").read_text())
ROWS = {
    line.split(" (`")[0].strip("| "): [c.strip() for c in line.strip("|").split("|")]
    for line in (ROOT / "docs" / "hugging-face.md").read_text().splitlines()
    if "(`tests/data/real-models-2.json`) |" in line
}


def _figures(cell: str) -> list[int]:
    return [int(x.replace(",", "")) for x in re.findall(r"\d{1,3}(?:,\d{3})+", cell)]


def test_the_peers_run_and_the_table_cover_exactly_the_models_of_the_file():
    assert list(PEERS) == [m["name"] for m in MODELS] and sorted(ROWS) == sorted(PEERS)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m["name"])
def test_the_table_sets_each_peer_beside_tfms_exact_count(model, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model["model_type"]} | model["config"]))
    count, cells, peers = count_params(spec_from_config(tmp_path)), ROWS[model["name"]], PEERS[model["name"]]
    assert peers["published"] == model["total_params"] == count.total
    without = [count.active_without_embedding] if "without the embedding" in cells[3] else []  # (gpt-oss: OpenAI's)
    assert _figures(cells[3]) == [count.total] + ([count.active] if count.active != count.total else []) + without
    for column, peer in ((4, "llm_analysis"), (5, "eleuther"), (6, "accelerate")):
        assert (_figures(cells[column])[:1] or [None]) == [peers[peer]], (peer, cells[column])
