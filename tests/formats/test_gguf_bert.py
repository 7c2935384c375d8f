"""GGUF BERT files (BERT, RoBERTa, XLM-RoBERTa, DistilBERT) written as convert_hf_to_gguf.py's BertModel writes
them: the encoder's last hidden state equals transformers' BertModel on the same dequantised weights (float64)
within 1e-10; the file holds no pooler (the converter drops it) and RoBERTa's positions from 0."""

from __future__ import annotations

import copy

import pytest
from gguf_files import dequantised_model, write_gguf
from helpers_hf_transformers import TOL, build, relative, theirs, unpadded
from hf_exact import exact

from transformer_cli import Transformer
from transformer_cli.gguf.model import GGUFWeights, spec_from_gguf
from transformer_cli.hf.config import spec_from_config

pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")
torch = pytest.importorskip("torch", reason="the references run on PyTorch")

# (a ReLU DistilBERT: no file says ReLU); EuroBERT's architecture is its own (eurobert), LLaMA's names
ENCODERS = [
    *("bert", "roberta", "xlm-roberta-pad-3", "distilbert"),
    *("eurobert", "eurobert-biases", "modernbert", "modernbert-biases-every-2"),
]


@pytest.mark.parametrize("qtype", ["F32", "F16", "Q8_0", "Q4_0"])
@pytest.mark.parametrize("name", ENCODERS)
def test_an_encoders_gguf_computes_its_last_hidden_state(tmp_path, name, qtype):
    model = build(name)
    model.save_pretrained(tmp_path / "hf")
    path = write_gguf(model, tmp_path / "m.gguf", qtype)
    spec, folder = spec_from_gguf(path), spec_from_config(tmp_path / "hf")
    kept = {k: v for k, v in folder.model_keys().items() if k not in ("pooler", "position_offset", "pad_id")}
    table = {"max_len": folder.max_len} if folder.max_len else {}  # (RoBERTa's table already sliced)
    assert spec.model_keys() == kept | table
    ids = unpadded(folder)
    reference = theirs(exact(dequantised_model(copy.deepcopy(model), qtype)), ids)
    assert relative(Transformer(spec, GGUFWeights(path, spec))(ids), reference) < TOL


def test_an_encoders_gguf_converts_to_tfms_file_and_refuses_a_folder_in_one_line(tmp_path, runner):
    from transformer_cli.cli import app

    model = build("bert")
    path = write_gguf(model, tmp_path / "m.gguf", "Q8_0")
    result = runner.invoke(app, ["convert", str(path), "-o", str(tmp_path / "w.safetensors")])
    assert result.exit_code == 0, result.output
    refused = runner.invoke(app, ["convert", str(path), "-o", str(tmp_path / "folder")])
    assert refused.exit_code == 2 and "no Hugging Face folder of a GGUF bert file" in " ".join(refused.stderr.split())
    assert not (tmp_path / "folder").exists()
