"""Quantised folders for the hostile tests, packed with NumPy alone (no PyTorch): tfm's tiny LLaMA (64 wide,
feedforward 172) with every linear of its blocks stored as a method stores it, then damaged by the test.

- compressed-tensors pack-quantized, symmetric groups: `weight_packed` (o, ceil(i b / 32)) int32, each row one
  little-endian stream of b-bit codes offset by 2^(b-1), `weight_scale` (o, ceil(i / g)), `weight_shape`, and
  with act-order a `weight_g_idx` (i,) giving each input's group.
- AWQ (gemm): `qweight` (i, o / 8) int32, `qzeros` (G, o / 8), `scales` (G, o) float16, 8 outputs a word in
  AutoAWQ's order.

The codes are random: these files test what tfm refuses, not its arithmetic (tests/formats/ holds that to the
formats' own dequantisers).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from awq_packing import awq_pack

safetensors_numpy = pytest.importorskip(
    "safetensors.numpy", reason="the folders are written by safetensors (the test extra)"
)
load_file, save_file = safetensors_numpy.load_file, safetensors_numpy.save_file

TINY = Path(__file__).parents[2] / "examples" / "hf" / "tiny-llama"


def float_folder(runner, app, folder: Path, **config) -> Path:
    """tfm's tiny LLaMA with seeded weights (config keys changed by `config`)."""
    source = folder.parent / f"{folder.name}-config"
    source.mkdir(parents=True)
    keys = json.loads((TINY / "config.json").read_text()) | config
    (source / "config.json").write_text(json.dumps(keys))
    assert runner.invoke(app, ["init", str(source), "-o", str(folder)]).exit_code == 0
    return folder


def _stream(codes: np.ndarray, bits: int) -> np.ndarray:
    """codes (rows, n) of `bits` bits -> (rows, ceil(n bits / 32)) int32, each row one little-endian stream."""
    rows, n = codes.shape
    positions = np.arange(n * bits)
    bit = (codes[:, positions // bits].astype(np.uint64) >> (positions % bits).astype(np.uint64)) & np.uint64(1)
    words = np.zeros((rows, -(-n * bits // 32)), dtype=np.uint64)
    for p in range(n * bits):
        words[:, p // 32] |= bit[:, p] << np.uint64(p % 32)
    return words.astype(np.uint32).view(np.int32)


def _weights(folder: Path) -> dict[str, np.ndarray]:
    return load_file(folder / "model.safetensors")


def _write(folder: Path, tensors: dict[str, np.ndarray], quantization: dict) -> Path:
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"quantization_config": quantization}, indent=1))
    return folder


def compressed(folder: Path, group: int = 32, bits: int = 4, actorder: str | None = None) -> Path:
    """The float folder rewritten as compressed-tensors pack-quantized (symmetric groups of `group` inputs)."""
    rng = np.random.default_rng(0)
    out = {}
    for name, w in _weights(folder).items():
        if not name.endswith("proj.weight"):
            out[name] = w
            continue
        o, i = w.shape
        prefix = name[: -len(".weight")]
        groups = -(-i // min(group, i))
        out[f"{prefix}.weight_packed"] = _stream(rng.integers(0, 2**bits, size=(o, i)), bits)
        out[f"{prefix}.weight_scale"] = rng.uniform(0.01, 0.02, size=(o, groups)).astype(np.float32)
        out[f"{prefix}.weight_shape"] = np.array([o, i], dtype=np.int64)
        if actorder == "group":
            out[f"{prefix}.weight_g_idx"] = (np.arange(i) // min(group, i)).astype(np.int32)
    weights = {
        "num_bits": bits,
        "type": "int",
        "symmetric": True,
        "strategy": "group",
        "group_size": group,
        "actorder": actorder,
        "dynamic": False,
    }
    quantization = {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}},
    }
    return _write(folder, out, quantization)


def awq(folder: Path, group: int = 32) -> Path:
    """The float folder rewritten as AWQ gemm: 4-bit codes and zeros packed 8 outputs a word (o // 8 words a row:
    outputs past a whole word are not held, as a packer that floors would leave them)."""
    rng = np.random.default_rng(0)
    out = {}
    for name, w in _weights(folder).items():
        if not name.endswith("proj.weight"):
            out[name] = w
            continue
        o, i = w.shape
        prefix = name[: -len(".weight")]
        groups = -(-i // group)
        out[f"{prefix}.qweight"] = awq_pack(rng.integers(0, 16, size=(i, o)))
        out[f"{prefix}.qzeros"] = awq_pack(rng.integers(0, 16, size=(groups, o)))
        out[f"{prefix}.scales"] = rng.uniform(0.01, 0.02, size=(groups, o)).astype(np.float16)
    quantization = {"quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True, "version": "gemm"}
    return _write(folder, out, quantization)


def gptq(folder: Path, group: int = 32, bits: int = 4) -> Path:
    """The float folder rewritten as GPTQ (v1): `qweight` (i b / 32, o) and `qzeros` (G, o b / 32) int32 streams,
    `scales` (G, o) float16, `g_idx` (i,) int32 (whole words: inputs past them are not held)."""
    rng = np.random.default_rng(0)
    out = {}
    for name, w in _weights(folder).items():
        if not name.endswith("proj.weight"):
            out[name] = w
            continue
        o, i = w.shape
        prefix = name[: -len(".weight")]
        groups = -(-i // group)
        out[f"{prefix}.qweight"] = _stream(rng.integers(0, 2**bits, size=(o, i)), bits)[:, : i * bits // 32].T.copy()
        out[f"{prefix}.qzeros"] = _stream(rng.integers(0, 2**bits, size=(groups, o)), bits)[:, : o * bits // 32]
        out[f"{prefix}.scales"] = rng.uniform(0.01, 0.02, size=(groups, o)).astype(np.float16)
        out[f"{prefix}.g_idx"] = (np.arange(i) // group).astype(np.int32)
    quantization = {"quant_method": "gptq", "bits": bits, "group_size": group, "desc_act": False, "sym": False}
    return _write(folder, out, quantization)


def mxfp4_compressed(folder: Path, group: int = 32) -> Path:
    """The float folder rewritten as compressed-tensors mxfp4-pack-quantized: `weight_packed` (o, i / 2) uint8,
    two E2M1 codes a byte, `weight_scale` (o, i / group) uint8 E8M0 powers (the format's group is 32)."""
    rng = np.random.default_rng(0)
    out = {}
    for name, w in _weights(folder).items():
        if not name.endswith("proj.weight"):
            out[name] = w
            continue
        o, i = w.shape
        prefix = name[: -len(".weight")]
        out[f"{prefix}.weight_packed"] = rng.integers(0, 256, size=(o, -(-i // 2))).astype(np.uint8)
        out[f"{prefix}.weight_scale"] = rng.integers(120, 127, size=(o, -(-i // group))).astype(np.uint8)
    weights = {"num_bits": 4, "type": "float", "symmetric": True, "strategy": "group", "group_size": group}
    quantization = {
        "quant_method": "compressed-tensors",
        "format": "mxfp4-pack-quantized",
        "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}},
    }
    return _write(folder, out, quantization)


def edit(folder: Path, change) -> None:
    """Rewrite the folder's tensors with `change(tensors)` (which edits the dict in place)."""
    tensors = _weights(folder)
    change(tensors)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})


def reconfigure(folder: Path, change) -> None:
    """Rewrite config.json's quantization_config with `change(quantization)` (in place)."""
    config = json.loads((folder / "config.json").read_text())
    change(config["quantization_config"])
    (folder / "config.json").write_text(json.dumps(config, indent=1))
