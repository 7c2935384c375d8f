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
