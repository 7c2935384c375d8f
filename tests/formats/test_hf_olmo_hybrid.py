"""OLMo-Hybrid's convolution over [q; k; v] is one tensor in transformers' model and three in its files, and the
files split its rows two ways: AI2's published checkpoints hold the query's, key's and value's rows (q_conv1d,
k_conv1d, v_conv1d), transformers' save_pretrained three equal chunks (torch.chunk: 19, 19 and 18 rows of 56).
transformers reads either as their concatenation, and so does tfm; tfm writes the published split."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_hf_transformers import IDS, TOL, build, relative, theirs
from hf_exact import exact
from safetensors.numpy import load_file, save_file

from transformer_cli import Transformer
from transformer_cli.cli import app
from transformer_cli.errors import ArrayError
from transformer_cli.hf.config import spec_from_config
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

CONV = "model.layers.0.linear_attn.{}_conv1d.weight"


def _resplit(folder, rows):
    """The folder's block-0 convolution held with its rows split as `rows` (q, k, v)."""
    tensors = load_file(folder / "model.safetensors")
    whole = np.concatenate([tensors.pop(CONV.format(x)) for x in "qkv"])
    starts = np.cumsum([0, *rows])
    tensors |= {CONV.format(x): whole[a:b].copy() for x, a, b in zip("qkv", starts, starts[1:], strict=False)}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})


def test_the_convolution_is_read_however_its_rows_are_split(tmp_path):
    model = build("olmo_hybrid")
    model.save_pretrained(tmp_path)
    held = load_file(tmp_path / "model.safetensors")
    assert [held[CONV.format(x)].shape[0] for x in "qkv"] == [19, 19, 18]  # (transformers' chunks)
    reference = theirs(exact(model), IDS)
    spec = spec_from_config(tmp_path)
    assert relative(Transformer(spec, load_weights(tmp_path, spec))(IDS), reference) < TOL
    _resplit(tmp_path, (16, 16, 24))  # (the published: key_dim, key_dim, value_dim)
    assert relative(Transformer(spec, load_weights(tmp_path, spec))(IDS), reference) < TOL


def test_a_convolution_whose_parts_do_not_make_it_up_is_refused_in_one_line(tmp_path, runner):
    build("olmo_hybrid").save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    tensors[CONV.format("v")] = tensors[CONV.format("v")][:-2].copy()
    save_file(tensors, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    spec = spec_from_config(tmp_path)
    with pytest.raises(
        ArrayError, match=r"q_conv1d.weight \(19, 1, 3\) \+ .*v_conv1d.weight \(16, 1, 3\).*\(56, 1, 3\)"
    ):
        load_weights(tmp_path, spec)
    result = runner.invoke(app, ["count", str(tmp_path)])
    assert result.exit_code != 0 and "v_conv1d" in result.output and "Traceback" not in result.output


def test_tfm_writes_the_published_split_and_transformers_reads_it_as_the_original(tmp_path, runner):
    model = build("olmo_hybrid-nope-gqa-positive-beta")
    model.save_pretrained(tmp_path / "hf")
    assert runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "w.safetensors")]).exit_code == 0
    back = runner.invoke(app, ["convert", str(tmp_path / "w.safetensors"), "-o", str(tmp_path / "again")])
    assert back.exit_code == 0, back.output
    written = load_file(tmp_path / "again" / "model.safetensors")
    assert [written[CONV.format(x).replace(".0.", ".1.")].shape[0] for x in "qkv"] == [16, 16, 24]
    before = load_file(tmp_path / "hf" / "model.safetensors")
    assert sorted(written) == sorted(before)  # (the files' names: attention_layer_norm, feedforward_layer_norm)
    again = transformers.OlmoHybridForCausalLM.from_pretrained(tmp_path / "again", dtype=torch.float64)
    assert np.array_equal(theirs(again, IDS), theirs(model, IDS))
