"""docs/plan.md's table of 2026's KV caches: tfm's column is tfm's figure for the published config, and each peer's
column the figure benchmarks/peer_kv_2026.py recorded when it ran the peer (benchmarks/peer_kv_2026.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from transformer_cli.analysis.kv_cache import kv_cache_bytes
from transformer_cli.hf.config import spec_from_config

ROOT = Path(__file__).parents[2]
RUN = json.loads((ROOT / "benchmarks" / "peer_kv_2026.json").read_text())
ENTRIES = {e["name"]: e for e in json.loads((ROOT / "tests" / "data" / "real-models-2.json").read_text())}
ROWS = {
    cells[0]: cells
    for line in (ROOT / "docs" / "plan.md").read_text().splitlines()
    if line.startswith("| ") and (cells := [c.strip() for c in line.strip("|").split("|")])[0] in RUN
}


def _first(cell: str) -> int:
    return int(re.match(r"[\d,]+", cell).group().replace(",", ""))  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["DeepSeek-V3", "gpt-oss-120b", "gemma-2-27b"])
def test_the_kv_table_is_tfms_figure_beside_each_peers_recorded_one(name, tmp_path):
    entry = ENTRIES[name]
    (tmp_path / "config.json").write_text(json.dumps({"model_type": entry["model_type"]} | entry["config"]))
    ours = kv_cache_bytes(spec_from_config(tmp_path), 1, 32768, "bfloat16")
    cells, run = ROWS[name], RUN[name]
    assert _first(cells[1]) == ours == run["tfm"]
    for column, peer in ((2, "hf_mem"), (3, "llm_analysis"), (4, "eleuther")):
        assert _first(cells[column]) == run[peer], peer
        assert f"({run[peer] / ours:.1f}x)" in cells[column]
