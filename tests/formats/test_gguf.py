"""GGUF files (written as llama.cpp's converter writes them, tests/formats/gguf_files.py) read by tfm: the spec
from the metadata, the weights dequantised by the gguf package with the converter's Q/K permutation undone, and
the logits equal to transformers' on the same dequantised weights (float64, its float32 steps recomputed)."""

from __future__ import annotations

import copy

import pytest
from gguf_files import dequantised_model, write_gguf
from helpers_gguf import FAMILIES
from helpers_hf_transformers import IDS, TOL, build, relative, theirs
from hf_exact import exact

from transformer_cli import Transformer, count_params
from transformer_cli.gguf.model import GGUFWeights, gguf_summary, spec_from_gguf
from transformer_cli.hf.config import spec_from_config

pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")


@pytest.mark.parametrize("qtype", ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"])
@pytest.mark.parametrize("name", FAMILIES)
def test_a_gguf_file_runs_as_transformers_on_its_dequantised_weights(tmp_path, name, qtype):
    model = build(name)
    model.save_pretrained(tmp_path / "hf")
    path = write_gguf(model, tmp_path / "m.gguf", qtype)
    spec = spec_from_gguf(path)
    hf_spec = spec_from_config(tmp_path / "hf")
    assert spec.model_keys() == hf_spec.model_keys()  # the same model as the folder it was converted from
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
    reference = theirs(exact(dequantised_model(copy.deepcopy(model), qtype)), IDS)
    ours = Transformer(spec, GGUFWeights(path, spec))(IDS)
    assert relative(ours, reference) < TOL
    if qtype not in ("F32",):  # the control: the file's weights are not the original ones
        assert relative(ours, theirs(exact(model), IDS)) > 1e-6


def test_the_converters_permutation_is_undone(tmp_path):
    """The control: read without undoing LlamaModel.permute, the same file computes something else."""
    from transformer_cli.gguf import archs

    model = build("llama")
    path = write_gguf(model, tmp_path / "m.gguf")
    spec = spec_from_gguf(path)
    reference = theirs(exact(copy.deepcopy(model)), IDS)
    assert relative(Transformer(spec, GGUFWeights(path, spec))(IDS), reference) < TOL
    kept = archs.ARCHITECTURES["llama"]
    archs.ARCHITECTURES["llama"] = archs.Arch(kept.spec, kept.layout, {})
    try:
        assert relative(Transformer(spec, GGUFWeights(path, spec))(IDS), reference) > 1e-3
    finally:
        archs.ARCHITECTURES["llama"] = kept


def test_count_reports_the_files_bits_per_weight_by_type(tmp_path):
    model = build("llama")
    path = write_gguf(model, tmp_path / "m.gguf", "Q8_0")
    spec = spec_from_gguf(path)
    summary = gguf_summary(path, spec)
    assert summary["parameters"] == count_params(spec).total
    q8 = summary["types"]["Q8_0"]
    assert q8["type_bits_per_weight"] == 8.5 and q8["bits_per_weight"] == 8.5  # 34 bytes a block of 32
    f32 = summary["types"]["F32"]  # the norms
    assert f32["bits_per_weight"] == 32 and f32["parameters"] == sum(
        p.numel() for p in model.parameters() if p.ndim == 1
    )
    f16 = summary["types"]["F16"]  # ffn_down, whose rows of 40 are no whole blocks of 32: the converter's fallback
    assert f16["bits_per_weight"] == 16 and f16["parameters"] == sum(
        p.numel() for p in model.parameters() if p.ndim == 2 and p.shape[-1] % 32
    )
    assert summary["tensor_bytes"] == q8["bytes"] + f32["bytes"] + f16["bytes"] < path.stat().st_size


def test_the_commands_take_a_gguf_file(tmp_path, runner):
    """count (its bits per weight), run (its own weights, not seeded ones), verify, plan, attention, check, and diff
    (the same model as the folder it was converted from), each from the file."""
    import json

    import numpy as np

    from transformer_cli.cli import app

    model = build("qwen3")
    path = write_gguf(model, tmp_path / "m.gguf", "Q8_0")
    counted = runner.invoke(app, ["count", str(path), "--json"])
    assert counted.exit_code == 0, counted.output
    stored = json.loads(counted.stdout)["specs"][0]["checkpoint"]
    assert stored["parameters"] == sum(p.numel() for p in model.parameters()) and "Q8_0" in stored["types"]
    np.save(tmp_path / "ids.npy", IDS)
    ran = runner.invoke(app, ["run", str(path), "--input", str(tmp_path / "ids.npy"), "-o", str(tmp_path / "y.npy")])
    assert ran.exit_code == 0, ran.output
    reference = theirs(exact(dequantised_model(copy.deepcopy(model), "Q8_0")), IDS)
    assert relative(np.load(tmp_path / "y.npy"), reference) < TOL
    model.save_pretrained(tmp_path / "hf")
    for command in (
        ["verify", str(path), "--json"],
        ["plan", str(path), "-n", "16"],
        ["attention", str(path), "--input", str(tmp_path / "ids.npy")],
        ["check", str(path), "--seq-len", "8"],
    ):
        result = runner.invoke(app, command)
        assert result.exit_code == 0, result.output
    same = runner.invoke(app, ["diff", str(path), str(tmp_path / "hf"), "--json"])
    assert same.exit_code == 0 and json.loads(same.stdout)["differ"] is False


@pytest.mark.parametrize("qtype", ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"])
def test_k_quant_and_iq4_files_run_as_transformers_on_what_the_package_dequantises(tmp_path, qtype):
    """The package writes no K-quants: random blocks (scales set moderate) stand for them, the reference being the
    model whose weights are what the package's dequantiser makes of those blocks. LLaMA with rows of 256."""
    import torch
    import transformers
    from gguf_files import write_random_quantised

    cfg = transformers.LlamaConfig(
        vocab_size=97,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        rms_norm_eps=1e-5,
        attn_implementation="sdpa",
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).double().eval()
    path = write_random_quantised(model, tmp_path / "m.gguf", qtype)
    spec = spec_from_gguf(path)
    assert gguf_summary(path, spec)["types"][qtype]["parameters"] == sum(
        p.numel() for p in model.parameters() if p.ndim == 2
    )
    reference = theirs(exact(model), IDS)
    assert relative(Transformer(spec, GGUFWeights(path, spec))(IDS), reference) < TOL


@pytest.mark.parametrize(
    ("name", "qtype"),
    [("llama", "F32"), ("llama", "Q8_0"), ("qwen2", "Q4_0"), ("qwen3-head-128", "F16"), ("llama", "Q5_1")],
)
def test_transformers_own_gguf_loader_computes_what_tfm_reads(tmp_path, name, qtype):
    """The second reference: transformers' from_pretrained(gguf_file=...) (its own dequantisation and its own
    inverse of the converter's permutation) on the same file, in float64, its float32 steps recomputed. Its Qwen3
    mapping ignores attention.key_length and takes Qwen3Config's head_dim (128): the Qwen3 model here has that."""
    import torch
    import transformers

    path = write_gguf(build(name), tmp_path / "m.gguf", qtype)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file=path.name, dtype=torch.float64)
    spec = spec_from_gguf(path)
    assert count_params(spec).total == sum(p.numel() for p in loaded.parameters())
    ours = Transformer(spec, GGUFWeights(path, spec))(IDS)
    assert relative(ours, theirs(exact(loaded.eval()), IDS)) < TOL


def test_llama3_factors_are_read_as_the_formula_and_other_factors_refused(tmp_path, monkeypatch):
    """rope_freqs.weight holds Llama 3's factors alone: read back as llama3 scaling with Meta's bands (the spec
    equals the Hugging Face folder's); factors the formula does not give are one line naming the tensor."""
    import gguf_files

    from transformer_cli.errors import SpecError

    model = build("llama3-gguf")
    model.save_pretrained(tmp_path / "hf")
    spec = spec_from_gguf(write_gguf(model, tmp_path / "m.gguf"))
    assert spec.rope_scaling == "llama3" and spec.model_keys() == spec_from_config(tmp_path / "hf").model_keys()
    made = gguf_files.llama3_rope_freqs
    monkeypatch.setattr(gguf_files, "llama3_rope_freqs", lambda cfg: made(cfg) * 1.01)
    with pytest.raises(SpecError, match=r"tensor rope_freqs.weight: factors that are not Llama 3's formula"):
        spec_from_gguf(write_gguf(model, tmp_path / "other.gguf"))


def test_convert_writes_a_gguf_files_weights_as_tfms_file(tmp_path, runner):
    """GGUF -> tfm's .safetensors, dequantised: running it gives the GGUF's logits bit for bit, and an existing
    output is never replaced."""
    import numpy as np

    from transformer_cli.cli import app

    path = write_gguf(build("qwen2"), tmp_path / "m.gguf", "Q4_0")
    result = runner.invoke(app, ["convert", str(path), "-o", str(tmp_path / "w.safetensors")])
    assert result.exit_code == 0, result.output
    np.save(tmp_path / "ids.npy", IDS)
    for source, out in ((["run", str(path)], "a.npy"), (["run", "-w", str(tmp_path / "w.safetensors")], "b.npy")):
        ran = runner.invoke(app, [*source, "--input", str(tmp_path / "ids.npy"), "-o", str(tmp_path / out)])
        assert ran.exit_code == 0, ran.output
    assert np.array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))
    again = runner.invoke(app, ["convert", str(path), "-o", str(tmp_path / "w.safetensors")])
    assert again.exit_code == 2 and "already exists" in again.stderr


@pytest.mark.parametrize("name", FAMILIES)
def test_a_gguf_file_converts_to_a_folder_transformers_loads(tmp_path, runner, name):
    """GGUF -> Hugging Face folder: its config.json (built from the metadata) is the model's, so transformers'
    from_pretrained builds the model the file holds, with the file's dequantised weights (float32), and computes
    the logits of the dequantised model."""
    import torch
    import transformers

    from transformer_cli.cli import app

    model = build(name)
    path = write_gguf(model, tmp_path / "m.gguf", "Q8_0")
    result = runner.invoke(app, ["convert", str(path), "-o", str(tmp_path / "hf")])
    assert result.exit_code == 0, result.output
    assert spec_from_config(tmp_path / "hf").model_keys() == spec_from_gguf(path).model_keys()
    routed = any(name.endswith("experts") for name, _ in model.named_modules())
    eager = {"experts_implementation": "eager"} if routed else {}
    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "hf", dtype=torch.float64, **eager)
    loaded = loaded.double().eval()  # (DeepSeek keeps its router in float32: _keep_in_fp32_modules)
    reference = dequantised_model(copy.deepcopy(model), "Q8_0")
    assert relative(theirs(exact(loaded), IDS), theirs(exact(reference), IDS)) < 1e-6  # (float32 weights)
    ours = Transformer(spec_from_gguf(path), GGUFWeights(path, spec_from_gguf(path)))(IDS)
    # every dequantised value is a float32, but the state spaces' A_log = log(-A) of the file's float32 A, which the
    # float32 folder rounds (measured: 3e-8)
    logs = any(name.endswith("A_log") for name, _ in model.named_parameters())
    assert relative(theirs(exact(loaded), IDS), ours) < (1e-7 if logs else TOL)


def test_ggmls_block_sizes_are_the_packages():
    import gguf

    from transformer_cli.analysis.quantized import GGML

    assert GGML == {kind: gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[kind.upper()]] for kind in GGML}


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q6_K", "IQ4_XS"])
def test_plans_ggml_weights_are_the_bytes_a_gguf_file_of_that_type_stores(tmp_path, runner, qtype):
    """A GGUF file of one type (the converter's F32 norms, F16 fallback, quantised embedding and head) is planned at
    its own tensor bytes; tfm plan --weights of that type's name gives those bytes where llama-quantize has no file
    type of it (Q4_K) or its file type is the one type throughout (Q8_0; Q6_K on this model), and llama-quantize's
    mix where it is one (Q4_0: its head Q6_K, or Q8_0 where its rows are no whole blocks of 256)."""
    import json

    from gguf_files import write_random_quantised

    from transformer_cli.cli import app
    from transformer_cli.gguf.header import read_header
    from transformer_cli.gguf.mixes import mix_held

    if qtype.endswith(("_K", "XS")):  # no quantiser in the package: random blocks, rows of 256
        import torch
        import transformers

        cfg = transformers.LlamaConfig(
            vocab_size=97,
            hidden_size=256,
            intermediate_size=512,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
        )
        torch.manual_seed(0)
        path = write_random_quantised(transformers.LlamaForCausalLM(cfg).double(), tmp_path / "m.gguf", qtype)
    else:
        path = write_gguf(build("qwen2"), tmp_path / "m.gguf", qtype)
    planned = runner.invoke(app, ["plan", str(path), "-n", "16", "--weights", qtype.lower(), "--json"])
    assert planned.exit_code == 0, planned.output
    spec = spec_from_gguf(path)
    stored = gguf_summary(path, spec)["tensor_bytes"]
    arch = str(read_header(path).metadata["general.architecture"])
    mixed = qtype not in ("Q8_0", "Q4_K")
    expected = mix_held(spec, arch, qtype.lower()).total() if mixed else stored
    assert json.loads(planned.stdout)["weights_bytes"][qtype.lower()] == expected
    assert (expected != stored) == (qtype not in ("Q8_0", "Q4_K", "Q6_K"))  # (Q6_K's mix: Q6_K throughout here)
    own = runner.invoke(app, ["plan", str(path), "-n", "16", "--json"])  # by default: the file's own type
    assert json.loads(own.stdout)["weights_dtype"] == qtype.lower() and "note:" not in own.stderr
