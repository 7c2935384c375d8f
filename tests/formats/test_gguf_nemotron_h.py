"""Nemotron-H's GGUF files (nemotron_h, and nemotron_h_moe where blocks route): tfm writes the converter's bytes
(its steps emulated in tests/formats/gguf_metadata_mixers.py, its choice of architecture and widths mended), reads
a file as llama.cpp runs it: transformers' model without its clamp of the state space's steps (llama.cpp clamps
none), which tfm says when it writes; what llama.cpp cannot run is refused. llama.cpp's own logits on these files:
benchmarks/gguf_llama_cpp.py."""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import pytest
from gguf_files import dequantised_model, write_gguf
from helpers_gguf_write import _tensors
from helpers_hf_transformers import IDS, TOL, build, relative, theirs
from hf_exact import exact

from transformer_cli import Transformer
from transformer_cli.cli import app
from transformer_cli.gguf.header import read_header
from transformer_cli.gguf.model import GGUFWeights, spec_from_gguf
from transformer_cli.hf.config import spec_from_config

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")
pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")

NAMES = {"nemotron_h-dense-gguf": "nemotron_h", "nemotron_h-moe-groups-gguf": "nemotron_h_moe"}


@pytest.mark.parametrize("qtype", ["F32", "Q8_0"])
@pytest.mark.parametrize("name", NAMES)
def test_tfm_writes_what_the_converter_writes_and_says_what_llama_cpp_runs_otherwise(tmp_path, runner, name, qtype):
    model = build(name)
    model.save_pretrained(tmp_path / "hf")
    result = runner.invoke(
        app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "tfm.gguf"), "--type", qtype.lower()]
    )
    assert result.exit_code == 0, result.output
    assert "llama.cpp clamps no step of the state space" in result.output
    assert read_header(tmp_path / "tfm.gguf").metadata["general.architecture"] == NAMES[name]
    ours, theirs_ = _tensors(tmp_path / "tfm.gguf"), _tensors(write_gguf(model, tmp_path / "ref.gguf", qtype))
    assert sorted(ours) == sorted(theirs_)
    assert all(ours[tensor] == theirs_[tensor] for tensor in theirs_)


def _unclamped(model):
    """transformers' model as llama.cpp runs it: no clamp of a prefill's steps at time_step_min."""
    for module in model.modules():
        if hasattr(module, "time_step_limit"):
            module.time_step_limit = (0.0, math.inf)
    return model


@pytest.mark.parametrize("name", NAMES)
def test_a_file_is_the_model_llama_cpp_runs(tmp_path, name):
    model = build(name)
    model.save_pretrained(tmp_path / "hf")
    path = write_gguf(model, tmp_path / "m.gguf")
    spec, folder = spec_from_gguf(path), spec_from_config(tmp_path / "hf")
    assert spec.ssm_dt_min is None and folder.ssm_dt_min == 0.001
    assert (
        replace(spec, context=None).model_keys()
        == replace(folder, ssm_dt_min=None, context=None, r=folder.expert_r if folder.E else folder.r).model_keys()
    )
    ours = Transformer(spec, GGUFWeights(path, spec))(IDS)
    assert relative(ours, theirs(exact(_unclamped(dequantised_model(model, "F32"))), IDS)) < TOL
    low = build(name)  # the control: steps far below the clamp, where transformers and llama.cpp part
    for module in low.modules():
        if hasattr(module, "dt_bias"):
            module.dt_bias.data.fill_(-12.0)
    path = write_gguf(low, tmp_path / "low.gguf")
    read = Transformer(spec, GGUFWeights(path, spec))(IDS)
    assert relative(read, theirs(exact(_unclamped(dequantised_model(copy.deepcopy(low), "F32"))), IDS)) < TOL
    assert relative(read, theirs(exact(low), IDS)) > 1e-6


@pytest.mark.parametrize(
    ("name", "lost"),
    [
        ("nemotron_h", "feedforward_layers: llama.cpp routes every feedforward block"),  # (MLP and experts)
        ("nemotron_h-groups-dense", "feedforward_layers"),
    ],
)
def test_what_llama_cpp_cannot_run_is_refused_and_nothing_written(tmp_path, runner, name, lost):
    build(name).save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "m.gguf")])
    assert result.exit_code == 2 and "cannot hold this model" in result.stderr and lost in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]
