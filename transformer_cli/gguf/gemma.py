"""GGUF Gemma, Gemma 2 and Gemma 3 (text) as convert_hf_to_gguf.py writes them: every norm stored as 1 + w (tfm
reads w back: norm_plus_one, as Hugging Face keeps it), the head tied (no output.weight). What the file does not
hold is read as llama.cpp reads it: rope base 10000 for Gemma and Gemma 2, their layers' kinds by the fixed
pattern (Gemma 2: every other layer slides from the first; Gemma 3: five to one), and Gemma 2/3's score scale
1/sqrt(d/H) for the 27B models (46 and 62 layers), 1/sqrt(head size) otherwise (query_pre_attn_scalar is not in
the file)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..families.keys import Keys
from ..families.layout import Family
from ..hf.gemma import sliding_rope
from .base import LLAMA_LAYOUT, Arch, Transform, sizes
from .header import Header

BIG = {"gemma2": 46, "gemma3": 62}  # (see the module's docstring)
GEMMA2_LAYOUT = Family(
    "blk.{i}.",
    {ours: theirs for ours, theirs in LLAMA_LAYOUT.names.items() if not ours.startswith("norm2")}
    | {
        "norm1_out.gamma": "post_attention_norm.weight",
        "norm2.gamma": "ffn_norm.weight",
        "norm2_out.gamma": "post_ffw_norm.weight",
    },
    LLAMA_LAYOUT.globals_,
)


def _less_one(rows: np.ndarray, meta: dict[str, Any]) -> np.ndarray:
    """The converter stores Gemma's norm gains as 1 + w: w back."""
    return rows - 1.0


NORMS = (
    "attn_norm.weight",
    "ffn_norm.weight",
    "post_attention_norm.weight",
    "post_ffw_norm.weight",
    "attn_q_norm.weight",
    "attn_k_norm.weight",
    "output_norm.weight",
)
LESS_ONE: dict[str, Transform] = dict.fromkeys(NORMS, _less_one)
PLUS_ONE: dict[str, Transform] = dict.fromkeys(NORMS, lambda rows, meta: rows + 1.0)


def _common(c: Keys, header: Header, base: float) -> dict[str, Any]:
    return sizes(c, header) | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", base),
        "norm_type": "rmsnorm",
        "norm_eps": c.number("attention.layer_norm_rms_epsilon", 1e-6),
        "norm_plus_one": True,
        "embed_scale": "sqrt",
        "feedforward": "gated",
        "activation": "gelu",
        "ff_bias": False,
        "tie_embeddings": True,
    }


def gemma(c: Keys, header: Header) -> dict[str, Any]:
    """Gemma: (1 + w) RMSNorms, embeddings times sqrt(d), GeGLU (tanh), a tied head."""
    return _common(c, header, 10000.0)


def _layered(c: Keys, spec: dict[str, Any], arch: str, period: int) -> dict[str, Any]:
    """Gemma 2 and 3: the sandwich of norms, soft-capping where the file says, the score scale, sliding layers."""
    N, m = spec["N"], spec["m"]
    spec |= {"norm": "sandwich"}
    if N == BIG[arch] and spec["d"] // spec["H"] != m:
        spec["scale"] = (spec["d"] / spec["H"]) ** -0.5
    for ours, theirs in (("attn_softcap", "attn_logit_softcapping"), ("logit_softcap", "final_logit_softcapping")):
        if c.has(theirs):
            spec[ours] = c.number(theirs)
    if c.has("attention.sliding_window"):
        kinds = ["sliding" if (i + 1) % period else "full" for i in range(N)]
        spec["window"] = c.count("attention.sliding_window")
        if "full" in kinds:
            spec["attention_layers"] = kinds
    return spec


def gemma2(c: Keys, header: Header) -> dict[str, Any]:
    return _layered(c, _common(c, header, 10000.0), "gemma2", 2)


def gemma3(c: Keys, header: Header) -> dict[str, Any]:
    """Gemma 3: Gemma 2's block with query/key norms, the full layers' base (and linear scaling), the sliding
    layers' own base (rope.freq_base_swa; every layer's when all slide, under six layers)."""
    spec = _layered(c, _common(c, header, 1e6) | {"qk_norm": True}, "gemma3", 6)
    if c.has("rope.scaling.type"):
        kind = c.text("rope.scaling.type")
        if kind != "linear":
            raise c.refuse("rope.scaling.type", kind, "tfm reads Gemma 3's full layers with linear scaling or none")
        spec |= {"rope_scaling": "linear", "rope_factor": c.number("rope.scaling.factor")}
    return sliding_rope(spec, {"rope_theta": c.number("rope.freq_base_swa", 10000.0)})


GEMMA = Arch(gemma, LLAMA_LAYOUT, LESS_ONE, redo=PLUS_ONE)
GEMMA2 = Arch(gemma2, GEMMA2_LAYOUT, LESS_ONE, redo=PLUS_ONE)
GEMMA3 = Arch(gemma3, GEMMA2_LAYOUT, LESS_ONE, redo=PLUS_ONE)

__all__ = ["GEMMA", "GEMMA2", "GEMMA3"]
