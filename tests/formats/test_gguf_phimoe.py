"""A PhiMoE GGUF file as llama.cpp's converter writes Phi-3.5-MoE's: read as the model transformers runs, from what
the file holds. The file keeps neither config.json's short_mscale/long_mscale (the converter writes Phi-3's formula
as rope.scaling.attn_factor) nor sparsemixer's threshold (router_jitter_noise: transformers' default, 0.01); tfm
takes the file's factor and that threshold, and transformers' PhiMoE turns by the short factors at every length."""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import pytest
from gguf_files import dequantised_model, write_gguf
from helpers_hf_transformers import IDS, TOL, build, relative, theirs
from hf_exact import exact

from transformer_cli import Transformer
from transformer_cli.gguf.model import GGUFWeights, spec_from_gguf

pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")

FACTOR = math.sqrt(1 + math.log(64 / 8) / math.log(8))  # Phi3MiniModel's attn_factor: context 64, original 8


def _as_the_file_holds(model):
    """The same weights with what the file keeps: the converter's attention factor, transformers' threshold."""
    model = copy.deepcopy(model)
    model.config.rope_parameters |= {"short_mscale": FACTOR, "long_mscale": FACTOR}
    for module in model.modules():
        if hasattr(module, "router_jitter_noise"):
            module.router_jitter_noise = 0.01
    return model


@pytest.mark.parametrize("qtype", ["F32", "Q8_0"])
def test_a_phimoe_file_runs_as_transformers_with_what_the_file_holds(tmp_path, qtype):
    model = build("phimoe")  # long factors unlike the short ones, mscale 1.25, threshold 0.4
    path = write_gguf(model, tmp_path / "m.gguf", qtype)
    spec = spec_from_gguf(path)
    assert spec.router_score == "sparsemixer" and spec.k == 2 and spec.router_jitter == 0.01
    assert math.isclose(spec.rope_attention_factor, FACTOR, rel_tol=1e-12)
    assert spec.rope_long_factor == spec.rope_short_factor == (1.0, 1.1, 1.3, 1.5)
    assert spec.norm_type == "layernorm" and spec.head_bias and spec.attention_bias and spec.window == 6
    ours = Transformer(spec, GGUFWeights(path, spec))(IDS)
    reference = theirs(exact(dequantised_model(_as_the_file_holds(model), qtype)), IDS)
    assert relative(ours, reference) < TOL
    # the controls: config.json's own mscale and threshold, which the file lost, compute something else; and so
    # does llama.cpp's routing of these files (a softmax over the top two, renormalised) in place of sparsemixer
    assert relative(ours, theirs(exact(dequantised_model(copy.deepcopy(model), qtype)), IDS)) > 1e-3
    softmax = replace(spec, router_score="softmax", router_renorm=True)
    assert relative(Transformer(softmax, GGUFWeights(path, softmax))(IDS), reference) > 1e-3


def test_a_phimoe_file_choosing_other_than_two_experts_is_refused_in_one_line(tmp_path, runner):
    from transformer_cli.cli import app

    model = build("phimoe-gguf")
    model.config.num_experts_per_tok = 3  # (the converter writes the config's count; sparsemixer chooses two)
    path = write_gguf(model, tmp_path / "m.gguf")
    result = runner.invoke(app, ["count", str(path)])
    assert result.exit_code == 2 and "expert_used_count" in result.stderr and "two experts" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
