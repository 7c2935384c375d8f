"""Published configs counted exactly: the real models' folders against their published counts and the presets
written by hand, and the 2026 models' configs with their totals and active parameters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers_hf_config import _write

from transformer_cli import count_params, load_spec
from transformer_cli.hf.config import spec_from_config

ROOT = Path(__file__).resolve().parents[2]
REAL = json.loads((ROOT / "tests/data/real-models.json").read_text())


def _folder(entry: dict) -> Path:
    return ROOT / "examples/hf" / entry["name"].split("/")[-1]


# ---- the real models: published counts, and the presets written by hand


@pytest.mark.parametrize("entry", REAL, ids=lambda e: e["name"])
def test_real_config_counts_equal_the_published_ones(entry):
    counted = count_params(spec_from_config(_folder(entry)))
    assert counted.total == entry["parameters"]
    assert counted.active == entry.get("active_parameters", entry["parameters"])  # Mixtral: 2 experts of 8


@pytest.mark.parametrize("entry", REAL, ids=lambda e: e["name"])
def test_real_config_gives_the_hand_written_preset(entry):
    preset = ROOT / "examples/models" / f"{_folder(entry).name}.yaml"
    spec = spec_from_config(_folder(entry))
    config = json.loads((_folder(entry) / "config.json").read_text())
    assert spec.name == config.get("_name_or_path", _folder(entry).name)  # else the folder names the model
    assert spec.model_keys() == load_spec(preset).model_keys()


REAL_2 = json.loads((ROOT / "tests/data/real-models-2.json").read_text())  # (../shared/reference's, copied)


@pytest.mark.parametrize("entry", REAL_2, ids=lambda e: e["name"])
def test_the_2026_published_counts_are_exact_where_the_family_is_supported(tmp_path, entry):
    """The 20 published configs of 2026's models, every one counted exactly."""
    folder = _write(tmp_path / entry["name"], {"model_type": entry["model_type"]} | entry["config"])
    assert count_params(spec_from_config(folder)).total == entry["total_params"]


# Active parameters per token of the published MoE configs, by hand: the total less the experts a token skips,
# routed layers x (E - k) x one expert (gated: 3 d r_e; gpt-oss's with biases: 3 d r_e + 2 r_e + d). The model
# cards' rounded figures ("3.3B activated", "2.7B activated", "6.6B active", "37B activated"; gpt-oss' 5.13B and
# 3.61B are these less the embedding, 201,088 x 2,880).
ACTIVE = {
    "Qwen3-30B-A3B": 30_532_122_624 - 48 * (128 - 8) * 3 * 2048 * 768,  # 3,353,032,704
    "Qwen1.5-MoE-A2.7B": 14_315_784_192 - 24 * (60 - 4) * 3 * 2048 * 1408,  # 2,689,173,504
    "Phi-3.5-MoE": 41_873_153_344 - 32 * (16 - 2) * 3 * 4096 * 6400,  # 6,640,999,744
    "DeepSeek-V3": 671_026_404_352 - (61 - 3) * (256 - 8) * 3 * 7168 * 2048,  # 37,552,282,624
    "DeepSeek-V2-Lite": 15_706_484_224 - (27 - 1) * (64 - 6) * 3 * 2048 * 1408,  # 2,661,150,208
    "gpt-oss-120b": 116_829_156_672 - 36 * (128 - 4) * (3 * 2880 * 2880 + 2 * 2880 + 2880),  # 5,711,982,912
    "gpt-oss-20b": 20_914_757_184 - 24 * (32 - 4) * (3 * 2880 * 2880 + 2 * 2880 + 2880),  # 4,187,440,704
}


@pytest.mark.parametrize("entry", [e for e in REAL_2 if e["name"] in ACTIVE], ids=lambda e: e["name"])
def test_the_published_moe_configs_active_parameters(tmp_path, entry):
    folder = _write(tmp_path / entry["name"], {"model_type": entry["model_type"]} | entry["config"])
    assert count_params(spec_from_config(folder)).active == ACTIVE[entry["name"]]
