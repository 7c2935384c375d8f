"""GGUF files of the families of 2026 (issue 44): what their converters drop is refused when tfm writes a file, in
one line naming the keys that would differ, and nothing is written; the files themselves are tested with every
other family's (tests/formats/test_gguf.py, test_gguf_write.py: helpers_gguf.FAMILIES)."""

from __future__ import annotations

import numpy as np
import pytest
from gguf_files import write_gguf
from helpers_hf_transformers import IDS, build

from transformer_cli import Transformer
from transformer_cli.cli import app
from transformer_cli.errors import ArrayError, SpecError
from transformer_cli.gguf.model import GGUFWeights, spec_from_gguf

pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")


@pytest.mark.parametrize(
    ("name", "lost"),
    [
        ("olmoe-renorm", "router_renorm"),  # OlmoeModel writes no expert_weights_norm; llama.cpp's olmoe: norm_w false
        ("olmoe-clipped", "qkv_clip"),  # nor clamp_kqv, which llama.cpp's olmoe does not read
        ("ministral3-plain-window", "window"),  # Ministral3Model writes no window; llama.cpp's mistral3 has none
        ("mpt-scaled-untied", "scale"),  # MPTModel writes no softmax_scale (nor the eps: 1e-5 always)
        ("llama4_text", "chunk"),  # llama.cpp's llama4: chunks of 8,192 and its temperature constants, always
        ("exaone_moe-listed", "feedforward_layers"),  # ExaoneMoEModel: dense layers first only
        ("ernie4_5_moe-interval", "feedforward_layers"),  # Ernie4_5MoeModel writes no moe_layer_end_index
        ("dbrx-unnormalised-mha", "router_renorm"),  # llama.cpp's dbrx renormalises (p = 1) always
        ("glm4_moe_lite", "feedforward_layers"),  # deepseek2: leading dense layers only
        ("afmoe", "embed_scale"),  # llama.cpp's afmoe scales the embedding by sqrt(d) (MuP) always
        ("gemma4_text-k-eq-v", "attention_bias"),  # llama.cpp's gemma4 reads no attention biases
        ("gemma3n_text", "ple_vocab"),  # Gemma3NModel pads the per-layer table with zero rows, not row 0's
        ("gemma3n_text-active-1-untied", "altup_correct_scale"),  # llama.cpp's gemma3n scales the stream always
        ("apertus-biases-silu", "ff.alpha_p"),
        ("granitemoehybrid-dense-rope", "ssm_bias"),  # llama.cpp's Mamba-2 loads no bias of its projections
        ("granitemoehybrid-narrow", "ssm_head_dim"),  # llama.cpp's granitehybrid: mamba_expand 2 only
        ("mimo_v2_flash-groups-biased", "router_scale"),  # llama.cpp's mimo2 reads no scale, no q/k/v biases,
        ("mimo_v2_flash-groups-biased", "attention_bias"),  # one rotated count for both kinds
        (
            "mimo_v2_flash-groups-biased",
            "rope_local_fraction",
        ),  # llama.cpp's apertus runs xIELU whatever the activation
    ],
)
def test_what_the_architecture_cannot_hold_is_refused(tmp_path, runner, name, lost):
    build(name).save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "m.gguf")])
    assert result.exit_code == 2, result.output
    assert "cannot hold this model" in result.stderr and lost in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]


def test_an_mpt_file_of_another_alibi_bias_is_refused(tmp_path):
    """transformers' MPT (and tfm's ALiBi) has maximum bias 8; MosaicML's alibi_bias_max may say otherwise."""
    model = build("mpt")
    spec_from_gguf(write_gguf(model, tmp_path / "eight.gguf"))  # (read)
    model.config.attn_config.alibi_bias_max = 4
    with pytest.raises(SpecError, match="max_alibi_bias.*8"):
        spec_from_gguf(write_gguf(model, tmp_path / "four.gguf"))


def test_glm45s_prediction_layers_after_its_blocks_are_read_past(tmp_path):
    """GLM-4.5's converter counts its multi-token-prediction layer in block_count (nextn_predict_layers 1) and keeps
    its tensors (blk.3.nextn.*, blk.3's own); the model is the three blocks before it. Control: the same tensors in a
    file that says no prediction layers do not fit its model."""
    model = build("glm4_moe")  # (three blocks; its config's num_nextn_predict_layers: transformers' default 1)
    rng = np.random.default_rng(0)
    mtp = {name: rng.normal(size=(32, 64)) for name in ("blk.3.nextn.eh_proj.weight", "blk.3.attn_q.weight")}
    plain, with_mtp = write_gguf(model, tmp_path / "a.gguf"), write_gguf(model, tmp_path / "b.gguf", extra=mtp)
    spec = spec_from_gguf(with_mtp)
    assert spec.N == 3 and spec.model_keys() == spec_from_gguf(plain).model_keys()
    ours, plain_logits = (Transformer(spec, GGUFWeights(p, spec))(IDS) for p in (with_mtp, plain))
    np.testing.assert_array_equal(ours, plain_logits)
    model.config.num_nextn_predict_layers = 0
    unsaid = write_gguf(model, tmp_path / "c.gguf", extra=mtp)
    with pytest.raises(ArrayError, match="unexpected blk.3"):
        Transformer(spec_from_gguf(unsaid), GGUFWeights(unsaid, spec_from_gguf(unsaid)))(IDS)


@pytest.mark.parametrize("name", ["glm4_moe_lite-dense-first", "youtu", "mistral4-gguf"])
def test_deepseeks_kin_are_written_as_deepseek2_files_of_the_same_model(tmp_path, runner, name):
    """GLM-4.7-Flash and Youtu-LLM write DeepSeek's architecture (their converters are DeepseekV2Model's), Mistral 4
    its own of DeepSeek's names with the queries' scaling (temperature_scale, temperature_length): tfm's file reads
    back as the folder's model (GLM-4.7-Flash's dense first layer and sigmoid router said in its keys), runs to
    transformers' logits on the file's float32 weights (past Mistral 4's scaling length), and goes back to a folder
    transformers builds (as DeepSeek-V3, DeepSeek-V2, Mistral 4) with the same logits."""
    import copy

    import transformers
    from gguf_files import dequantised_model
    from helpers_hf_transformers import relative, theirs
    from hf_exact import exact

    from transformer_cli.hf.config import spec_from_config

    model = build(name)
    model.save_pretrained(tmp_path / "hf")
    written = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "m.gguf"), "--type", "f32"])
    assert written.exit_code == 0, written.output
    spec = spec_from_gguf(tmp_path / "m.gguf")
    assert spec.model_keys() == spec_from_config(tmp_path / "hf").model_keys()
    reference = theirs(exact(dequantised_model(copy.deepcopy(model), "F32")), IDS)
    ours = Transformer(spec, GGUFWeights(tmp_path / "m.gguf", spec))(IDS)
    assert relative(ours, reference) < 1e-10
    back = runner.invoke(app, ["convert", str(tmp_path / "m.gguf"), "-o", str(tmp_path / "back")])
    assert back.exit_code == 0, back.output
    import json

    model_class = json.loads((tmp_path / "back" / "config.json").read_text())["architectures"][
        0
    ]  # (Mistral 4: no Auto)
    loaded = getattr(transformers, model_class).from_pretrained(tmp_path / "back", experts_implementation="eager")
    assert relative(theirs(exact(loaded.double().eval()), IDS), reference) < 1e-6  # (float32 weights)


@pytest.mark.parametrize("name", ["eurobert", "eurobert-biases", "modernbert", "modernbert-biases-every-2"])
def test_encoders_are_written_as_their_converters_write_them(tmp_path, runner, name):
    """EuroBERT and ModernBERT (encoders, no head): tfm's file holds tensor for tensor what their converters write,
    and reads back as the folder's model."""
    from helpers_gguf_write import _tensors

    from transformer_cli.hf.config import spec_from_config

    model = build(name)
    model.save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "tfm.gguf"), "--type", "q8_0"])
    assert result.exit_code == 0, result.output
    ours, theirs = _tensors(tmp_path / "tfm.gguf"), _tensors(write_gguf(model, tmp_path / "ref.gguf", "Q8_0"))
    assert ours == theirs
    assert spec_from_gguf(tmp_path / "tfm.gguf").model_keys() == spec_from_config(tmp_path / "hf").model_keys()


def test_gemma3n_sparsity_levels_come_back_from_their_float32_quantiles():
    """Gemma3NModel stores each level's normal quantile in float32 (torch's icdf): read back as the level of fewest
    decimals whose quantile it is, 0 for -inf; a quantile of no short level reads back as its exact level."""
    import math

    import torch

    from transformer_cli.families.gemma3n_gguf import level, quantile

    normal = torch.distributions.normal.Normal(0, 1)
    for s in (0.95, 0.6, 0.9, 0.5, 0.123, 0.999):
        z = normal.icdf(torch.tensor(s, dtype=torch.float32)).item()
        assert level(z) == s and abs(quantile(s) - z) <= 1e-5 * abs(z)
    assert level(-math.inf) == 0.0 and quantile(0.0) == -math.inf
    assert level(float(np.float32(1.6448536))) == 0.95  # (icdf(0.95) = 1.6448536269...)
    assert level(1.64) != 0.95 and abs(quantile(level(1.64)) - 1.64) <= 1e-5 * 1.64  # (another level: 0.9495)


def test_apertus_xielu_numbers_are_metadata_lists_as_the_converter_writes_them(tmp_path, runner):
    """ApertusModel's converter writes each block's xIELU parameters (as stored: llama.cpp applies the softplus)
    and its fixed beta and eps as four metadata lists of float32, no tensors: tfm writes the same lists and reads
    them back per block. Control: a file whose eps is not transformers' fixed one is refused naming the key."""
    from gguf import GGUFReader

    model = build("apertus")
    model.save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "tfm.gguf")])
    assert result.exit_code == 0, result.output
    lists = []
    for path in (tmp_path / "tfm.gguf", write_gguf(model, tmp_path / "ref.gguf")):
        fields = GGUFReader(path).fields
        lists.append({k: (fields[k].types, fields[k].contents()) for k in fields if k.startswith("xielu.")})
    assert lists[0] == lists[1] and sorted(lists[0]) == ["xielu.alpha_n", "xielu.alpha_p", "xielu.beta", "xielu.eps"]
    weights = GGUFWeights(tmp_path / "tfm.gguf", spec_from_gguf(tmp_path / "tfm.gguf"))
    alphas = [model.model.layers[i].mlp.act_fn.alpha_p.item() for i in range(2)]
    assert alphas[0] != alphas[1]
    assert [weights[f"blocks.{i}.ff.alpha_p"][0] for i in range(2)] == [np.float32(a) for a in alphas]
    model.model.layers[1].mlp.act_fn.eps.fill_(-0.5)
    with pytest.raises(SpecError, match=r"key 'xielu\.eps'.*is not supported"):
        spec_from_gguf(write_gguf(model, tmp_path / "other.gguf"))


def test_granite_swa_layers_without_positions_are_written_as_llama_cpps_rope_pattern(tmp_path, runner):
    """llama.cpp's granite_swa turns a layer unless attention.rope_pattern says not; its converter writes that list
    only from a config's no_rope_layers, and transformers 5.24's config says it in layer_rope_theta (0: none). tfm
    writes the list, and its file runs as transformers does on the dequantised weights. Control: the converter's
    file of the same folder (no list) turns every layer, another model."""
    import copy

    from gguf_files import dequantised_model
    from helpers_hf_transformers import TOL, relative, theirs
    from hf_exact import exact

    from transformer_cli.hf.config import spec_from_config
    from transformer_cli.spec.stacks import kind_of

    model = build("granite_swa-layer-thetas")
    model.save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "tfm.gguf"), "--type", "q8_0"])
    assert result.exit_code == 0, result.output
    spec = spec_from_gguf(tmp_path / "tfm.gguf")
    assert spec.model_keys() == spec_from_config(tmp_path / "hf").model_keys()
    assert [kind_of(spec.positional_layers, i, "rope") for i in range(4)] == ["nope", "rope", "rope", "nope"]
    reference = theirs(exact(dequantised_model(copy.deepcopy(model), "Q8_0")), IDS)
    assert relative(Transformer(spec, GGUFWeights(tmp_path / "tfm.gguf", spec))(IDS), reference) < TOL
    converters = spec_from_gguf(write_gguf(model, tmp_path / "converter.gguf", "Q8_0"))
    assert all(kind_of(converters.positional_layers, i, "rope") == "rope" for i in range(4))


def test_a_cohere2_moe_with_narrower_dense_layers_is_written_with_their_width(tmp_path, runner):
    """llama.cpp's cohere2moe sizes its leading dense layers by feed_forward_length and the experts by
    expert_feed_forward_length; Cohere2MoeModel writes intermediate_size (the experts') for both, so its file of
    a model whose prefix_dense_intermediate_size differs does not fit (llama.cpp would refuse it too). tfm writes
    the dense layers' width: its file runs as transformers does on the dequantised weights."""
    import copy

    from gguf_files import dequantised_model
    from helpers_hf_transformers import TOL, relative, theirs
    from hf_exact import exact

    model = build("cohere2_moe")  # (dense layers of 24, experts of 40)
    model.save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "tfm.gguf"), "--type", "q8_0"])
    assert result.exit_code == 0, result.output
    spec = spec_from_gguf(tmp_path / "tfm.gguf")
    assert (spec.r, spec.expert_r) == (24, 40)
    reference = theirs(exact(dequantised_model(copy.deepcopy(model), "Q8_0")), IDS)
    assert relative(Transformer(spec, GGUFWeights(tmp_path / "tfm.gguf", spec))(IDS), reference) < TOL
    converters = write_gguf(model, tmp_path / "converter.gguf", "Q8_0")
    with pytest.raises(ArrayError, match=r"wrong shape blk\.0\.ffn_"):
        GGUFWeights(converters, spec_from_gguf(converters))


def test_laguna_layer_kinds_are_written_as_a_list_llama_cpp_reads(tmp_path, runner):
    """LagunaModel writes no list of the layers' kinds, so llama.cpp takes its default (a full layer, then three
    sliding); tfm writes the list (llama.cpp reads attention.sliding_window_pattern), so its file of a model of
    other kinds runs as transformers does. Control: the converter's file of the same folder slides other layers."""
    import copy

    from gguf_files import dequantised_model
    from helpers_hf_transformers import TOL, relative, theirs
    from hf_exact import exact

    from transformer_cli.spec.stacks import kind_of

    model = build("laguna")  # (full, sliding, full)
    model.save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "tfm.gguf"), "--type", "q8_0"])
    assert result.exit_code == 0, result.output
    spec = spec_from_gguf(tmp_path / "tfm.gguf")
    assert [kind_of(spec.attention_layers, i, "full") for i in range(3)] == ["full", "sliding", "full"]
    reference = theirs(exact(dequantised_model(copy.deepcopy(model), "Q8_0")), IDS)
    assert relative(Transformer(spec, GGUFWeights(tmp_path / "tfm.gguf", spec))(IDS), reference) < TOL
    converters = spec_from_gguf(write_gguf(model, tmp_path / "converter.gguf", "Q8_0"))
    assert [kind_of(converters.attention_layers, i, "full") for i in range(3)] == ["full", "sliding", "sliding"]


def test_hy_v3_with_no_shared_experts_is_written_with_transformers_shared_mlp(tmp_path, runner):
    """transformers 5.24 reads num_shared_experts 0 as unset: one shared MLP of intermediate_size. HYV3Model writes
    expert_shared_feed_forward_length = moe_intermediate_size x 0 (llama.cpp then sizes it as one expert, which the
    tensors are not): tfm refuses that file in one line and writes the MLP's width, its file running as
    transformers does on the dequantised weights."""
    import copy

    from gguf_files import dequantised_model
    from helpers_hf_transformers import TOL, relative, theirs
    from hf_exact import exact

    model = build("hy_v3-listed-no-shared")
    model.save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "tfm.gguf"), "--type", "q8_0"])
    assert result.exit_code == 0, result.output
    spec = spec_from_gguf(tmp_path / "tfm.gguf")
    assert spec.shared_r == model.config.intermediate_size
    reference = theirs(exact(dequantised_model(copy.deepcopy(model), "Q8_0")), IDS)
    assert relative(Transformer(spec, GGUFWeights(tmp_path / "tfm.gguf", spec))(IDS), reference) < TOL
    with pytest.raises(SpecError, match=r"expert_shared_feed_forward_length': got 0"):
        spec_from_gguf(write_gguf(model, tmp_path / "converter.gguf", "Q8_0"))


@pytest.mark.parametrize("name", ["qwen3_5_text-gguf", "qwen3_5_moe_text-gguf"])
def test_qwen3_5s_value_heads_are_put_back_in_transformers_order(tmp_path, monkeypatch, name):
    """The converter deals Qwen3.5's value heads tiled over the key heads (ggml's broadcast) where transformers
    groups them by key head: undone on reading (the FAMILIES tests hold the logits); the control, read as stored,
    computes another model."""
    import copy
    from dataclasses import replace

    from gguf_files import dequantised_model
    from helpers_hf_transformers import TOL, relative, theirs
    from hf_exact import exact

    from transformer_cli.families.mamba_gguf import A_UNDONE
    from transformer_cli.gguf import archs

    model = build(name)
    path = write_gguf(model, tmp_path / "m.gguf")
    spec = spec_from_gguf(path)
    reference = theirs(exact(dequantised_model(copy.deepcopy(model), "F32")), IDS)
    assert relative(Transformer(spec, GGUFWeights(path, spec))(IDS), reference) < TOL
    arch = "qwen35moe" if spec.E else "qwen35"
    kept = archs.ARCHITECTURES[arch]
    as_stored = {k: v for k, v in kept.transforms.items() if not k.startswith(("ssm_", "attn_qkv", "attn_gate"))}
    monkeypatch.setitem(archs.ARCHITECTURES, arch, replace(kept, transforms=as_stored | A_UNDONE))
    assert relative(Transformer(spec, GGUFWeights(path, spec))(IDS), reference) > 1e-3
