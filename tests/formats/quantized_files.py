"""Small quantised Hugging Face checkpoints, made as their tools make them, for the quantised-checkpoint tests.

- bitsandbytes: transformers loads a float folder with BitsAndBytesConfig on the CPU and saves it (its own code).
- compressed-tensors: the compressed_tensors library quantises (min/max scales from its calculate_qparams) and
  compresses a model, and writes the config (its own code).
- FP8 with block scales: written here as DeepSeek-V3's weight quantiser does (amax / 448 per 128 x 128 block,
  the weight cast to float8_e4m3fn by PyTorch), transformers 5.24 has no CPU quantiser for it.
- MXFP4: written here as gpt-oss's experts are (E8M0 power-of-two scale per 32 inputs, E2M1 codes, low half
  first), transformers' quantiser needs the `kernels` package and a GPU.
- GPTQ and AWQ: packed here by the loops of AutoGPTQ's and AutoAWQ's packers (min/max groups), which need CUDA.

Every folder has the float model's config.json with the method's quantization_config.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from awq_packing import awq_pack

torch = pytest.importorskip("torch", reason="the quantised checkpoints are written from a PyTorch model")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

IDS = np.random.default_rng(1).integers(0, 97, size=(2, 11))
LLAMA = dict(
    vocab_size=97,
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
)


def float_llama(folder: Path, dtype=torch.float32, **keys) -> Path:
    """A LLaMA of random weights (every norm and weight perturbed), saved in `dtype`."""
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**(LLAMA | keys)))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape) * 0.05 + (1.0 if p.dim() == 1 else 0.0))
    model.to(dtype).save_pretrained(folder)
    return folder


def _tensors(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


def _write(source: Path, folder: Path, tensors: dict[str, torch.Tensor], quantization: dict) -> Path:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((source / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"quantization_config": quantization}, indent=1))
    return folder


def bitsandbytes_folder(source: Path, folder: Path, **options) -> Path:
    model = transformers.AutoModelForCausalLM.from_pretrained(
        source, quantization_config=transformers.BitsAndBytesConfig(**options), device_map="cpu"
    )
    model.save_pretrained(folder)
    return folder


# -- FP8 (DeepSeek-V3) -------------------------------------------------------------------------------------


def fp8_quantise(w: torch.Tensor, block: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    rows, cols = w.shape
    R, C = math.ceil(rows / block), math.ceil(cols / block)
    padded = torch.zeros(R * block, C * block)
    padded[:rows, :cols] = w.float()
    tiles = padded.reshape(R, block, C, block)
    scale_inv = tiles.abs().amax(dim=(1, 3)).clamp(min=1e-12) / 448.0
    q = (tiles / scale_inv[:, None, :, None]).reshape(R * block, C * block)[:rows, :cols]
    return q.to(torch.float8_e4m3fn).contiguous(), scale_inv.float()


def fp8_folder(source: Path, folder: Path, block: int = 128) -> Path:
    out = {}
    for name, t in _tensors(source).items():
        if name.endswith("proj.weight"):  # every linear of the blocks; embeddings, norms and the head stay bf16
            out[name], out[f"{name}_scale_inv"] = fp8_quantise(t, block)
        else:
            out[name] = t.to(torch.bfloat16)
    quantization = {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [block, block],
    }
    return _write(source, folder, out, quantization)


# -- MXFP4 (gpt-oss) ---------------------------------------------------------------------------------------

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def mxfp4_quantise(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """w (..., rows, K): blocks (..., rows, K / 32, 16) uint8 and scales (..., rows, K / 32) uint8."""
    *lead, rows, K = w.shape
    g = w.float().reshape(*lead, rows, K // 32, 32)
    amax = g.abs().amax(-1)
    e = torch.where(amax > 0, torch.ceil(torch.log2(amax / 6.0)), torch.full_like(amax, -127.0)).clamp(-127, 127)
    x = g / torch.exp2(e)[..., None]
    magnitude = (x.abs()[..., None] - E2M1).abs().argmin(-1)
    code = (magnitude | ((x < 0) & (magnitude > 0)).long() << 3).to(torch.uint8)
    return (code[..., 0::2] | (code[..., 1::2] << 4)).contiguous(), (e + 127).to(torch.uint8)


def gpt_oss_float(folder: Path) -> Path:
    cfg = transformers.GptOssConfig(
        vocab_size=97,
        hidden_size=64,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=8,
        max_position_embeddings=64,
        layer_types=["sliding_attention", "full_attention"],
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = transformers.GptOssForCausalLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape) * 0.05 + (1.0 if p.dim() == 1 else 0.0))
    model.save_pretrained(folder)
    return folder


def mxfp4_folder(source: Path, folder: Path) -> Path:
    out = {}
    for name, t in _tensors(source).items():
        if name.endswith(("experts.gate_up_proj", "experts.down_proj")):  # (E, in, out): stored (E, out, in)
            out[f"{name}_blocks"], out[f"{name}_scales"] = mxfp4_quantise(t.transpose(1, 2))
        else:
            out[name] = t.to(torch.bfloat16)
    quantization = {
        "modules_to_not_convert": [
            "model.layers.*.self_attn",
            "model.layers.*.mlp.router",
            "model.embed_tokens",
            "lm_head",
        ],
        "quant_method": "mxfp4",
    }
    return _write(source, folder, out, quantization)


# -- compressed-tensors ------------------------------------------------------------------------------------


def compressed_folder(source: Path, folder: Path, weights: dict, fmt: str) -> Path:
    """The library's own quantisation (min/max) and compression of the float model at `source`."""
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import (
        QuantizationArgs,
        QuantizationConfig,
        QuantizationScheme,
        apply_quantization_config,
    )
    from compressed_tensors.quantization.utils.helpers import calculate_qparams

    model = transformers.AutoModelForCausalLM.from_pretrained(source).eval()
    args = QuantizationArgs(dynamic=False, **weights)
    config = QuantizationConfig(
        config_groups={"group_0": QuantizationScheme(targets=["Linear"], weights=args)}, ignore=["lm_head"], format=fmt
    )
    apply_quantization_config(model, config)
    for module in model.modules():
        if getattr(module, "quantization_scheme", None) is None:
            continue
        w = module.weight.data.float()
        if args.strategy == "tensor":
            low, high = w.amin().reshape(1), w.amax().reshape(1)
        elif args.strategy == "channel":
            low, high = w.amin(1, keepdim=True), w.amax(1, keepdim=True)
        elif args.strategy == "group":
            g = w.unflatten(-1, (-1, args.group_size))
            low, high = g.amin(-1), g.amax(-1)
        else:  # block
            bo, bi = args.block_structure
            b = w.reshape(w.shape[0] // bo, bo, w.shape[1] // bi, bi)
            low, high = b.amin((1, 3)), b.amax((1, 3))
        scale, zero = calculate_qparams(low, high, args)
        module.weight_scale.data.copy_(scale.reshape(module.weight_scale.shape))
        if hasattr(module, "weight_zero_point"):
            module.weight_zero_point.data.copy_(zero.reshape(module.weight_zero_point.shape))
    compressor = ModelCompressor.from_pretrained_model(model, quantization_format=fmt)
    compressor.compress_model(model)
    model.save_pretrained(folder)
    compressor.update_config(folder)
    return folder


# -- GPTQ and AWQ (their packers' loops) ---------------------------------------------------------------------


def _groups(w: np.ndarray, bits: int, group: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Asymmetric min/max quantisation of w (o, i) in groups of `group` inputs: q (i, o), zeros (G, o), scales
    (G, o), as GPTQ's and AWQ's quantisers pick them."""
    o, i = w.shape
    g = w.reshape(o, i // group, group)
    low, high = np.minimum(g.min(-1), 0), np.maximum(g.max(-1), 0)
    scales = ((high - low) / (2**bits - 1)).astype(np.float16).astype(np.float64)
    zeros = np.round(-low / scales)
    q = np.clip(np.round(g / scales[..., None]) + zeros[..., None], 0, 2**bits - 1).reshape(o, i)
    return q.T.astype(np.int64), zeros.T.astype(np.int64), scales.T


def _stream(values: np.ndarray, bits: int) -> np.ndarray:
    """AutoGPTQ's packing of columns of values into int32 rows, one bit stream little end first (its 3-bit loop
    carries a value across words the same way)."""
    rows, cols = values.shape
    words = np.zeros((rows * bits // 32, cols), dtype=np.uint64)
    for k in range(rows):
        for bit in range(bits):
            position = k * bits + bit
            words[position // 32] |= ((values[k].astype(np.uint64) >> np.uint64(bit)) & np.uint64(1)) << np.uint64(
                position % 32
            )
    return words.astype(np.uint32).view(np.int32)


def gptq_folder(source: Path, folder: Path, bits: int = 4, group: int = 32) -> Path:
    out = {}
    for name, t in _tensors(source).items():
        if name.endswith("proj.weight"):
            q, zeros, scales = _groups(t.double().numpy(), bits, group)
            prefix = name[: -len(".weight")]
            out[f"{prefix}.qweight"] = torch.from_numpy(_stream(q, bits))
            out[f"{prefix}.qzeros"] = torch.from_numpy(_stream(((zeros - 1) % 2**bits).T, bits).T.copy())  # v1: - 1
            out[f"{prefix}.scales"] = torch.from_numpy(np.ascontiguousarray(scales, dtype=np.float16))
            out[f"{prefix}.g_idx"] = torch.arange(q.shape[0], dtype=torch.int32) // group
        else:
            out[name] = t.to(torch.float16)
    quantization = {
        "bits": bits,
        "group_size": group,
        "desc_act": False,
        "sym": False,
        "quant_method": "gptq",
        "checkpoint_format": "gptq",
    }
    _write(source, folder, out, quantization)
    return folder


def awq_folder(source: Path, folder: Path, group: int = 32) -> Path:
    out = {}
    for name, t in _tensors(source).items():
        if name.endswith("proj.weight"):
            q, zeros, scales = _groups(t.double().numpy(), 4, group)
            prefix = name[: -len(".weight")]
            out[f"{prefix}.qweight"] = torch.from_numpy(awq_pack(q))
            out[f"{prefix}.qzeros"] = torch.from_numpy(awq_pack(zeros))
            out[f"{prefix}.scales"] = torch.from_numpy(np.ascontiguousarray(scales, dtype=np.float16))
        else:
            out[name] = t.to(torch.float16)
    quantization = {
        "bits": 4,
        "group_size": group,
        "zero_point": True,
        "version": "gemm",
        "quant_method": "awq",
        "modules_to_not_convert": None,
    }
    return _write(source, folder, out, quantization)


def copy_folder(source: Path, folder: Path) -> Path:
    shutil.copytree(source, folder)
    return folder
