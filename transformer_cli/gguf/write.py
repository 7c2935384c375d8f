"""A model as a GGUF file, as llama.cpp's convert_hf_to_gguf.py would write it: the architecture of its Hugging Face
model_type, the metadata keys that architecture's reader takes, the converter's changes made (LLaMA's Q/K rows
permuted, Gemma's norms stored as 1 + w), norms, routers and positions in F32, the other weights in the asked type
(F32, F16, BF16, Q8_0, Q4_0) by the gguf package's quantiser, with the converter's F16 fallback for rows that are
no whole blocks, and the tensors not named .weight in F32; or, for Q4_K_M, each tensor in the type llama-quantize
gives it (gguf/mixes.py), by llama.cpp's own Q4_K and Q6_K quantisers (gguf/kquants.py). general.file_type and
general.quantization_version as the converter writes them. Tensors are written one at a time. The file is read back
before it is published: a model the format cannot hold (Mistral's window, Qwen-MoE's dense layers) is refused
naming what it would lose."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SpecError
from ..families import GGUF_OF, RECORDS
from ..hf.layouts import hf_shape, join, piece, rules, tensor_shapes
from ..io.outputs import publish, temp_name
from ..spec.definition import Spec
from ..spec.rope_scaling import longrope_attention_factor
from . import kquants
from .archs import ARCH_OF, ARCHITECTURES
from .base import BANDS, LLAMA3, _llama3_factors
from .mixes import KEPT_F32, MIXES, converter_type, mix_types
from .model import pieces_of, spec_from_gguf
from .vocab import add_vocabulary

TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K_M")
FILE_TYPES = {"F32": 0, "F16": 1, "BF16": 32, "Q8_0": 7, "Q4_0": 2, "Q4_K_M": 15}  # gguf.LlamaFileType's


def _metadata(spec: Spec, arch: str) -> dict[str, Any]:
    """`{arch}.*` keys (and their values: int, float, str, bool or a list) that the architecture's reader takes."""
    out: dict[str, Any] = {
        "block_count": spec.N,
        "embedding_length": spec.d,
        "feed_forward_length": spec.r,
        "attention.head_count": spec.H,
        "attention.head_count_kv": spec.kv_heads,
        "attention.key_length": spec.m,
        "attention.value_length": spec.m,
        "vocab_size": spec.V,
    }
    if spec.context or spec.max_len:
        out["context_length"] = spec.context or spec.max_len
    family = GGUF_OF.get(arch)
    rms = spec.norm_type == "rmsnorm" or (family is not None and family.rms_epsilon)  # (PhiMoE's LayerNorms)
    eps = "attention.layer_norm_rms_epsilon" if rms else "attention.layer_norm_epsilon"
    out[eps] = float(spec.norm_eps)
    if spec.positional == "rope":
        out |= {"rope.freq_base": float(spec.rope_theta), "rope.dimension_count": int(spec.m * spec.rope_fraction)}
    if spec.rope_scaling in ("linear", "yarn"):
        out |= {"rope.scaling.type": spec.rope_scaling, "rope.scaling.factor": float(spec.rope_factor)}
    if spec.rope_scaling == "yarn":
        out |= {
            "rope.scaling.original_context_length": spec.rope_original_max_len,
            "rope.scaling.yarn_beta_fast": float(spec.rope_beta_fast),
            "rope.scaling.yarn_beta_slow": float(spec.rope_beta_slow),
        }
        if spec.rope_attention_factor is not None:
            out["rope.scaling.yarn_attn_factor"] = float(spec.rope_attention_factor)
    if spec.rope_scaling == "longrope":  # Phi-3, PhiMoE: the attention factor always (Phi3MiniModel)
        derived = longrope_attention_factor(float(spec.rope_factor), spec.rope_original_max_len or 1)
        out |= {
            "rope.scaling.original_context_length": spec.rope_original_max_len,
            "rope.scaling.attn_factor": float(spec.rope_attention_factor or derived),
        }
    if spec.E:
        out |= {"expert_count": spec.E, "expert_used_count": spec.k}
        if spec.expert_r:
            out["expert_feed_forward_length"] = spec.expert_r
        if spec.shared_r:
            out["expert_shared_feed_forward_length"] = spec.shared_r
    if spec.attn_softcap:
        out["attn_logit_softcapping"] = float(spec.attn_softcap)
    if spec.logit_softcap:
        out["final_logit_softcapping"] = float(spec.logit_softcap)
    if spec.window or (family is not None and family.window_always):
        out["attention.sliding_window"] = spec.window or 0
    if family is not None:  # the family's own keys (families/)
        out |= family.metadata(spec)
    return out


def file_model(spec: Spec, arch_name: str) -> Spec:
    """The model as the file holds it, where the family changes it (Falcon-H1's multipliers folded, its head then
    apart): its held_model's spec, which reads no weight."""
    made = GGUF_OF.get(arch_name)
    return spec if made is None or made.held_model is None else made.held_model(spec, {})[0]


def as_written(spec: Spec, arch_name: str) -> Spec | None:
    """The model as llama.cpp reads the GGUF file tfm would write of `spec` in `arch_name` (its header alone: a
    window the architecture has no key for, Mistral's in llama's, is gone), or None where the header needs the
    weights to be made (a block's number held as a key)."""
    from ..spec.load import spec_from_mapping
    from .header import Header, TensorInfo
    from .mixes import file_tensors
    from .model import spec_mapping

    made, arch, spec = GGUF_OF.get(arch_name), ARCHITECTURES[arch_name], file_model(spec, arch_name)
    if made is None or any(v is None for v in arch.in_metadata.values()):
        return None
    metadata: dict[str, Any] = {"general.architecture": arch_name, "general.name": spec.label}
    metadata |= {f"{arch_name}.{key}": value for key, value in _metadata(spec, arch_name).items()}
    metadata |= {key: [fixed] * spec.N for key, fixed in arch.in_metadata.items()}
    infos = {name: TensorInfo(name, shape[::-1], 0, 0, 0) for name, shape in file_tensors(spec, arch_name)[2].items()}
    header = Header(Path(f"{spec.label}.gguf"), 3, metadata, infos, 0, 0)
    try:
        return spec_from_mapping(spec_mapping(header), str(header.path))
    except SpecError:
        return None


def extra_tensors(spec: Spec, arch_name: str) -> dict[str, np.ndarray]:
    """The tensors the converter adds (F32): rope_freqs, LongRoPE's factors, and the family's own (Falcon-H1's
    head, written though tied)."""
    made = GGUF_OF.get(arch_name)
    return _extra_tensors(spec) | (made.extra(spec) if made is not None and made.extra is not None else {})


def _extra_tensors(spec: Spec) -> dict[str, np.ndarray]:
    """Tensors the converter generates: Llama 3's rope_freqs, Phi-3's LongRoPE factors (F32)."""
    if spec.rope_scaling == "llama3":
        bands = (spec.rope_low_freq_factor, spec.rope_high_freq_factor)
        if bands not in BANDS or spec.rope_original_max_len != LLAMA3["rope_original_max_len"]:
            raise SpecError(
                f"{spec.label}: a GGUF file holds Llama 3's scaling as factors made with Meta's bands (1 and 4, or 1 "
                "and 1) and original context 8192; this model's differ"
            )
        rotated = int(spec.m * spec.rope_fraction)
        factors = _llama3_factors(spec.rope_theta, rotated, spec.rope_factor, *bands)
        return {"rope_freqs.weight": factors.astype(np.float32)}
    if spec.rope_scaling == "longrope":
        assert spec.rope_short_factor is not None and spec.rope_long_factor is not None
        return {
            "rope_factors_short.weight": np.asarray(spec.rope_short_factor, dtype=np.float32),
            "rope_factors_long.weight": np.asarray(spec.rope_long_factor, dtype=np.float32),
        }
    return {}


def _stored(data: np.ndarray, qtype) -> np.ndarray:
    from gguf.quants import quantize

    data = np.ascontiguousarray(data, dtype=np.float32)
    if qtype.name == "F32":
        return data
    if qtype.name == "F16":
        return data.astype(np.float16)
    if qtype.name in kquants.QUANTISERS:
        return kquants.quantize(data, qtype.name)
    try:
        return quantize(data, qtype)
    except NotImplementedError:  # (a type of the mix no quantiser here writes)
        raise SpecError(f"a tensor in {qtype.name}: tfm has no quantiser of that type to write it") from None


def write_gguf(
    out: Path,
    spec: Spec,
    model_type: str,
    weights: Mapping[str, np.ndarray],
    type_name: str = "F16",
    overwrite: bool = False,
    tokenizer: Path | None = None,
) -> tuple[int, str]:
    """Write the model (`spec`, `weights` by tfm's names, of Hugging Face `model_type`) as a GGUF file at `out`,
    with the tokenizer of the folder `tokenizer` (gguf/vocab.py); returns the tensors written and what was said of
    the tokenizer. Refused in one line where the format cannot hold the model."""
    import gguf

    if model_type not in ARCH_OF:
        raise SpecError(
            f"{spec.label}: model_type '{model_type}' has no GGUF architecture tfm writes (it writes "
            f"{', '.join(sorted(ARCH_OF))})"
        )
    if type_name.upper() not in TYPES:
        raise SpecError(f"--type {type_name}: tfm writes GGUF files of {', '.join(t.lower() for t in TYPES)}")
    also = [g.arch for g in RECORDS[model_type].gguf_also if g.writes is not None and g.writes(spec)]
    arch_name, mix = (also or [ARCH_OF[model_type]])[0], type_name.lower() if type_name.lower() in MIXES else None
    asked = None if mix else gguf.GGMLQuantizationType[type_name.upper()]
    arch = ARCHITECTURES[arch_name]
    made, told = GGUF_OF[arch_name], ""
    if made.held_model is not None:  # (what the converter folds into the weights, or llama.cpp runs otherwise)
        spec, weights, told = made.held_model(spec, weights)
    extra = extra_tensors(spec, arch_name)
    meta = _metadata(spec, arch_name)
    shapes = tensor_shapes(spec)
    pieces = pieces_of(arch, None, spec)  # (written as the newer converters split them)
    layout = rules(arch.layout_of(spec), spec)
    in_metadata = {rule.hf: rule.tfm[0] for rule in layout if arch.from_metadata(rule.hf) is not None}
    planned = [(rule, hf_shape(rule, shapes)) for rule in layout if rule.hf not in in_metadata]
    tensors = [
        (name, shape) for rule, whole in planned for name, shape in (pieces.get(rule.hf) or {rule.hf: whole}).items()
    ]
    tmp = out.parent / temp_name(out.name)
    try:
        writer = gguf.GGUFWriter(str(tmp), arch_name)
        writer.add_name(spec.label)
        writer.add_quantization_version(gguf.GGML_QUANT_VERSION)  # (as the converter's prepare_metadata)
        writer.add_file_type(FILE_TYPES[type_name.upper()])  # (its set_gguf_parameters: the type asked for)
        for key, value in meta.items():
            add: Callable = (
                writer.add_array
                if isinstance(value, list)
                else writer.add_string
                if isinstance(value, str)
                else writer.add_bool
                if isinstance(value, bool)
                else writer.add_float32
                if isinstance(value, float)
                else writer.add_uint32
            )
            add(f"{arch_name}.{key}", value)
        for key, fixed in arch.in_metadata.items():  # (one number per block, its tensor's or the fixed value)
            names = [tfm for hf, tfm in in_metadata.items() if hf.split(".", 2)[-1] == key]
            if fixed is None and len(names) != spec.N:
                ours = next(tfm for tfm, hf in arch.layout.names.items() if hf == key)
                raise SpecError(
                    f"{out}: the GGUF {arch_name} architecture cannot hold this model (it holds each block's "
                    f"{ours} as {key}; this model has none): not written"
                )
            writer.add_array(key, [float(weights[n][0]) for n in names] if fixed is None else [fixed] * spec.N)
        said = add_vocabulary(writer, tokenizer, int(spec.V or 0))
        if mix is not None:  # (each tensor as llama-quantize types it; F32 where it keeps the source's)
            types = {name: gguf.GGMLQuantizationType[t] for name, t in mix_types(spec, arch_name, mix).items()}
        else:
            kept = tuple(k for k in KEPT_F32 if not (made.router_typed and k == "ffn_gate_inp.weight"))
            types = {name: converter_type(name, shape, asked, kept) for name, shape in tensors}
        for name, data in extra.items():
            writer.add_tensor_info(name, data.shape, np.dtype(np.float32), data.nbytes)
        for name, shape in tensors:
            block, size = gguf.GGML_QUANT_SIZES[types[name]]
            nbytes = int(np.prod(shape)) // block * size
            writer.add_tensor_info(name, shape, np.dtype(np.float32), nbytes, raw_dtype=types[name])
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for data in extra.values():
            writer.write_tensor_data(data)
        for rule, _ in planned:
            joined = join(rule, {name: piece(weights, name) for name in rule.tfm}, spec)
            short = rule.hf.split(".", 2)[-1] if rule.hf.startswith("blk.") else rule.hf
            if short in arch.redo:
                joined = arch.redo[short](joined, meta)
            parts = arch.joined[short].divide(joined, spec) if rule.hf in pieces else [joined]
            for name, part in zip(pieces.get(rule.hf) or [rule.hf], parts, strict=True):
                writer.write_tensor_data(_stored(part, types[name]))
        writer.close()
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        written = spec_from_gguf(tmp)
        if written.model_keys() != spec.model_keys():
            lost = ", ".join(spec.differing_keys(written))
            raise SpecError(
                f"{out}: the GGUF {arch_name} architecture cannot hold this model ({lost} would differ "
                "when read back): not written"
            )
        publish(tmp, out, overwrite)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return len(planned) + len(extra), "; ".join(line for line in (told, said) if line)


__all__ = ["ARCH_OF", "TYPES", "as_written", "extra_tensors", "file_model", "write_gguf"]
