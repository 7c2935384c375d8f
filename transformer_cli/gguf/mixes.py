"""llama.cpp's file types that mix GGML types (Q4_K_M, Q5_K_M, ...): the type `llama-quantize` gives each tensor
of a GGUF file, as src/llama-quant.cpp's llama_tensor_get_type chooses it, and so the bytes such a file holds.

The rules, for the mixes here (no importance matrix, no --pure, no overrides):
- not quantised: 1-D tensors, norms, routers (ffn_gate_inp), positions, token types; they keep the source
  file's type (F32, as the converter writes them).
- output (the head; the token embedding too when the head is tied to it): Q6_K, or Q8_0 for Falcon or where a
  row (d) is no whole number of 256-element blocks.
- attn_v (and a fused attn_qkv, which llama.cpp counts as attn_v): Q4_K_M and Q5_K_M take Q6_K in the blocks
  where use_more_bits(i, N) holds (the first and last eighth, and every third between); Q4_K_S Q5_K in blocks
  0-3; Q3_K_M Q5_K in blocks 0-1 and Q4_K after. A model of 80 blocks with grouped keys (llama.cpp's 70B type)
  lifts a Q3_K or Q4_K attn_v to Q5_K; with 8 experts attn_v and attn_k are Q8_0.
- attn_output: with 8 experts Q5_K (Q3_K_M, Q4_K_S, Q4_K_M); Q3_K_M's is Q4_K.
- ffn_down (experts' and shared experts' too): Q4_K_M Q6_K where use_more_bits (Falcon: Q6_K in the first
  sixteenth, Q5_K where use_more_bits, Q4_K else); Q5_K_M Q6_K where use_more_bits; Q4_K_S Q5_K in the first
  eighth; Q3_K_M Q5_K in the first sixteenth, Q4_K after (Falcon: Q3_K where not use_more_bits).
- everything else: the mix's own type (Q3_K, Q4_K, Q5_K).
- a tensor whose rows are no whole blocks of its type falls back: Q3_K to Q4_0, Q4_K to Q5_0, Q5_K to Q5_1,
  Q6_K to Q8_0, and to F16 where the rows are no whole blocks of 32 either.
"""

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

MIXES = {"q3_k_m": "Q3_K", "q4_k_s": "Q4_K", "q4_k_m": "Q4_K", "q5_k_s": "Q5_K", "q5_k_m": "Q5_K"}
FALLBACK = {"Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}
Shape = tuple[int, ...]
KEPT = (
    "_norm.weight",
    "ffn_gate_inp.weight",
    "ffn_gate_inp_shexp.weight",
    "position_embd.weight",
    "token_types.weight",
)
UNQUANTISED: tuple[str, ...] = (
    "altup",
    "laurel",
    "per_layer_model_proj",
)  # kept as they are (llama-quant.cpp: small, or not big)
UNQUANTISED += ("ssm_conv1d", "shortconv.conv.weight")  # (its "Mamba/Kimi's small conv1d weights", LFM2's)


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp's choice of the blocks that get more bits: the first and last eighth, and every third between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _block_type(mix: str, short: str, i: int, spec: Spec, falcon: bool) -> str:
    """The type of block i's tensor `short` ('attn_v.weight') before the fallback."""
    n, experts = spec.N, spec.E or 0
    base = MIXES[mix]
    kind = base
    if short.startswith(("attn_v.", "attn_qkv.", "attn_kv_b.")):
        if mix in ("q4_k_m", "q5_k_m") and use_more_bits(i, n):
            kind = "Q6_K"
        elif mix == "q4_k_s" and i < 4:
            kind = "Q5_K"
        elif mix == "q3_k_m":
            kind = "Q5_K" if i < 2 else "Q4_K"
        if n == 80 and spec.G not in (None, spec.H) and kind in ("Q3_K", "Q4_K"):  # llama.cpp's LLM_TYPE_70B
            kind = "Q5_K"
        return "Q8_0" if experts == 8 else kind
    if short.startswith("attn_k."):
        return "Q8_0" if experts == 8 else kind
    if short.startswith("attn_output."):
        if falcon:
            return kind
        if experts == 8:
            return "Q5_K" if mix in ("q3_k_m", "q4_k_s", "q4_k_m") else kind
        return "Q4_K" if mix == "q3_k_m" else kind
    if "ffn_down" in short:
        more = use_more_bits(i, n)
        if mix == "q3_k_m":
            return "Q5_K" if i < n // 16 else "Q4_K" if not falcon or more else "Q3_K"
        if mix == "q4_k_m" and falcon:
            return "Q6_K" if i < n // 16 else "Q5_K" if more else "Q4_K"
        if mix in ("q4_k_m", "q5_k_m") and more:
            return "Q6_K"
        if mix == "q4_k_s" and not falcon and i < n // 8:
            return "Q5_K"
    return kind


def tensor_type(
    mix: str, name: str, shape: tuple[int, ...], spec: Spec, tied: bool, falcon: bool = False
) -> str | None:
    """The GGML type llama-quantize gives GGUF tensor `name` of numpy `shape` (rows last-axis long) in file type
    `mix` (`tied`: the file has no output.weight); None for a tensor it keeps in the source's type."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    if len(shape) < 2 or not name.endswith("weight") or name.endswith(KEPT) or any(k in name for k in UNQUANTISED):
        return None
    embedding = name in ("token_embd.weight", "per_layer_token_embd.weight")  # (llama-quant.cpp: one category)
    if name == "output.weight" or (embedding and tied):
        kind = "Q8_0" if falcon or shape[-1] % 256 else "Q6_K"
    elif embedding:
        kind = MIXES[mix]
    else:
        block, short = name.split(".", 2)[1:]
        kind = _block_type(mix, short, int(block), spec, falcon)
    row = shape[-1]
    if row % GGML_QUANT_SIZES[GGMLQuantizationType[kind]][0]:
        kind = FALLBACK.get(kind, kind)
        if row % GGML_QUANT_SIZES[GGMLQuantizationType[kind]][0]:
            kind = "F16"
    return kind


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


def _file_tensors(spec: Spec, arch_name: str) -> tuple[list[Rule], dict[str, dict[str, Shape]], dict[str, Shape]]:
    """The layout's rules, the tensors held in pieces, and the GGUF tensors with their shapes as a newer
    converter writes them (DeepSeek's kv_b in two)."""

    layout, shapes = _layout(spec, arch_name), tensor_shapes(spec)
    pieces = pieces_of(ARCHITECTURES[arch_name], None, spec)
    tensors: dict[str, Shape] = {}
    for rule in layout:
        if ARCHITECTURES[arch_name].from_metadata(rule.hf) is None:  # (else a number in the metadata)
            tensors |= pieces.get(rule.hf) or {rule.hf: hf_shape(rule, shapes)}
    return layout, pieces, tensors


def _types(tensors: dict[str, Shape], spec: Spec, arch_name: str, mix: str) -> dict[str, str]:
    tied, record = "output.weight" not in tensors, GGUF_OF.get(arch_name)
    falcon = record is not None and record.quantize_as_falcon
    return {name: tensor_type(mix, name, shape, spec, tied, falcon) or "F32" for name, shape in tensors.items()}


def mix_types(spec: Spec, arch_name: str, mix: str) -> dict[str, str]:
    """Each GGUF tensor's type in a file of `mix` (the kept ones F32, as the converter writes them)."""
    return _types(_file_tensors(spec, arch_name)[2], spec, arch_name, mix)


def mix_held(spec: Spec, arch_name: str, mix: str) -> Held:
    """The bytes of each of tfm's tensors in a GGUF file of file type `mix`, for the plan."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    if encoder(spec) is not None:
        raise SpecError(
            f"--weights {mix}: {spec.label} is an encoder-decoder; llama.cpp's mixes are for the GGUF "
            "architectures tfm reads (decoder-only)"
        )
    layout, pieces, tensors = _file_tensors(spec, arch_name)
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
