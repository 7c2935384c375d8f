"""tfm convert FOLDER -o FILE.gguf: the file holds tensor for tensor (name, type, bytes) what llama.cpp's converter
writes (tests/formats/gguf_files.py, independent of tfm's writer), reads back as the folder's model, and a model the
format cannot hold is refused in one line, nothing written."""

from __future__ import annotations

import numpy as np
import pytest
from gguf_files import write_gguf
from helpers_gguf import FAMILIES
from helpers_gguf_write import _tensors
from helpers_hf_transformers import build

from transformer_cli.cli import app
from transformer_cli.gguf.model import spec_from_gguf
from transformer_cli.hf.config import spec_from_config

pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")


@pytest.mark.parametrize("qtype", ["F32", "F16", "BF16", "Q8_0", "Q4_0"])
@pytest.mark.parametrize("name", FAMILIES)
def test_tfm_writes_what_the_converter_writes(tmp_path, runner, name, qtype):
    model = build(name)
    model.save_pretrained(tmp_path / "hf")
    result = runner.invoke(
        app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "tfm.gguf"), "--type", qtype.lower()]
    )
    assert result.exit_code == 0, result.output
    ours, theirs = _tensors(tmp_path / "tfm.gguf"), _tensors(write_gguf(model, tmp_path / "ref.gguf", qtype))
    assert sorted(ours) == sorted(theirs)
    for tensor, (kind, shape, raw) in theirs.items():
        assert ours[tensor][:2] == (kind, shape), tensor
        if tensor == "rope_freqs.weight":  # Llama 3's factors: tfm's formula in float64 rounded, the converter's in
            mine, its = (np.frombuffer(b, np.float32) for b in (ours[tensor][2], raw))  # float32 steps: ulps apart
            np.testing.assert_allclose(mine, its, rtol=1e-6)
            continue
        assert ours[tensor][2] == raw, tensor
    assert spec_from_gguf(tmp_path / "tfm.gguf").model_keys() == spec_from_config(tmp_path / "hf").model_keys()


def test_a_model_the_format_cannot_hold_is_refused_and_nothing_written(tmp_path, runner):
    """Mistral's window is not in a GGUF llama file: refused naming it (the converter writes it, window lost)."""
    model = build("mistral")
    model.save_pretrained(tmp_path / "hf")
    assert spec_from_config(tmp_path / "hf").window
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "m.gguf")])
    assert result.exit_code == 2 and "cannot hold this model (window would differ" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]


def test_tfms_weights_file_converted_from_a_folder_writes_the_same_gguf(tmp_path, runner):
    model = build("qwen3")
    model.save_pretrained(tmp_path / "hf")
    for args in (
        ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "w.safetensors")],
        ["convert", str(tmp_path / "w.safetensors"), "-o", str(tmp_path / "a.gguf"), "--type", "q8_0"],
        ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "b.gguf"), "--type", "q8_0"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    assert _tensors(tmp_path / "a.gguf") == _tensors(tmp_path / "b.gguf")
    again = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "b.gguf")])
    assert again.exit_code == 2 and "already exists" in again.stderr
    assert np.any(np.frombuffer((tmp_path / "b.gguf").read_bytes()[:4], np.uint8))


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "F16"])
def test_tensors_not_named_weight_stay_f32_and_the_file_type_is_written(tmp_path, runner, qtype):
    """convert_hf_to_gguf.py keeps every tensor whose name does not end in .weight in F32 (gpt-oss's experts'
    biases, 2-D) and writes general.file_type and general.quantization_version: read back by the gguf package."""
    import gguf

    model = build("gpt_oss-gguf")
    model.save_pretrained(tmp_path / "hf")
    out = tmp_path / "m.gguf"
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(out), "--type", qtype.lower()])
    assert result.exit_code == 0, result.output
    reader = gguf.GGUFReader(out)
    types = {t.name: (t.tensor_type.name, len(t.shape)) for t in reader.tensors}
    biases = {name: kind for name, (kind, dims) in types.items() if not name.endswith(".weight")}
    assert {"blk.0.ffn_gate_exps.bias", "blk.0.ffn_up_exps.bias", "blk.0.ffn_down_exps.bias"} <= set(biases)
    assert types["blk.0.ffn_gate_exps.bias"][1] == 2 and set(biases.values()) == {"F32"}
    assert types["blk.0.ffn_gate_exps.weight"][0] == qtype  # (the control: the experts' weights in the type asked)
    assert reader.fields["general.file_type"].contents() == gguf.LlamaFileType[f"MOSTLY_{qtype}"]
    assert reader.fields["general.quantization_version"].contents() == gguf.GGML_QUANT_VERSION
