"""Gemma 4's files beyond what transformers saves: keys and values held for the layers that share an earlier layer's
(transformers ignores them on load, its _keys_to_ignore_on_load_unexpected), read past as it does; a layer's own
still required."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_hf_transformers import IDS, TOL, build, relative, theirs
from hf_exact import exact

from transformer_cli import ArrayError, Transformer
from transformer_cli.hf.config import spec_from_config
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")
safetensors = pytest.importorskip("safetensors.torch", reason="the test extra installs safetensors")


def test_keys_and_values_a_file_holds_for_its_sharing_layers_are_read_past_as_transformers_does(tmp_path):
    model = build("gemma4_text-kv-shared")  # six layers, the last two sharing layers 2 and 3's
    model.save_pretrained(tmp_path)
    file = tmp_path / "model.safetensors"
    tensors = safetensors.load_file(file)
    for i, source in ((4, 2), (5, 3)):  # as a checkpoint made before the sharing was known might hold them
        for name in ("k_proj.weight", "v_proj.weight", "k_norm.weight"):
            own = tensors[f"model.layers.{source}.self_attn.{name}"]
            tensors[f"model.layers.{i}.self_attn.{name}"] = torch.randn_like(own)
    safetensors.save_file(tensors, file, metadata={"format": "pt"})
    again = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float64).eval()
    spec = spec_from_config(tmp_path)
    ours = Transformer(spec, load_weights(tmp_path, spec))(IDS)
    assert relative(ours, theirs(exact(again), IDS)) < TOL
    assert relative(ours, theirs(exact(model), IDS)) < TOL

    del tensors["model.layers.2.self_attn.k_proj.weight"]  # (control: a layer's own keys are still required)
    safetensors.save_file(tensors, file, metadata={"format": "pt"})
    with pytest.raises(ArrayError, match=r"missing model\.layers\.2\.self_attn\.k_proj\.weight"):
        load_weights(tmp_path, spec)
    assert np.isfinite(ours).all()
