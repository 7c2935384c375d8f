"""Checkpoints whose tensors transformers renames on loading (its conversion mapping) and names back on saving: tfm
reads the files' names and the names transformers holds alike (the family's aliases) and runs the same model; the
files' extra layers that transformers skips (multi-token prediction) are skipped alike."""

from __future__ import annotations

import numpy as np
from helpers_hf_transformers import TOL, build, relative, theirs, unpadded
from hf_exact import exact
from safetensors.numpy import load_file, save_file

from transformer_cli import Transformer
from transformer_cli.hf.config import spec_from_config
from transformer_cli.tasks.sources import load_weights

HY_V3 = ((".mlp.router.gate.weight", ".mlp.gate.weight"), (".mlp.expert_bias", ".mlp.e_score_correction_bias"))
HY_V3 += ((".mlp.shared_mlp.", ".mlp.shared_experts."),)  # (the file's names, transformers' names)


def test_hy_v3s_names_as_transformers_holds_them_and_its_prediction_layer_read_as_the_files_names(tmp_path):
    model = build("hy_v3")
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    renamed = {}
    for name, array in tensors.items():
        for ours, theirs_ in HY_V3:
            name = name.replace(ours, theirs_)
        renamed[name] = array
    assert renamed.keys() != tensors.keys()  # (the control: the names did change)
    renamed["model.layers.80.mlp.gate_proj.weight"] = np.zeros((4, 4))  # (its multi-token prediction layer)
    save_file(renamed, tmp_path / "model.safetensors", metadata={"format": "pt"})
    spec = spec_from_config(tmp_path)
    ids = unpadded(spec)
    ours = Transformer(spec, load_weights(tmp_path, spec))(ids)
    assert relative(ours, theirs(exact(model), ids)) < TOL


def test_apertus_xielu_constants_in_its_files_are_checked_not_read(tmp_path):
    """xIELU's beta and eps are buffers transformers reads from the file; tfm holds them as constants (1/2, -1e-6):
    a file whose eps is another is refused in one line naming the tensor (the control of the exact runs)."""
    import pytest

    from transformer_cli import ArrayError

    model = build("apertus")
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    assert np.isclose(float(tensors["model.layers.0.mlp.act_fn.eps"]), -1e-6, rtol=1e-2)
    tensors["model.layers.1.mlp.act_fn.eps"] = np.array(-0.5, dtype=tensors["model.layers.1.mlp.act_fn.eps"].dtype)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    spec = spec_from_config(tmp_path)
    with pytest.raises(ArrayError, match=r"model\.layers\.1\.mlp\.act_fn\.eps \(model\.safetensors\) is -0\.5"):
        load_weights(tmp_path, spec)["blocks.0.ff.W1"]
