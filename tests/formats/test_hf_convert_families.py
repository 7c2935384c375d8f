"""`tfm convert` on every family's folder, there and back: Hugging Face folder -> tfm's weights -> folder holds
exactly the tensors transformers saved, by name, shape and value (so transformers loads the result as it loaded
the original), for the layouts that fuse, stack or split tensors (experts on a leading axis, a norm per head)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers_hf_transformers import IDS, build, relative, theirs
from hf_models import MODELS

from transformer_cli.cli import app

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")
load_file = pytest.importorskip(
    "safetensors.numpy", reason="the folders are read back by safetensors (the test extra)"
).load_file

FAMILIES = [
    "llama",
    "gpt_neox",
    "gpt2",
    "bert",
    "roberta",
    "distilbert",
    "gpt_neo-global-local",
    "mixtral",
    "qwen2_moe",
    "qwen3_moe",
    "gemma2",
    "gemma3_text",
    "olmo2",
    "deepseek_v2",
    "deepseek_v3",
    "gpt_oss",
    "gptj",
    "opt",
    "bloom",
    "starcoder2",
    "stablelm-parallel",
    "stablelm-qk-layernorm",
    "phi3-longrope",
    "granite",
    "cohere",
    "cohere-qk-norm",
    "phimoe",
    "opt-350m-projected",
    "opt-projected-pre-untied",
    "electra",
    "electra-one-width",
    "albert",
    "albert-two-groups",
    "mpnet",
    "modernbert",
    "modernbert-biases-every-2",
    "modernbert-decoder",
    "modernbert-decoder-biases-untied",
    "deberta-v2",
    "deberta-v2-absolute",
    "laguna",
    "laguna-per-entry-capped",
    "jetmoe",
    "jetmoe-untied-one-head",
    "mimo_v2_flash",
    "mimo_v2_flash-groups-biased",
    "longcat_flash",
    "longcat_flash-yarn-no-zero",
    "gemma4_text",
    "gemma4_text-default-kinds",
    "gemma4_text-k-eq-v",
    "gemma4_text-moe",
    "gemma4_text-ple",
    "gemma4_text-ple-moe-k-eq-v",
    "gemma4_text-kv-shared",
    "gemma4_text-kv-shared-moe",
    "gemma3n_text",
    "gemma3n_text-kv-shared",
    "gemma3n_text-active-1-untied",
    "apertus",  # (xIELU's fixed beta and eps buffers written back: transformers reads them from the file)
    "apertus-biases-silu",
    "deepseek_v32-yarn-wide-index-listed",  # (the indexers' tensors and kinds written back: issue 45's)
    "glm_moe_dsa-shared",
    "kimi_linear",  # (Moonshot's names, its per-head A_log as (1, 1, H, 1))
    "falcon_h1-norm-before-gate-biases-tied",
    "qwen4_exp_text",  # (its gated streams' weights, the indexer's [q; k] in one)
    "mistral_large4_text",  # (Mistral's names, its NoPE layers' latents without a rotary part)
    "glm5_next_text",  # (its streams' weights, indexer pools and KDA under GLM's names)
    "zamba2",  # (each shared block once, at its first use's layer, every use's adapters under it)
    "hy_v4",  # (its streams' weights, sinks and gates under their checkpoints' names, hc_pre. and linear_gate)
    "deepseek_v4",  # (its checkpoints' names, the pools' and the indexer's, its table of experts by id as int64)
    "qwen4_exp_text-ngrams",  # (its n-gram tables in shards, their numbers as int64)
]


def _tensors(folder):
    out = {}
    for file in sorted(folder.glob("*.safetensors")):
        out |= load_file(file)
    return out


@pytest.mark.parametrize("name", FAMILIES)
def test_a_folder_converts_to_tfm_and_back_to_the_same_tensors(tmp_path, name, runner):
    build(name).save_pretrained(tmp_path / "hf")
    first = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "w.safetensors")])
    assert first.exit_code == 0, first.output
    back = runner.invoke(app, ["convert", str(tmp_path / "w.safetensors"), "-o", str(tmp_path / "again")])
    assert back.exit_code == 0, back.output
    before, after = _tensors(tmp_path / "hf"), _tensors(tmp_path / "again")
    assert sorted(after) == sorted(before)
    unread = _zero_experts(before, name)
    for key, array in before.items():
        array = np.zeros_like(array) if key in unread else array
        assert after[key].shape == array.shape and np.array_equal(after[key].astype(np.float64), array), key
        assert after[key].dtype == array.dtype or array.dtype.kind == "f", key  # (DeepSeek-V4's ids: int64)


def _zero_experts(tensors: dict, name: str) -> set[str]:
    """LongCat-Flash's gate and up projections of its zero experts (experts.{e} past n_routed_experts), which
    transformers allocates, saves and never reads: tfm writes them back as zeros."""
    if not name.startswith("longcat_flash"):
        return set()
    E = MODELS[name][2]["n_routed_experts"]
    return {key for key in tensors if (found := re.search(r"\.experts\.(\d+)\.", key)) and int(found[1]) >= E}


def test_a_longcat_folder_tfm_writes_runs_in_transformers_as_the_original(tmp_path, runner):
    """The zero experts' projections tfm writes as zeros are never read: transformers loads tfm's folder (it
    refuses one without them) and gives the original's logits."""
    model = build("longcat_flash")
    model.save_pretrained(tmp_path / "hf")
    assert runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "w.safetensors")]).exit_code == 0
    assert (
        runner.invoke(app, ["convert", str(tmp_path / "w.safetensors"), "-o", str(tmp_path / "again")]).exit_code == 0
    )
    again = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "again", dtype=torch.float64)
    zeros = again.model.layers[0].mlp.experts.gate_up_proj[MODELS["longcat_flash"][2]["n_routed_experts"] :]
    assert zeros.abs().max() == 0 and model.model.layers[0].mlp.experts.gate_up_proj.abs().max() > 0
    assert relative(theirs(again.eval(), IDS), theirs(model, IDS)) < 1e-15
