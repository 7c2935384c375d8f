"""Issue 40 (17): a published quantised config.json without its weights (DeepSeek-V3's FP8, gpt-oss's MXFP4) was
refused by `tfm plan` ('no model.safetensors'): it is planned at the bytes its method stores, as with the weights.
References: the bytes of checkpoints written as their tools write them (quantized_files.py), tensor by tensor, and
OpenAI's published checkpoint sizes of gpt-oss."""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch", reason="the quantised checkpoints are written with PyTorch")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

from conftest import DATA  # noqa: E402
from quantized_files import float_llama, fp8_folder, gpt_oss_float, mxfp4_folder  # noqa: E402

from transformer_cli.cli import app  # noqa: E402
from transformer_cli.hf.config import load_config  # noqa: E402
from transformer_cli.tasks.sources import load_weights  # noqa: E402


def _file_bytes(folder) -> int:
    raw = (folder / "model.safetensors").read_bytes()
    table = json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")])
    return sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in table.items() if k != "__metadata__")


@pytest.mark.parametrize("method", ["fp8", "mxfp4"])
def test_a_quantised_config_alone_is_planned_at_the_bytes_its_checkpoint_holds(tmp_path, runner, method):
    from transformer_cli.hf.folder import held_by_config

    make = {
        "fp8": lambda: fp8_folder(float_llama(tmp_path / "float"), tmp_path / "q"),
        "mxfp4": lambda: mxfp4_folder(gpt_oss_float(tmp_path / "float"), tmp_path / "q"),
    }
    folder = make[method]()
    (tmp_path / "alone").mkdir()
    shutil.copy(folder / "config.json", tmp_path / "alone" / "config.json")
    config, spec = load_config(tmp_path / "alone")
    assert held_by_config(config, spec, "config.json").tensors == load_weights(folder, spec).held().tensors
    plans = {}
    for name in ("q", "alone"):
        result = runner.invoke(app, ["plan", str(tmp_path / name), "-n", "32", "--json"])
        assert result.exit_code == 0, result.output
        plans[name] = json.loads(result.stdout)
    assert plans["alone"]["weights_stored"]["bytes"] == plans["q"]["weights_stored"]["bytes"] == _file_bytes(folder)
    assert "holds no weights: planned at the bytes its method stores" in result.stderr


# OpenAI's gpt-oss model card (arXiv 2508.10925, table 1): the checkpoints' sizes, MXFP4 experts, the rest bf16
CHECKPOINT_GIB = {"gpt-oss-20b": 12.8, "gpt-oss-120b": 60.8}
MXFP4 = {
    "modules_to_not_convert": [
        "model.layers.*.self_attn",
        "model.layers.*.mlp.router",
        "model.embed_tokens",
        "lm_head",
    ],
    "quant_method": "mxfp4",
}
FP8 = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}


@pytest.mark.parametrize("name", ["gpt-oss-20b", "gpt-oss-120b", "DeepSeek-V3"])
def test_published_quantised_configs_are_planned(tmp_path, runner, name):
    model = next(m for m in json.loads((DATA / "real-models-2.json").read_text()) if m["name"] == name)
    quantization = FP8 if name == "DeepSeek-V3" else MXFP4
    config = {"model_type": model["model_type"]} | model["config"] | {"quantization_config": quantization}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = runner.invoke(app, ["plan", str(tmp_path), "-n", "1024", "--json"])
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)["weights_stored"]["bytes"]
    if name in CHECKPOINT_GIB:
        assert round(stored / 2**30, 1) == CHECKPOINT_GIB[name]
    else:  # one byte a weight of the blocks' matrices, with their scales, under 16 bits for everything
        assert model["total_params"] < stored < 1.01 * model["total_params"]
