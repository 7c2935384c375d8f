"""GGUF DeepSeek (deepseek2) beyond tests/formats/test_gguf.py's families: V3's YaRN, whose mscale the file keeps
as yarn_log_multiplier (0.1 mscale_all_dim), and a file of an older converter, which kept kv_b whole."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")
torch = pytest.importorskip("torch", reason="the references run on PyTorch")

import gguf_files  # noqa: E402
from gguf_files import dequantised_model, write_gguf  # noqa: E402
from helpers_hf_transformers import IDS, TOL, build, relative, theirs  # noqa: E402
from hf_exact import exact  # noqa: E402

from transformer_cli import Transformer  # noqa: E402
from transformer_cli.gguf.model import GGUFWeights, spec_from_gguf  # noqa: E402
from transformer_cli.hf.config import spec_from_config  # noqa: E402


@pytest.mark.parametrize("qtype", ["F32", "Q8_0"])
def test_v3s_yarn_is_read_back_from_the_log_multiplier(tmp_path, qtype):
    model = build("deepseek_v3-gguf-yarn")
    model.save_pretrained(tmp_path / "hf")
    path = write_gguf(model, tmp_path / "m.gguf", qtype)
    spec = spec_from_gguf(path)
    assert spec.model_keys() == spec_from_config(tmp_path / "hf").model_keys()
    assert spec.rope_mscale_all_dim == pytest.approx(0.8, rel=1e-7) and spec.scale != "sqrt"
    reference = theirs(exact(dequantised_model(copy.deepcopy(model), qtype)), IDS)
    assert relative(Transformer(spec, GGUFWeights(path, spec))(IDS), reference) < TOL


def test_an_older_converters_whole_kv_b_is_read_as_the_split_one(tmp_path, monkeypatch):
    model = build("deepseek_v2")
    split = write_gguf(model, tmp_path / "split.gguf", "F32")
    split_kv_b = gguf_files._deepseek

    def whole(tensors, cfg):  # the converter before April 2025: kv_b_proj as it is
        for name, data in split_kv_b(tensors, cfg):
            if "k_b_proj" in name:
                yield name.replace("k_b_proj", "kv_b_proj"), tensors[name.replace("k_b_proj", "kv_b_proj")]
            elif "v_b_proj" not in name:
                yield name, data

    monkeypatch.setattr(gguf_files, "_deepseek", whole)
    old = write_gguf(model, tmp_path / "whole.gguf", "F32")
    spec = spec_from_gguf(old)
    assert "blk.0.attn_kv_b.weight" in GGUFWeights(old, spec).header.tensors
    a, b = GGUFWeights(old, spec), GGUFWeights(split, spec_from_gguf(split))
    assert (a["blocks.0.attention.W_KVB"] == b["blocks.0.attention.W_KVB"]).all()
    assert relative(Transformer(spec, a)(IDS), theirs(exact(dequantised_model(copy.deepcopy(model), "F32")), IDS)) < TOL
