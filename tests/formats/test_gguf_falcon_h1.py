"""Falcon-H1's GGUF files (falcon-h1): the converter folds every multiplier into the weights it multiplies, so a file
is the model without multipliers whose weights are the folded ones. tfm writes the converter's bytes (its folding
emulated in tests/formats/gguf_metadata_mixers.py, in its order), reads the file as that model (transformers on a
folder of it gives tfm's logits), which is the original up to the folding's rounding; what llama.cpp cannot run is
refused. llama.cpp's own logits on these files: benchmarks/gguf_llama_cpp.py."""

from __future__ import annotations

from dataclasses import replace

import pytest
from gguf_files import write_gguf
from helpers_gguf_write import _tensors
from helpers_hf_transformers import IDS, TOL, build, relative, theirs
from hf_exact import exact

from transformer_cli import Transformer
from transformer_cli.cli import app
from transformer_cli.errors import SpecError
from transformer_cli.gguf.model import GGUFWeights, spec_from_gguf
from transformer_cli.gguf.write import write_gguf as tfm_write_gguf
from transformer_cli.hf.config import spec_from_config
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")
pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")

NAMES = ["falcon_h1", "falcon_h1-norm-after-gate-tied-gguf"]


@pytest.mark.parametrize("qtype", ["F32", "F16", "Q8_0"])
@pytest.mark.parametrize("name", NAMES)
def test_tfm_writes_the_converters_folded_weights(tmp_path, runner, name, qtype):
    model = build(name)
    model.save_pretrained(tmp_path / "hf")
    result = runner.invoke(
        app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "tfm.gguf"), "--type", qtype.lower()]
    )
    assert result.exit_code == 0, result.output
    ours, theirs_ = _tensors(tmp_path / "tfm.gguf"), _tensors(write_gguf(model, tmp_path / "ref.gguf", qtype))
    assert sorted(ours) == sorted(theirs_) and "blk.0.ffn_norm" in ours  # (the pre-MLP norm without .weight)
    assert all(ours[tensor] == theirs_[tensor] for tensor in theirs_)


@pytest.mark.parametrize("name", NAMES)
def test_a_file_is_the_model_with_its_multipliers_folded(tmp_path, runner, name):
    model = build(name)
    model.save_pretrained(tmp_path / "hf")
    path = write_gguf(model, tmp_path / "m.gguf")
    spec = spec_from_gguf(path)
    assert (spec.parallel_scales, spec.ssm_scales, spec.ff_scales, spec.embed_scale) == (None, None, None, "none")
    assert spec.logit_scale == 1.0 and not spec.tie_embeddings  # (a tied model's head held apart, scaled)
    ours = Transformer(spec, GGUFWeights(path, spec))(IDS)
    back = runner.invoke(app, ["convert", str(path), "-o", str(tmp_path / "folded"), "--dtype", "float64"])  # (A_log
    # = log(-A) of the file's ssm_a, not rounded again)
    assert back.exit_code == 0, back.output
    folded = transformers.FalconH1ForCausalLM.from_pretrained(tmp_path / "folded", dtype=torch.float64)
    assert relative(ours, theirs(exact(folded), IDS)) < TOL  # the file's model, exactly
    original = theirs(exact(model), IDS)
    assert 0 < relative(ours, original) < 1e-6  # the original, up to the folding's float32 rounding
    hf_spec = spec_from_config(tmp_path / "hf")
    twice = replace(hf_spec, tie_embeddings=False)  # the control: the multipliers applied to the folded weights
    assert relative(Transformer(twice, GGUFWeights(path, spec))(IDS), original) > 1e-3


def test_what_llama_cpp_cannot_run_is_refused_and_nothing_written(tmp_path, runner):
    build("falcon_h1-norm-before-gate-biases-tied").save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "m.gguf")])
    assert result.exit_code == 2 and "attention_bias: llama.cpp adds no bias of the attention's output" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]
    build("falcon_h1").save_pretrained(tmp_path / "plain")
    spec = replace(spec_from_config(tmp_path / "plain"), ssm_norm="before_gate")
    weights = load_weights(tmp_path / "plain", spec_from_config(tmp_path / "plain"))
    with pytest.raises(SpecError, match="ssm_norm before_gate: llama.cpp gates first"):
        tfm_write_gguf(tmp_path / "n.gguf", spec, "falcon_h1", weights, "F32")
    assert not (tmp_path / "n.gguf").exists()
