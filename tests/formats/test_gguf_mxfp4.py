"""A gpt-oss GGUF file of OpenAI's MXFP4 experts, written from an MXFP4 checkpoint as convert_hf_to_gguf.py's
GptOssModel.repack_mxfp4 does (its nibble reordering copied below): tfm reads the experts bit for bit as it reads
them from the checkpoint (itself checked against transformers' dequantisation), and the logits are transformers'
on that checkpoint (Mxfp4Config(dequantize=True), float64) within 1e-10."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the references run on PyTorch")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")
gguf = pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")

from gguf_files import write_gguf  # noqa: E402
from helpers_hf_quantized import TOL, relative, tfm_logits, their_logits  # noqa: E402
from quantized_files import IDS, gpt_oss_float, mxfp4_folder  # noqa: E402

from transformer_cli import Transformer  # noqa: E402
from transformer_cli.gguf.model import GGUFWeights, spec_from_gguf  # noqa: E402
from transformer_cli.hf.config import load_config  # noqa: E402
from transformer_cli.tasks.sources import load_weights  # noqa: E402


def transform_nibble_layout(blocks: np.ndarray) -> np.ndarray:
    """convert_hf_to_gguf.py, GptOssModel.transform_nibble_layout (llama.cpp, MIT), in NumPy: Hugging Face's 16
    bytes of a block (value 2j in byte j's low nibble) to ggml's (values j and j + 16 in byte j)."""
    t = ((blocks & 0x0F) << 4) | ((blocks & 0xF0) >> 4)
    a, b = t[..., :8], t[..., 8:]
    a = np.stack((a & 0xF0, (a << 4) & 0xFF), axis=-1).reshape(t.shape)
    b = np.stack((b >> 4, b & 0x0F), axis=-1).reshape(t.shape)
    out = a | b
    return ((out & 0xF0) >> 4) | ((out & 0x0F) << 4)


def repacked(blocks: np.ndarray, scales: np.ndarray, reorder=transform_nibble_layout) -> np.ndarray:
    """GptOssModel.repack_mxfp4: each block's scale byte, then its 16 bytes of codes (17 bytes a block)."""
    data = np.concatenate((scales[..., None], reorder(blocks)), axis=-1)
    return np.ascontiguousarray(data.reshape(*data.shape[:2], -1))


def mxfp4_gguf(folder, source, path, reorder=transform_nibble_layout):
    from safetensors.torch import load_file

    stored = load_file(folder / "model.safetensors")
    model = transformers.GptOssForCausalLM.from_pretrained(source)
    with torch.no_grad():  # the checkpoint's other tensors (bfloat16) as the file's F32
        for name, p in model.named_parameters():
            if name in stored:
                p.copy_(stored[name].float())
    stored = {name: t.numpy() for name, t in stored.items() if t.dtype == torch.uint8}
    raw = {}
    for i in range(model.config.num_hidden_layers):
        experts = f"model.layers.{i}.mlp.experts"
        blocks, scales = stored[f"{experts}.gate_up_proj_blocks"], stored[f"{experts}.gate_up_proj_scales"]
        raw[f"{experts}.gate_proj.weight"] = repacked(blocks[:, ::2], scales[:, ::2], reorder)  # even rows: gate
        raw[f"{experts}.up_proj.weight"] = repacked(blocks[:, 1::2], scales[:, 1::2], reorder)
        raw[f"{experts}.down_proj.weight"] = repacked(
            stored[f"{experts}.down_proj_blocks"], stored[f"{experts}.down_proj_scales"], reorder
        )
    return write_gguf(model, path, "F32", raw=raw, raw_type=gguf.GGMLQuantizationType.MXFP4)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("oss")
    source = gpt_oss_float(root / "float")
    folder = mxfp4_folder(source, root / "q")
    return source, folder, mxfp4_gguf(folder, source, root / "m.gguf")


def test_an_mxfp4_gguf_holds_the_checkpoints_experts_and_computes_its_logits(files):
    source, folder, path = files
    spec = spec_from_gguf(path)
    assert spec.model_keys() == load_config(folder)[1].model_keys()
    ours, checkpoint = GGUFWeights(path, spec), load_weights(folder, load_config(folder)[1])
    assert {t.type for t in ours.header.tensors.values() if "_exps.weight" in t.name} == {
        int(gguf.GGMLQuantizationType.MXFP4)
    }
    for name in ("blocks.0.ff.W1", "blocks.0.ff.W3", "blocks.1.ff.W2", "blocks.1.ff.b1", "blocks.0.ff.b3"):
        assert np.array_equal(ours[name], checkpoint[name]), name
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        folder,
        quantization_config=transformers.Mxfp4Config(dequantize=True),
        dtype=torch.float64,
        experts_implementation="eager",
    )
    reference = their_logits(loaded)
    assert relative(Transformer(spec, ours, dtype="float64")(IDS), reference) < TOL
    assert relative(tfm_logits(folder), reference) < TOL


def test_without_the_converters_nibble_order_the_experts_differ(files, tmp_path):
    source, folder, _ = files
    path = mxfp4_gguf(folder, source, tmp_path / "unordered.gguf", reorder=lambda blocks: blocks)
    spec = spec_from_gguf(path)
    ours, checkpoint = GGUFWeights(path, spec), load_weights(folder, load_config(folder)[1])
    assert not np.array_equal(ours["blocks.0.ff.W1"], checkpoint["blocks.0.ff.W1"])
