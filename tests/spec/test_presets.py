"""The real models' specs in examples/models/ count exactly the published figures (tests/data/real-models.json:
what transformers builds from each published config, tied tensors once)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import DATA

from transformer_cli import count_params, load_spec

PRESETS = sorted((Path(__file__).parents[2] / "examples" / "models").glob("*.yaml"))
PUBLISHED = {m["name"]: m for m in json.loads((DATA / "real-models.json").read_text())}


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_a_preset_counts_the_published_figure(path):
    spec = load_spec(path)
    count, published = count_params(spec), PUBLISHED[spec.name]
    assert count.total == published["parameters"]
    assert count.active == published.get("active_parameters", published["parameters"])  # Mixtral: 2 of 8 experts


def test_there_are_presets_for_the_gpt2_family():
    assert {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"} <= {p.stem for p in PRESETS}


README = Path(__file__).parents[2] / "docs" / "model.md"  # the page with the table of real models
HF_PAGE = Path(__file__).parents[2] / "docs" / "hugging-face.md"
PEERS = json.loads((Path(__file__).parents[2] / "benchmarks" / "peer_counts.json").read_text())


def _readme_table() -> dict[str, list[str]]:
    """The README's table of real models: spec stem -> its cells."""
    rows = {}
    for line in README.read_text().splitlines():
        if line.startswith("| `") and ".yaml` | " in line and line.count("|") == 7:
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0].strip("`").removesuffix(".yaml")] = cells
    return rows


def _figures(cell: str) -> list[int]:
    """The whole numbers written with thousands separators in a cell ("7,110,660,224 (-1.81 %)" -> [7110660224])."""
    return [int(x.replace(",", "")) for x in re.findall(r"\d{1,3}(?:,\d{3})+", cell)]


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_the_readme_table_shows_tfms_count_and_the_peers_measured_figures(path):
    """tfm's column is tfm's count of the preset; each peer's column the figure its run recorded (or — for none)."""
    spec = load_spec(path)
    cells, peers = _readme_table()[path.stem], PEERS[spec.name]
    count = count_params(spec)
    assert _figures(cells[2])[:2] == [count.total] + ([count.active] if count.active != count.total else [])
    for column, peer in ((3, "llm_analysis"), (4, "eleuther"), (5, "accelerate")):
        figures = _figures(cells[column])
        assert (figures[:1] or [None]) == [PEERS[spec.name][peer]], (peer, cells[column])
    assert peers["published"] == PUBLISHED[spec.name]["parameters"]


def test_the_readme_table_of_hugging_face_configs_is_tfms_count_of_each_and_the_published_figure():
    from transformer_cli.hf.config import spec_from_config

    rows = [line for line in HF_PAGE.read_text().splitlines() if line.startswith("| `examples/hf/")]
    assert len(rows) == 20
    for row in rows:
        folder = row.split("`")[1]
        count = count_params(spec_from_config(Path(__file__).parents[2] / folder))
        figures = _figures(row.split("|")[4])
        published = PUBLISHED[Path(folder).name]
        assert figures[0] == count.total == published["parameters"], folder
        assert figures[1:] == ([count.active] if count.active != count.total else []), folder
