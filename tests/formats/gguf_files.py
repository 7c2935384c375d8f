"""GGUF files written as llama.cpp's convert_hf_to_gguf.py writes them, from a transformers model, with the gguf
package's writer and quantisers: the tensor names from the package's own TensorNameMap, the converter's metadata
keys, its Q/K row permutation (LlamaModel.permute, copied below) and, per GGML type, every 2-D weight quantised
as llama.cpp's quantiser would store it (1-D tensors and every tensor not named .weight, as gpt-oss's experts'
biases, stay F32, as the converter keeps them).

The reference a test compares with is the same transformers model with each weight replaced by
dequantize(quantize(W)): quantisation blocks run along rows, so the permutation (a reordering of rows) does not
change what a row dequantises to, and the reference never needs tfm's inverse of it."""

from __future__ import annotations

import math
from pathlib import Path

import gguf_metadata_mixers as mixers
import numpy as np
from gguf_metadata import ARCHS, PERMUTED, _kv_heads, _metadata
from gguf_metadata_2026 import NEWER, PLUS_ONE, ROUTED, ROUTER_TYPED, ZERO_CENTRED_BUT, converted
from gguf_metadata_gemma import gemma4_rope_freqs
from gguf_metadata_later import apertus_xielu

REORDERED = ("bloom", "gpt_neox")  # BloomModel, GPTNeoXModel: per-head [q; k; v] -> [Q; K; V]
KEPT_F32 = (
    ".gate.weight",
    "conv.conv.weight",  # (the convolutions' kernels, F32 in the converter's files: LFM2's, the state spaces')
    "conv1d.weight",
    "shared_expert_gate.weight",
    "wpe.weight",
    "norm.weight",
    "router.weight",
    "router.proj.weight",  # (Gemma 4's: ffn_gate_inp)
    "correction_coefs.weight",  # (Gemma 3n's AltUp coefficients: F32 in the converter's files)
    "prediction_coefs.weight",
    "sinks",
    "position_embeddings.weight",
    "token_type_embeddings.weight",
    "indexer.weights_proj.weight",  # (a lightning indexer's heads' weights: F32 in the converter's files)
)
OSS_IN_OUT = ("experts.gate_up_proj", "experts.down_proj")  # gpt-oss's and Llama 4's experts (in, out): transposed
CONV1D = (".c_attn.weight", ".c_proj.weight", ".c_fc.weight")  # GPT2Model.modify_tensors transposes these
GEMMAS = ("gemma", "gemma2", "gemma3_text", *PLUS_ONE)  # their norms stored as 1 + w (GemmaModel.modify_tensors)
EXPERTS = {
    "mixtral": (
        "block_sparse_moe.experts.{e}.{w}.weight",
        ("w1", "w2", "w3"),
        "model.layers.{i}.block_sparse_moe.experts.{w}.weight",
    ),
    "qwen2_moe": (
        "mlp.experts.{e}.{w}.weight",
        ("gate_proj", "up_proj", "down_proj"),
        "model.layers.{i}.mlp.experts.{w}.weight",
    ),
}
EXPERTS["qwen3_moe"] = EXPERTS["olmoe"] = EXPERTS["qwen2_moe"]
EXPERTS |= dict.fromkeys(ROUTED, EXPERTS["qwen2_moe"]) | {"minimax_m2": EXPERTS["mixtral"]}
EXPERTS["phimoe"] = EXPERTS["mixtral"]
EXPERTS |= mixers.EXPERTS
EXPERTS["deepseek_v2"] = EXPERTS["deepseek_v3"] = EXPERTS["cohere2_moe"] = EXPERTS["hy_v3"] = EXPERTS["qwen2_moe"]
EXPERTS["glm_moe_dsa"] = EXPERTS["deepseek_v3"]
EXPERTS["qwen3_next"] = EXPERTS["qwen3_5_moe_text"] = EXPERTS["qwen2_moe"]


def permute(weights: np.ndarray, n_head: int, n_head_kv: int | None) -> np.ndarray:
    """convert_hf_to_gguf.py, LlamaModel.permute (llama.cpp, MIT): halves of each head -> adjacent pairs."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (
        weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def quantisable(array: np.ndarray, qtype) -> bool:
    import gguf

    block = gguf.GGML_QUANT_SIZES[qtype][0]
    return array.ndim >= 2 and array.shape[-1] % block == 0


def round_trip(array: np.ndarray, qtype) -> np.ndarray:
    """What a weight becomes once stored as `qtype` and read back, by the package's reference code (float64)."""
    from gguf.quants import dequantize, quantize

    if qtype.name == "F32" or not array.size:  # (GLM-4.5's shared MLP of no experts: nothing to store)
        return array.astype(np.float32).astype(np.float64)
    if qtype.name == "F16" or not quantisable(array, qtype):  # the converter's fallback: F16 on a QuantError
        return array.astype(np.float32).astype(np.float16).astype(np.float64)
    return dequantize(quantize(array.astype(np.float32), qtype), qtype).astype(np.float64)


def _saved_tensors(model) -> dict[str, np.ndarray]:
    """The tensors as the model's files hold them (what the converter reads), by name."""
    import tempfile

    from safetensors.numpy import load_file

    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        out = {}
        for file in sorted(Path(folder).glob("*.safetensors")):
            out |= load_file(file)
    return out


def llama3_rope_freqs(cfg) -> np.ndarray:
    """convert_hf_to_gguf.py, LlamaModel.generate_extra_tensors (llama.cpp, MIT): Llama 3's per-pair factors, in
    torch's float32 as the converter makes them; the original context from the config's top level (8192 else)."""

    import torch

    rope_params = cfg.rope_parameters
    base = rope_params.get("rope_theta", 10000.0)
    dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor = rope_params.get("factor", 8.0)
    low_freq_factor = rope_params.get("low_freq_factor", 1.0)
    high_freq_factor = rope_params.get("high_freq_factor", 4.0)
    old_context_len = 8192  # hparams.get("original_max_position_embeddings", 8192): 5.x keeps it in rope_parameters
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    rope_factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            rope_factors.append(1)
        elif wavelen > low_freq_wavelen:
            rope_factors.append(factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            rope_factors.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(rope_factors, dtype=torch.float32).numpy()


def _deepseek(tensors: dict[str, np.ndarray], cfg):
    """DeepseekV2Model.modify_tensors (llama.cpp, MIT): kv_b_proj viewed (heads, nope + v, kv_lora_rank), split into
    k_b (transposed to (heads, kv_lora_rank, nope)) and v_b; e_score_correction_bias named as a bias."""
    nope, v = cfg.qk_nope_head_dim, cfg.v_head_dim
    for name, data in tensors.items():
        if name.endswith("kv_b_proj.weight"):
            kv_b = data.reshape(cfg.num_attention_heads, nope + v, data.shape[-1])
            yield name.replace("kv_b_proj", "k_b_proj"), np.ascontiguousarray(kv_b[:, :nope].swapaxes(1, 2))
            yield name.replace("kv_b_proj", "v_b_proj"), np.ascontiguousarray(kv_b[:, nope:])
        elif name.endswith("e_score_correction_bias"):
            yield name.replace("e_score_correction_bias", "e_score_correction.bias"), data
        else:
            yield name, data


def _gpt_oss(tensors: dict[str, np.ndarray]):
    """GptOssModel.modify_tensors (llama.cpp, MIT) on float experts: down_proj transposed, gate_up_proj transposed
    and split into its even (gate) and odd (up) rows, the biases split alike; the sinks named .weight."""
    for name, data in tensors.items():
        if name.endswith("down_proj_bias"):
            yield name.replace("down_proj_bias", "down_proj.bias"), data
        elif name.endswith("experts.down_proj"):
            yield name + ".weight", data.swapaxes(-1, -2)
        elif name.endswith("gate_up_proj_bias"):
            yield name.replace("gate_up_proj_bias", "gate_proj.bias"), data[..., ::2]
            yield name.replace("gate_up_proj_bias", "up_proj.bias"), data[..., 1::2]
        elif name.endswith("gate_up_proj"):
            data = data.swapaxes(-1, -2)
            yield name.replace("gate_up_proj", "gate_proj.weight"), data[:, ::2, :]
            yield name.replace("gate_up_proj", "up_proj.weight"), data[:, 1::2, :]
        elif name.endswith("sinks"):
            yield name + ".weight", data
        else:
            yield name, data


def _converted(model) -> dict[str, np.ndarray]:
    """The converter's modify_tensors: LLaMA's Q/K permuted, experts stacked per layer, Gemma's norms + 1, Gemma's
    and Gemma 2's lm_head dropped; HF names (the stacked ones as the converter names them)."""
    cfg, kind = model.config, model.config.model_type
    tensors = _saved_tensors(model)
    H, G = 0, 0  # (a model without attention: Mamba's)
    if hasattr(cfg, "num_attention_heads"):
        H, G = (
            cfg.num_attention_heads,
            cfg.to_dict()["num_key_value_heads"] if kind == "gemma4_text" else _kv_heads(cfg),
        )
    out = {}
    for name, data in tensors.items():
        if kind == "gpt2" and name.endswith(CONV1D):
            data = data.T
        if kind == "falcon" and "query_key_value" in name:  # FalconModel.modify_tensors (llama.cpp, MIT)
            m = cfg.hidden_size // H
            qkv = data.reshape(G, H // G + 2, m, m * H)
            data = np.concatenate(
                (
                    qkv[:, :-2].reshape(H * m, m * H),
                    qkv[:, [-2]].reshape(G * m, m * H),
                    qkv[:, [-1]].reshape(G * m, m * H),
                )
            ).reshape(data.shape)
        if kind in REORDERED and "query_key_value" in name:  # BloomModel.modify_tensors (llama.cpp, MIT)
            d = cfg.hidden_size
            qkv = data.reshape((H, 3, d // H, *data.shape[1:]))
            data = np.concatenate([qkv[:, j].reshape((-1, *data.shape[1:])) for j in range(3)], axis=0)
        if ARCHS[kind] in PERMUTED and ".q_proj." in name:
            data = permute(data, H, H)
        elif ARCHS[kind] in PERMUTED and ".k_proj." in name:
            data = permute(data, H, G)
        if kind in GEMMAS and name.endswith("norm.weight") and not name.endswith(ZERO_CENTRED_BUT):
            data = data + 1
        if kind in ("gemma", "gemma2") and name == "lm_head.weight":
            continue
        out[name] = data
    if ARCHS[kind] == "T5":  # T5Model.modify_tensors: the shared embedding once
        out = {n: t for n, t in out.items() if n not in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")}
    if ARCHS[kind] == "BERT":  # BertModel.filter_tensors: no pooler, RoBERTa's positions after the padding index
        out = {n: t for n, t in out.items() if not n.startswith(("pooler.", "embeddings.position_ids"))}
        if kind in ("roberta", "xlm-roberta"):
            name = "embeddings.position_embeddings.weight"
            out[name] = out[name][cfg.pad_token_id + 1 :]
    if kind.startswith("deepseek") or kind == "glm_moe_dsa":  # DeepseekV2Model.modify_tensors: kv_b split, the
        # correction bias renamed
        out = dict(_deepseek(out, cfg))
    if kind == "gpt_oss":  # GptOssModel.modify_tensors, for a checkpoint not in MXFP4
        out = dict(_gpt_oss(out))
    if kind == "stablelm" and cfg.qk_layernorm:  # StableLMModel._stack_qk_norm: one (heads, m) tensor per layer
        for i in range(cfg.num_hidden_layers):
            for x, heads in (("q", H), ("k", G)):
                names = [f"model.layers.{i}.self_attn.{x}_layernorm.norms.{h}.weight" for h in range(heads)]
                out[f"model.layers.{i}.self_attn.{x}_layernorm.weight"] = np.stack([out.pop(n) for n in names])
    out = converted(out, cfg)
    if kind in EXPERTS:
        single, parts, merged = EXPERTS[kind]
        E = getattr(cfg, "num_local_experts", None) or getattr(cfg, "num_experts", None)
        E = E or cfg.n_routed_experts  # (DeepSeek's and its kind's)
        for i in range(cfg.num_hidden_layers):
            for w in parts:
                names = [f"model.layers.{i}." + single.format(e=e, w=w) for e in range(E)]
                if names[0] in out:  # (a routed layer)
                    out[merged.format(i=i, w=w)] = np.stack([out.pop(n) for n in names])
    return out


def write_gguf(
    model, path: Path, qtype_name: str = "F32", raw: dict | None = None, raw_type=None, extra: dict | None = None
) -> Path:
    """`model` (a transformers ...ForCausalLM) as a GGUF file of `qtype_name` weights (F32, F16, Q8_0, Q4_0, ...);
    `raw`: tensors given as bytes of `raw_type` instead (rows in the model's order, permuted as the weights are);
    `extra`: more tensors by their GGUF names (F32), as a checkpoint's multi-token-prediction layers."""
    import gguf
    from gguf.quants import quantize

    cfg = model.config
    arch = mixers.arch_of(cfg, ARCHS[cfg.model_type])
    qtype = gguf.GGMLQuantizationType[qtype_name]
    arch_name, named_as = NEWER.get(arch) or (gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH[arch]], arch)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[named_as], cfg.num_hidden_layers)
    sinks = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GPT_OSS, cfg.num_hidden_layers)
    writer = gguf.GGUFWriter(str(path), arch_name)
    _metadata(writer, cfg)
    tensors = _converted(model)
    if arch == "APERTUS":
        tensors = apertus_xielu(writer, tensors)
    if raw is not None:  # bytes in the model's row order, permuted as the converter permutes the weights
        H, G = cfg.num_attention_heads, cfg.num_key_value_heads
        raw = {
            n: permute(b, H, H if ".q_proj." in n else G)
            if arch == "LLAMA" and (".q_proj." in n or ".k_proj." in n)
            else b
            for n, b in raw.items()
        }
    if (getattr(cfg, "rope_parameters", None) or {}).get("rope_type") == "llama3" and arch in (
        "LLAMA",
        "LLAMA4",
        "APERTUS",
    ):
        writer.add_tensor("rope_freqs.weight", llama3_rope_freqs(cfg))
    if arch == "GEMMA4":
        writer.add_tensor("rope_freqs.weight", gemma4_rope_freqs(cfg))
    for hf_name, data in tensors.items():
        mapped = hf_name.replace("transformer.", "") if cfg.model_type == "bloom" else hf_name  # (BloomModel)
        name = mapped if mapped.startswith("blk.") else names.get_name(mapped, try_suffixes=(".weight", ".bias"))
        if name is None and arch in NEWER and ".sinks" in mapped:
            name = sinks.get_name(mapped, try_suffixes=(".weight",))
        assert name is not None, hf_name
        if raw is not None and hf_name in raw:
            writer.add_tensor(name, raw[hf_name], raw_dtype=raw_type)
        elif (
            name.endswith(
                (
                    "ffn_gate_inp.weight" if cfg.model_type not in ROUTER_TYPED else "(none)",
                    "ffn_gate_inp_shexp.weight",
                    "position_embd.weight",
                    "_norm.weight",
                    "token_types.weight",
                    "altup_correct_coef.weight",
                    "altup_predict_coef.weight",
                    "shortconv.conv.weight",  # (the converter's: the kernels in F32)
                    "ssm_conv1d.weight",
                    "indexer.proj.weight",  # (a lightning indexer's heads' weights: INDEXER_PROJ)
                )
            )
            or data.ndim == 1
            or not name.endswith(".weight")  # (the converter's prepare_tensors: gpt-oss's experts' biases)
        ):
            writer.add_tensor(name, data.astype(np.float32))
        elif qtype.name not in ("F32", "F16") and quantisable(data, qtype):
            writer.add_tensor(name, quantize(data.astype(np.float32), qtype), raw_dtype=qtype)
        elif qtype.name != "F32":  # F16 asked for, or the converter's fallback when rows are no whole blocks
            writer.add_tensor(name, data.astype(np.float32).astype(np.float16))
        else:
            writer.add_tensor(name, data.astype(np.float32))
    for name, data in (extra or {}).items():
        writer.add_tensor(name, data.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def dequantised_model(model, qtype_name: str):
    """The same transformers model with every weight as the GGUF file of `qtype_name` stores it (float64): 1-D
    tensors and the router through float32 (Gemma's norms as float32(1 + w) - 1), the others round-tripped."""
    import gguf
    import torch

    qtype = gguf.GGMLQuantizationType[qtype_name]
    kind = model.config.model_type
    gemma = kind in GEMMAS
    with torch.no_grad():
        for name, p in model.named_parameters():
            w = p.detach().numpy()
            if w.ndim == 1 and gemma and name.endswith("norm.weight") and not name.endswith(ZERO_CENTRED_BUT):
                kept = (w + 1).astype(np.float32).astype(np.float64) - 1
            elif name.endswith("A_log"):  # (the file holds A = -exp(A_log) in float32)
                kept = np.log(np.exp(w).astype(np.float32).astype(np.float64))
            elif (
                w.ndim == 1
                or name.endswith("_bias")
                or (  # (gpt-oss's experts' biases)
                    name.endswith(KEPT_F32) and not name.endswith("modality_router.weight")  # (Gemma 3n's: quantised)
                )
            ):
                kept = w.astype(np.float32).astype(np.float64)  # (the routers, GPT-2's positions: F32)
            elif (kind, name.endswith(CONV1D)) == ("gpt2", True) or (
                kind in ("gpt_oss", "llama4_text") and name.endswith(OSS_IN_OUT)
            ):
                kept = round_trip(w.swapaxes(-1, -2), qtype).swapaxes(-1, -2)
            elif kind == "dbrx" and name.endswith("experts.mlp.w2"):  # (stored per expert transposed)
                per_expert = w.reshape(model.config.ffn_config.moe_num_experts, -1, w.shape[-1]).swapaxes(1, 2)
                kept = round_trip(per_expert, qtype).swapaxes(1, 2).reshape(w.shape)
            else:
                kept = round_trip(w, qtype)
            p.copy_(torch.from_numpy(kept))
    return model


# Where each K-quant and IQ4 block keeps its float16 scales (ggml's block structs): set to a moderate value so that
# random blocks dequantise to finite weights of a model's size.
SCALE_OFFSETS = {
    "Q2_K": (80, 82),
    "Q3_K": (108,),
    "Q4_K": (0, 2),
    "Q5_K": (0, 2),
    "Q6_K": (208,),
    "IQ4_NL": (0,),
    "IQ4_XS": (0,),
}


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
