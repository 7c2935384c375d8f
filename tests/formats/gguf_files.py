"""GGUF files written as llama.cpp's convert_hf_to_gguf.py writes them, from a transformers model, with the gguf
package's writer and quantisers: the tensor names from the package's own TensorNameMap, the converter's metadata
keys, its Q/K row permutation (LlamaModel.permute, copied below) and, per GGML type, every 2-D weight quantised
as llama.cpp's quantiser would store it (1-D norms and biases stay F32, as the converter keeps them).

The reference a test compares with is the same transformers model with each weight replaced by
dequantize(quantize(W)): quantisation blocks run along rows, so the permutation (a reordering of rows) does not
change what a row dequantises to, and the reference never needs tfm's inverse of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

ARCHS = {"llama": "LLAMA", "mistral": "LLAMA", "qwen2": "QWEN2", "qwen3": "QWEN3"}  # model_type -> MODEL_ARCH


def permute(weights: np.ndarray, n_head: int, n_head_kv: int | None) -> np.ndarray:
    """convert_hf_to_gguf.py, LlamaModel.permute (llama.cpp, MIT): halves of each head -> adjacent pairs."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))  # fmt: skip


def quantisable(array: np.ndarray, qtype) -> bool:
    import gguf

    block = gguf.GGML_QUANT_SIZES[qtype][0]
    return array.ndim == 2 and array.shape[-1] % block == 0


def round_trip(array: np.ndarray, qtype) -> np.ndarray:
    """What a weight becomes once stored as `qtype` and read back, by the package's reference code (float64)."""
    from gguf.quants import dequantize, quantize

    if qtype.name in ("F32",) or not quantisable(array, qtype):
        return array.astype(np.float32).astype(np.float64)
    if qtype.name == "F16":
        return array.astype(np.float16).astype(np.float64)
    return dequantize(quantize(array.astype(np.float32), qtype), qtype).astype(np.float64)


def write_gguf(model, path: Path, qtype_name: str = "F32", raw: dict | None = None, raw_type=None) -> Path:
    """`model` (a transformers ...ForCausalLM) as a GGUF file of `qtype_name` weights (F32, F16, Q8_0, Q4_0, ...);
    `raw`: tensors given as bytes of `raw_type` instead (rows in the model's order, permuted as the weights are)."""
    import gguf
    from gguf.quants import quantize

    cfg = model.config
    arch = ARCHS[cfg.model_type]
    qtype = gguf.GGMLQuantizationType[qtype_name]
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[arch], cfg.num_hidden_layers)
    writer = gguf.GGUFWriter(str(path), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH[arch]])
    H, G = cfg.num_attention_heads, cfg.num_key_value_heads
    m = getattr(cfg, "head_dim", None) or cfg.hidden_size // H
    writer.add_name(f"tiny {cfg.model_type}")
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(H)
    writer.add_head_count_kv(G)
    writer.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_rope_dimension_count(m)
    if m != cfg.hidden_size // H:
        writer.add_key_length(m)
        writer.add_value_length(m)
    for hf_name, tensor in model.state_dict().items():
        data = tensor.detach().numpy() if raw is None or hf_name not in raw else raw[hf_name]
        if arch == "LLAMA" and hf_name.endswith("q_proj.weight"):
            data = permute(data, H, H)
        elif arch == "LLAMA" and hf_name.endswith("k_proj.weight"):
            data = permute(data, H, G)
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        assert name is not None, hf_name
        if raw is not None and hf_name in raw:  # bytes: the permutation above reordered whole rows of them
            writer.add_tensor(name, data, raw_dtype=raw_type)
        elif qtype.name not in ("F32", "F16") and quantisable(data, qtype):
            writer.add_tensor(name, quantize(data.astype(np.float32), qtype), raw_dtype=qtype)
        elif qtype.name == "F16" and data.ndim == 2:
            writer.add_tensor(name, data.astype(np.float16))
        else:
            writer.add_tensor(name, data.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def dequantised_model(model, qtype_name: str):
    """The same transformers model with every weight as the GGUF file of `qtype_name` stores it (float64)."""
    import gguf
    import torch

    qtype = gguf.GGMLQuantizationType[qtype_name]
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.copy_(torch.from_numpy(round_trip(p.detach().numpy(), qtype)))
    return model


# Where each K-quant and IQ4 block keeps its float16 scales (ggml's block structs): set to a moderate value so that
# random blocks dequantise to finite weights of a model's size.
SCALE_OFFSETS = {"Q2_K": (80, 82), "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,), "IQ4_NL": (0,),
                 "IQ4_XS": (0,)}  # fmt: skip


def random_blocks(rows: int, columns: int, qtype_name: str, rng: np.random.Generator) -> np.ndarray:
    """Random bytes of `rows` x `columns` weights of a type the package can read but not write (the K-quants,
    IQ4), as (rows, bytes per row), every block's scales set to 0.002 (float16)."""
    import gguf

    qtype = gguf.GGMLQuantizationType[qtype_name]
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(rows, columns // block, size), dtype=np.uint8)
    scale = np.frombuffer(np.float16(0.002).tobytes(), dtype=np.uint8)
    for offset in SCALE_OFFSETS[qtype_name]:
        raw[:, :, offset : offset + 2] = scale
    return raw.reshape(rows, -1)


def write_random_quantised(model, path: Path, qtype_name: str, seed: int = 0):
    """A GGUF of `model`'s architecture whose 2-D weights are random blocks of `qtype_name` (the norms the model's,
    F32); the model's weights are set to what those blocks dequantise to, so it is the file's reference."""
    import gguf
    import torch
    from gguf.quants import dequantize

    rng = np.random.default_rng(seed)
    qtype = gguf.GGMLQuantizationType[qtype_name]
    with torch.no_grad():
        raws = {}
        for hf_name, p in model.named_parameters():
            if p.ndim == 2:
                raws[hf_name] = random_blocks(p.shape[0], p.shape[1], qtype_name, rng)
                p.copy_(torch.from_numpy(dequantize(raws[hf_name], qtype).astype(np.float64)))
    return write_gguf(model, path, "F32", raw=raws, raw_type=qtype)
