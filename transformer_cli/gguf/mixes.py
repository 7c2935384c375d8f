"""llama.cpp's file types (Q4_K_M, IQ4_XS, ...): the GGML type `llama-quantize` gives each tensor of a GGUF file
(gguf/quant_rules.py, a port of src/llama-quant.cpp), and so the bytes such a file holds; the kept tensors (norms,
routers, positions, small convolutions) F32, as the converter writes them."""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..components.held import Held
from ..components.tensors import iter_tensors
from ..errors import SpecError
from ..families import GGUF_OF
from ..hf.layouts import Rule, bytes_by_tensor, hf_shape, rules, tensor_shapes
from ..spec.definition import Spec
from ..spec.stacks import encoder
from .archs import ARCHITECTURES
from .model import pieces_of
from .quant_rules import Model, file_types

KEPT_F32: tuple[str, ...] = ("_norm.weight", "ffn_gate_inp.weight", "ffn_gate_inp_shexp.weight", "position_embd.weight")
KEPT_F32 += ("altup_correct_coef.weight", "altup_predict_coef.weight")  # (the converter's: Gemma 3n's AltUp)
KEPT_F32 += ("shortconv.conv.weight", "ssm_conv1d.weight")  # (the converter's: LFM2's and the state spaces' kernels)
KEPT_F32 += ("indexer.proj.weight",)  # (the converter's: a lightning indexer's heads' weights)
MIXES = {"q3_k_m": "Q3_K", "q4_k_s": "Q4_K", "q4_k_m": "Q4_K", "q5_k_s": "Q5_K", "q5_k_m": "Q5_K"}
Shape = tuple[int, ...]


def quantise_model(spec: Spec, arch_name: str) -> Model:
    """What llama-quantize reads of the model (quant_rules.Model): Falcon's rules where the record says, llama.cpp's
    70B type for 80 blocks of grouped keys."""
    record = GGUF_OF.get(arch_name)
    falcon = record is not None and record.quantize_as_falcon
    grouped = spec.G not in (None, spec.H)
    return Model(falcon, spec.N, spec.H // spec.kv_heads, spec.E or 0, is_70b=spec.N == 80 and grouped)


def _layout(spec: Spec, arch_name: str) -> list[Rule]:
    """The GGUF tensors of the model in architecture `arch_name`, which must hold every one of tfm's tensors."""

    try:
        layout = list(rules(ARCHITECTURES[arch_name].layout_of(spec), spec))
    except SpecError as e:
        raise SpecError(f"{spec.label}: not a GGUF {arch_name} model, so no llama.cpp mix prices it ({e})") from None
    held = {name.split("[")[0] for rule in layout for name in rule.tfm}
    left = [t.name for t in iter_tensors(spec) if t.name not in held]
    if left:
        more = f" and {len(left) - 3} more" if len(left) > 3 else ""
        raise SpecError(
            f"{spec.label}: not a GGUF {arch_name} model (that architecture holds no "
            f"{', '.join(left[:3])}{more}), so no llama.cpp mix prices it"
        )
    return layout


def file_tensors(spec: Spec, arch_name: str) -> tuple[list[Rule], dict[str, dict[str, Shape]], dict[str, Shape]]:
    """The layout's rules, the tensors held in pieces, and the GGUF tensors with their shapes as a newer
    converter writes them (DeepSeek's kv_b in two)."""

    layout, shapes = _layout(spec, arch_name), tensor_shapes(spec)
    pieces = pieces_of(ARCHITECTURES[arch_name], None, spec)
    tensors: dict[str, Shape] = {}
    for rule in layout:
        if ARCHITECTURES[arch_name].from_metadata(rule.hf) is None:  # (else a number in the metadata)
            tensors |= pieces.get(rule.hf) or {rule.hf: hf_shape(rule, shapes)}
    return layout, pieces, tensors


def _types(
    tensors: dict[str, Shape], spec: Spec, arch_name: str, mix: str, imatrix: bool | None = None
) -> dict[str, str]:
    types = file_types(tensors, mix, quantise_model(spec, arch_name), imatrix)
    return {name: types[name] or "F32" for name in tensors}


def mix_types(spec: Spec, arch_name: str, mix: str, imatrix: bool | None = None) -> dict[str, str]:
    """Each GGUF tensor's type in a file of `mix` (the kept ones F32, as the converter writes them); `imatrix`:
    made with an importance matrix or not (None: where the file type needs one)."""
    return _types(file_tensors(spec, arch_name)[2], spec, arch_name, mix, imatrix)


def converter_type(name: str, shape: tuple[int, ...], asked, kept: tuple[str, ...] = KEPT_F32):
    """The tensor's GGML type: F32 for 1-D tensors, every tensor not named .weight (gpt-oss's experts' biases),
    and those ending as `kept` (norms, routers, positions); else `asked`, F16 where its rows are no whole blocks of
    it (the converter's fallback)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    if len(shape) <= 1 or not name.endswith(".weight") or name.endswith(kept) or asked.name == "F32":
        return GGMLQuantizationType.F32
    block = GGML_QUANT_SIZES[asked][0]
    return asked if shape[-1] % block == 0 else GGMLQuantizationType.F16


def file_bytes(spec: Spec, arch_name: str, kind: str) -> dict[str, int]:
    """Each GGUF tensor's bytes in a file of `kind`: a llama-quantize file type (q4_k_m, q8_0, ...), or f32, f16
    or bf16 as the converter writes them (norms, routers and positions F32, rows of no whole block F16)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    _, _, tensors = file_tensors(spec, arch_name)
    if kind in ("f32", "f16", "bf16"):
        asked = GGMLQuantizationType[kind.upper()]
        types = {name: converter_type(name, shape, asked, KEPT_F32).name for name, shape in tensors.items()}
    else:
        types = _types(tensors, spec, arch_name, kind)
    out = {}
    for name, shape in tensors.items():
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType[types[name]]]
        out[name] = math.prod(shape) // block * size
    return out


def mix_held(spec: Spec, arch_name: str, mix: str) -> Held:
    """The bytes of each of tfm's tensors in a GGUF file of file type `mix`, for the plan."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    if encoder(spec) is not None:
        raise SpecError(
            f"--weights {mix}: {spec.label} is an encoder-decoder; llama.cpp's mixes are for the GGUF "
            "architectures tfm reads (decoder-only)"
        )
    layout, pieces, tensors = file_tensors(spec, arch_name)
    types = _types(tensors, spec, arch_name, mix)
    sizes = {}
    for name, shape in tensors.items():
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType[types[name]]]
        sizes[name] = math.prod(shape) // block * size
    rule_of = {name: rule for rule in layout for name in rule.tfm}
    held = bytes_by_tensor(
        rule_of, tensor_shapes(spec), lambda hf: sum(sizes.get(n, 4) for n in pieces.get(hf) or [hf])
    )
    return Held(f"{mix}: {_named(types.values())}", held, mix)


def _named(types: Iterable[str]) -> str:
    return ", ".join(sorted(set(types) - {"F32"}))
