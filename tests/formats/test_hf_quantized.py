"""Quantised Hugging Face checkpoints (hf/quant/): counted unpacked, their bytes per kind, and run on weights
dequantised as each format defines, against the formats' own dequantisers.

References: bitsandbytes' dequantize_4bit and int8 dequantisation; transformers' FP8 and MXFP4 dequantisation
(its loader with dequantize=True, float64); compressed_tensors' unpacking and dequantize (in float64: the
library computes in the scale's dtype) and its AutoAWQ converter for AWQ. Logits are compared with transformers'
float64 model holding the reference's weights (its float32 RMSNorm and rotary recomputed in float64, hf_exact).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the references run on PyTorch")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

from helpers_hf_quantized import TOL, relative, tfm_logits, their_logits  # noqa: E402
from quantized_files import (  # noqa: E402
    IDS,
    awq_folder,
    bitsandbytes_folder,
    compressed_folder,
    float_llama,
    fp8_folder,
    gpt_oss_float,
    gptq_folder,
    mxfp4_folder,
)

from transformer_cli import count_params  # noqa: E402
from transformer_cli.cli import app  # noqa: E402
from transformer_cli.hf.config import load_config  # noqa: E402
from transformer_cli.hf.folder import summary  # noqa: E402
from transformer_cli.tasks.sources import load_weights  # noqa: E402

NEEDS = "the test extra installs bitsandbytes and compressed-tensors (they need PyTorch)"


def llama_with(source, folder, weights: dict) -> object:
    """transformers' float64 LLaMA of `source`'s config holding the quantised folder's plain tensors and the
    reference's dequantised weights."""
    from safetensors.torch import load_file

    model = transformers.LlamaForCausalLM(transformers.LlamaConfig.from_pretrained(source)).double()
    state = {k: v.double() for k, v in load_file(folder / "model.safetensors").items() if k in model.state_dict()}
    state |= {k: v.double() for k, v in weights.items()}
    model.load_state_dict(state, strict=True)
    return model


def tfm_weight(folder, name: str) -> np.ndarray:
    """tfm's dequantised checkpoint weight `name`, as its method rebuilds it."""
    config, spec = load_config(folder)
    weights = load_weights(folder, spec)
    rule = next(rule for rule in weights.rule_of.values() if rule.hf == name)
    return weights._dequantised(rule)


# -- bitsandbytes --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return float_llama(tmp_path_factory.mktemp("float"))


FOUR_BIT = [("nf4", True), ("nf4", False), ("fp4", True), ("fp4", False)]


@pytest.mark.parametrize("kind,double", FOUR_BIT)
def test_bitsandbytes_4bit_weights_are_bitsandbytes_own_and_the_logits_transformers(tmp_path, llama, kind, double):
    F = pytest.importorskip("bitsandbytes.functional", reason=NEEDS)

    folder = bitsandbytes_folder(
        llama,
        tmp_path / "q",
        load_in_4bit=True,
        bnb_4bit_quant_type=kind,
        bnb_4bit_use_double_quant=double,
        bnb_4bit_compute_dtype=torch.float32,
    )
    loaded = transformers.AutoModelForCausalLM.from_pretrained(folder, device_map="cpu")
    reference = {
        f"{n}.weight": F.dequantize_4bit(m.weight.data, m.weight.quant_state).float()
        for n, m in loaded.named_modules()
        if getattr(getattr(m, "weight", None), "quant_state", None)
    }
    assert len(reference) == 14  # every linear of the two blocks; the head stays float32
    for name, ref in reference.items():
        assert np.array_equal(tfm_weight(folder, name), ref.numpy()), name  # bit for bit
    assert relative(tfm_logits(folder), their_logits(llama_with(llama, folder, reference))) < TOL


def test_bitsandbytes_8bit_weights_are_scb_over_127_and_the_logits_transformers(tmp_path, llama):
    F = pytest.importorskip("bitsandbytes.functional", reason=NEEDS)

    folder = bitsandbytes_folder(llama, tmp_path / "q", load_in_8bit=True)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(folder, device_map="cpu")
    kernel = {
        f"{n}.weight": F.int8_vectorwise_dequant(m.weight.data, m.weight.SCB)
        for n, m in loaded.named_modules()
        if getattr(getattr(m, "weight", None), "SCB", None) is not None
    }
    assert len(kernel) == 14
    for name, ref in kernel.items():  # bitsandbytes' float32 kernel rounds A * SCB * (1/127): tfm's is float64
        ours = tfm_weight(folder, name)
        assert np.max(np.abs(ours - ref.double().numpy()) / np.abs(ours).max()) < 2**-22, name
    exact64 = {name: torch.from_numpy(tfm_weight(folder, name)) for name in kernel}
    assert relative(tfm_logits(folder), their_logits(llama_with(llama, folder, kernel))) < 1e-6
    assert relative(tfm_logits(folder), their_logits(llama_with(llama, folder, exact64))) < TOL


# -- FP8 blocks, MXFP4 ----------------------------------------------------------------------------------------


def test_fp8_block_weights_are_transformers_own_dequantisation_before_its_float32_rounding(tmp_path, llama):
    """transformers multiplies the FP8 value by its block's scale in float32 (even in a float64 model): tfm's
    float64 product, rounded to float32, is its weight bit for bit; the logits are compared with transformers'
    float64 model holding the exact products (the format's definition, computed here in PyTorch)."""
    from safetensors.torch import load_file

    folder = fp8_folder(llama, tmp_path / "q")
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        folder, quantization_config=transformers.FineGrainedFP8Config(dequantize=True), dtype=torch.float64
    )
    state, stored = loaded.state_dict(), load_file(folder / "model.safetensors")
    exact_products = {}
    for name in [k for k in stored if k.endswith("proj.weight")]:
        ours = tfm_weight(folder, name)
        assert np.array_equal(ours.astype(np.float32), state[name].float().numpy()), name
        scale = stored[f"{name}_scale_inv"].double().repeat_interleave(128, 0).repeat_interleave(128, 1)
        exact_products[name] = stored[name].double() * scale[: ours.shape[0], : ours.shape[1]]
        assert np.array_equal(ours, exact_products[name].numpy()), name
    assert len(exact_products) == 14
    assert relative(tfm_logits(folder), their_logits(llama_with(llama, folder, exact_products))) < TOL
    assert relative(tfm_logits(folder), their_logits(loaded)) < 1e-6  # its float32 products


def test_fp8_edge_blocks_cover_the_remainder(tmp_path):
    """Rows and columns that are not whole blocks (80 = 2 x 32 + 16): each edge block has its own scale.
    transformers 5.24 refuses such a weight ("not divisible by scale grid"); the reference here is the format's
    definition computed in PyTorch."""
    source = float_llama(tmp_path / "float", intermediate_size=80)
    folder = fp8_folder(source, tmp_path / "q", block=32)
    from safetensors.torch import load_file

    stored = load_file(folder / "model.safetensors")
    name = "model.layers.0.mlp.down_proj.weight"  # (128, 80)
    scale = stored[f"{name}_scale_inv"].double()
    assert scale.shape == (4, 3)
    reference = stored[name].double() * scale.repeat_interleave(32, 0).repeat_interleave(32, 1)[:128, :80]
    assert np.array_equal(tfm_weight(folder, name), reference.numpy())
    wrong = stored[name].double() * scale.repeat_interleave(27, 1)[:128, :80].repeat_interleave(32, 0)[:128]
    assert not np.array_equal(tfm_weight(folder, name), wrong.numpy())  # a block of 80/3 columns is another


def test_fp8_a_block_larger_than_the_weight_is_one_scale_for_all_of_it(tmp_path, llama):
    """A weight_block_size of 10^6: one block covers each weight. Repeating the scale 10^6 times each way first
    asked NumPy for 10^12 elements (a MemoryError); the reference is the format's definition in PyTorch."""
    from safetensors.torch import load_file, save_file

    folder = fp8_folder(llama, tmp_path / "q", block=128)
    stored = load_file(folder / "model.safetensors")
    scales = {k: torch.rand(1, 1) + 0.5 for k in stored if k.endswith("_scale_inv")}
    save_file(stored | scales, folder / "model.safetensors")
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"]["weight_block_size"] = [10**6, 10**6]
    (folder / "config.json").write_text(json.dumps(config))
    name = "model.layers.0.mlp.down_proj.weight"
    reference = stored[name].double() * scales[f"{name}_scale_inv"].double()
    assert np.array_equal(tfm_weight(folder, name), reference.numpy())


def test_mxfp4_experts_and_logits_are_transformers_own_dequantisation(tmp_path):
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    source = gpt_oss_float(tmp_path / "float")
    folder = mxfp4_folder(source, tmp_path / "q")
    from safetensors.torch import load_file

    stored = load_file(folder / "model.safetensors")
    for name in ("model.layers.0.mlp.experts.gate_up_proj", "model.layers.1.mlp.experts.down_proj"):
        theirs = convert_moe_packed_tensors(stored[f"{name}_blocks"], stored[f"{name}_scales"], dtype=torch.float64)
        assert np.array_equal(tfm_weight(folder, name), theirs.numpy()), name
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        folder,
        quantization_config=transformers.Mxfp4Config(dequantize=True),
        dtype=torch.float64,
        experts_implementation="eager",  # (the grouped kernel takes no float64)
    )
    assert relative(tfm_logits(folder), their_logits(loaded)) < TOL


# -- compressed-tensors and AWQ -------------------------------------------------------------------------------

COMPRESSED = {
    "w4-group-32-sym": (
        dict(num_bits=4, type="int", strategy="group", group_size=32, symmetric=True),
        "pack-quantized",
    ),
    "w4-group-64-asym": (
        dict(num_bits=4, type="int", strategy="group", group_size=64, symmetric=False),
        "pack-quantized",
    ),
    "w4-group-32-actorder-weight": (
        dict(num_bits=4, type="int", strategy="group", group_size=32, symmetric=True, actorder="weight"),
        "pack-quantized",
    ),  # (no g_idx stored)
    "w8-channel": (dict(num_bits=8, type="int", strategy="channel", symmetric=True), "int-quantized"),
    "fp8-tensor": (dict(num_bits=8, type="float", strategy="tensor", symmetric=True), "float-quantized"),
    "fp8-channel": (dict(num_bits=8, type="float", strategy="channel", symmetric=True), "float-quantized"),
    "fp8-block": (
        dict(num_bits=8, type="float", strategy="block", block_structure=[64, 64], symmetric=True),
        "float-quantized",
    ),
}


def library_dequantised(folder) -> dict:
    """compressed_tensors' own unpacking and dequantize, in float64, of each packed weight of a folder."""
    pytest.importorskip("compressed_tensors", reason=NEEDS)
    from compressed_tensors.compressors.pack_quantized.helpers import unpack_from_int32
    from compressed_tensors.quantization import QuantizationConfig
    from compressed_tensors.quantization.lifecycle.forward import dequantize
    from safetensors.torch import load_file

    config = QuantizationConfig.model_validate(json.loads((folder / "config.json").read_text())["quantization_config"])
    args = next(iter(config.config_groups.values())).weights
    stored, out = load_file(folder / "model.safetensors"), {}
    for key in [k for k in stored if k.endswith(".weight_scale")]:
        prefix = key.rsplit(".", 1)[0]
        scale = stored[f"{prefix}.weight_scale"].double()
        zero = stored.get(f"{prefix}.weight_zero_point")
        if f"{prefix}.weight_packed" in stored:
            shape = tuple(stored[f"{prefix}.weight_shape"].tolist())
            q = unpack_from_int32(stored[f"{prefix}.weight_packed"], args.num_bits, shape)
            if zero is not None:
                zero = unpack_from_int32(zero, args.num_bits, (shape[0], scale.shape[-1]), packed_dim=0)
        else:
            q = stored[f"{prefix}.weight"]
        out[f"{prefix}.weight"] = dequantize(q.double(), scale, None if zero is None else zero.double(), args)
    return out


@pytest.mark.parametrize("name", COMPRESSED)
def test_compressed_tensors_weights_and_logits_are_the_librarys(tmp_path, llama, name):
    pytest.importorskip("compressed_tensors", reason=NEEDS)  # before compressed_folder imports it
    weights, fmt = COMPRESSED[name]
    folder = compressed_folder(llama, tmp_path / "q", weights, fmt)
    reference = library_dequantised(folder)
    assert len(reference) == 14
    for key, ref in reference.items():
        assert np.array_equal(tfm_weight(folder, key), ref.numpy()), key
    assert relative(tfm_logits(folder), their_logits(llama_with(llama, folder, reference))) < TOL


def test_awq_weights_are_what_compressed_tensors_converter_makes_of_them(tmp_path, llama):
    pytest.importorskip("compressed_tensors", reason=NEEDS)
    from compressed_tensors.compressors.pack_quantized.helpers import unpack_from_int32
    from compressed_tensors.entrypoints.convert.converters import AutoAWQConverter
    from compressed_tensors.quantization import QuantizationArgs
    from compressed_tensors.quantization.lifecycle.forward import dequantize
    from safetensors.torch import load_file

    folder = awq_folder(llama, tmp_path / "q", group=32)
    converted = AutoAWQConverter(group_size=32).process(load_file(folder / "model.safetensors"))
    args = QuantizationArgs(num_bits=4, type="int", strategy="group", group_size=32, symmetric=False)
    reference = {}
    for key in [k for k in converted if k.endswith("weight_packed")]:
        prefix = key.rsplit(".", 1)[0]
        shape = tuple(converted[f"{prefix}.weight_shape"].tolist())
        scale = converted[f"{prefix}.weight_scale"].double()
        q = unpack_from_int32(converted[key], 4, shape)
        zero = unpack_from_int32(converted[f"{prefix}.weight_zero_point"], 4, (shape[0], scale.shape[-1]), packed_dim=0)
        reference[f"{prefix}.weight"] = dequantize(q.double(), scale, zero.double(), args)
    assert len(reference) == 14
    for key, ref in reference.items():
        assert np.array_equal(tfm_weight(folder, key), ref.numpy()), key
    assert relative(tfm_logits(folder), their_logits(llama_with(llama, folder, reference))) < TOL


# -- count, plan, refusals ------------------------------------------------------------------------------------


def _file_bytes(folder) -> dict:
    header = folder / "model.safetensors"
    raw = header.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    table = json.loads(raw[8 : 8 + n])
    return {k: v["data_offsets"][1] - v["data_offsets"][0] for k, v in table.items() if k != "__metadata__"}


@pytest.mark.parametrize("method", ["gptq", "awq", "bnb4", "fp8"])
def test_count_gives_the_true_parameters_and_the_packed_bytes(tmp_path, llama, method):
    make = {
        "gptq": lambda: gptq_folder(llama, tmp_path / "q", bits=4, group=32),
        "awq": lambda: awq_folder(llama, tmp_path / "q", group=32),
        "bnb4": lambda: bitsandbytes_folder(llama, tmp_path / "q", load_in_4bit=True, bnb_4bit_quant_type="nf4"),
        "fp8": lambda: fp8_folder(llama, tmp_path / "q"),
    }
    if method == "bnb4":
        pytest.importorskip("bitsandbytes", reason=NEEDS)
    folder = make[method]()
    _, spec = load_config(folder)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig.from_pretrained(llama))
    true = sum(p.numel() for p in model.parameters())
    got = summary(folder, spec)
    assert got["parameters"] == true == count_params(spec).total
    sizes = _file_bytes(folder)
    packed = got["quantization"]["packed"]
    assert packed["bytes"] + sum(r["bytes"] for r in got["quantization"]["plain"].values()) == sum(sizes.values())
    linears = sum(math.prod(p.shape) for n, p in model.named_parameters() if n.endswith("proj.weight"))
    assert packed["parameters"] == linears and packed["weights"] == 14
    if method in ("gptq", "awq"):  # 4 bits, a float16 scale and a 4-bit zero per 32 inputs (+ GPTQ's g_idx)
        index = 32 * sum(p.shape[1] for n, p in model.named_parameters() if n.endswith("proj.weight"))
        expected = linears // 2 + linears // 32 * 2 + linears // 32 // 2 + (index // 8 if method == "gptq" else 0)
        assert packed["bytes"] == expected
    stored = sum(math.prod(s) for s in _shapes(folder).values())
    assert got["stored_elements"] == stored != true  # the Hub's figure is the packed elements


def _shapes(folder) -> dict:
    raw = (folder / "model.safetensors").read_bytes()
    table = json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")])
    return {k: v["shape"] for k, v in table.items() if k != "__metadata__"}


def test_gptq_is_counted_and_planned_and_its_run_refused_in_one_line(tmp_path, llama, runner):
    folder = gptq_folder(llama, tmp_path / "q", bits=4, group=32)
    counted = runner.invoke(app, ["count", str(folder)])
    assert counted.exit_code == 0, counted.output
    assert "gptq int4, groups of 32" in " ".join(counted.output.split())
    np.save(tmp_path / "ids.npy", IDS)
    ran = runner.invoke(app, ["run", str(folder), "--input", str(tmp_path / "ids.npy")])
    assert ran.exit_code != 0 and "packed (gptq int4" in ran.output and "Traceback" not in ran.output


def test_plan_prices_a_quantised_checkpoint_at_its_own_bytes(tmp_path, llama, runner):
    folder = awq_folder(llama, tmp_path / "q", group=32)
    result = runner.invoke(app, ["plan", str(folder), "-n", "32", "--json", "--hardware", "h100-sxm"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["weights_dtype"] == "stored" and "planned at its own bytes" in result.stderr
    held = sum(_file_bytes(folder).values())
    assert plan["serving"]["fused_attention"]["weights"] == plan["weights_stored"]["bytes"] == held
    assert held < plan["weights_bytes"]["bfloat16"] / 2  # 4-bit blocks (the small model's head stays 16-bit)
    decoded = runner.invoke(
        app, ["plan", str(folder), "-n", "32", "--json", "--hardware", "h100-sxm", "--weights", "bfloat16"]
    )
    assert json.loads(decoded.stdout)["serving"]["fused_attention"]["weights"] == plan["weights_bytes"]["bfloat16"]


def test_a_missing_scale_or_a_wrong_dtype_is_one_line_naming_the_tensor(tmp_path, llama, runner):
    from safetensors.torch import load_file, save_file

    folder = fp8_folder(llama, tmp_path / "q")
    tensors = load_file(folder / "model.safetensors")
    name = "model.layers.1.self_attn.q_proj.weight"
    tensors[name] = tensors[name].float()  # an FP8 weight stored as float32
    save_file(tensors, folder / "model.safetensors")
    result = runner.invoke(app, ["count", str(folder)])
    assert result.exit_code != 0 and f"{name} F32 (expected F8_E4M3)" in " ".join(result.output.split())
    del tensors[name]
    save_file(tensors, folder / "model.safetensors")
    result = runner.invoke(app, ["count", str(folder)])
    assert result.exit_code != 0 and f"missing {name}" in " ".join(result.output.split())
    tensors = load_file(fp8_folder(llama, tmp_path / "q2") / "model.safetensors")
    del tensors[f"{name}_scale_inv"]  # the FP8 weight without its scales
    save_file(tensors, tmp_path / "q2" / "model.safetensors")
    result = runner.invoke(app, ["count", str(tmp_path / "q2")])
    assert result.exit_code == 2 and f"missing {name}_scale_inv" in " ".join(result.output.split())


def test_convert_writes_the_dequantised_model_without_its_quantization_config(tmp_path, llama, runner):
    from safetensors.numpy import load_file

    folder = fp8_folder(llama, tmp_path / "q")
    result = runner.invoke(app, ["convert", str(folder), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "out" / "config.json").read_text())
    assert (
        "quantization_config" not in written and json.loads((folder / "config.json").read_text())["quantization_config"]
    )
    name = "model.layers.0.mlp.down_proj.weight"
    assert np.array_equal(
        load_file(tmp_path / "out" / "model.safetensors")[name], tfm_weight(folder, name).astype(np.float32)
    )
    assert relative(tfm_logits(tmp_path / "out"), tfm_logits(folder)) < 1e-6  # (float32 rounding of the products)
