"""Qwen3.5's GGUF files (qwen35, and qwen35moe where blocks route), as llama.cpp's converter writes them
(conversion/qwen.py: Qwen3_5TextModel, Qwen3_5MoeTextModel) and llama.cpp reads them (src/models/qwen35.cpp).

Qwen3-Next's file (qwen3_next_gguf.py: the gated attention, the linear attention's sizes in ssm.* keys, each
layer's kind, A = -exp(A_log), the norms as 1 + w) with Qwen3.5's projections apart (ssm_alpha, ssm_beta), a SwiGLU
in every block of qwen35, and the rotary's MRoPE sections (rope.dimension_sections, which llama.cpp requires; for
text every axis is the same position, so they change nothing as long as they cover every rotated pair: tfm deals
the pairs as Qwen3.5 does, 11, 11, 10 of its 32, where the converter writes 11, 11, 10 whatever the size, which
llama.cpp refuses for fewer than 32 rotated dims). The converter also reorders the value heads from
grouped by key head (transformers': value head j reads key head j // (H_v / H_k)) to tiled (value head j reads key
head j % H_k, ggml's broadcast): the rows of attn_qkv's v part, attn_gate, ssm_alpha, ssm_beta, ssm_a, ssm_dt and
the convolution's v channels, and ssm_out's columns. tfm undoes it on reading and makes it on writing.

llama.cpp takes the key heads' size for the value heads' (ssm.state_size): other models are refused when written,
as are a qwen35moe without renormalisation or a gated shared expert.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SpecError
from ..spec.definition import Spec
from .gemma import LESS_ONE, PLUS_ONE
from .gguf_layout import stacked_experts
from .keys import Keys
from .layout import Family
from .mamba_gguf import A_MADE, A_UNDONE
from .qwen3_next_gguf import LAYOUT as NEXT_LAYOUT
from .qwen3_next_gguf import NAMES as NEXT_NAMES
from .qwen3_next_gguf import gguf_spec as next_spec
from .qwen3_next_gguf import linear_metadata
from .record import Gguf


def _reordered(tiled: bool, width: str | None, part: str = "all", axis: int = 0):
    """The converter's reorder of the value heads (tiled) or its inverse, on `axis`: each head `width` wide (the
    metadata key of it, None: 1), over all rows or those after the queries' and keys' (`part` "v")."""

    def change(array: np.ndarray, meta: dict[str, Any]) -> np.ndarray:
        nk, nv = meta["ssm.group_count"], meta["ssm.time_step_rank"]
        size = meta["ssm.inner_size"] // nv if width else 1
        array = np.moveaxis(np.asarray(array), axis, 0)
        start = 2 * nk * meta["ssm.state_size"] if part == "v" else 0
        v = array[start:]
        groups = (nv // nk, nk) if tiled else (nk, nv // nk)
        moved = v.reshape(*groups, size, *v.shape[1:]).swapaxes(0, 1).reshape(v.shape)
        return np.moveaxis(np.concatenate([array[:start], moved]), 0, axis)

    return change


def _then(first, second):
    return lambda array, meta: second(first(array, meta), meta)


_HEADS = {"attn_gate.weight": ("inner", "all", 0), "ssm_alpha.weight": (None, "all", 0)}
_HEADS |= {"ssm_beta.weight": (None, "all", 0), "ssm_dt.bias": (None, "all", 0), "ssm_a": (None, "all", 0)}
_HEADS |= {"attn_qkv.weight": ("inner", "v", 0), "ssm_conv1d.weight": ("inner", "v", 0)}
_HEADS |= {"ssm_out.weight": ("inner", "all", 1)}
UNDO = {name: _reordered(False, *how) for name, how in _HEADS.items()}
REDO = {name: _reordered(True, *how) for name, how in _HEADS.items()}
UNDO["ssm_a"] = _then(A_UNDONE["ssm_a"], UNDO["ssm_a"])  # (A = -exp(A_log) undone, then the heads put back)
REDO["ssm_a"] = _then(REDO["ssm_a"], A_MADE["ssm_a"])


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """qwen35.* and qwen35moe.* -> spec: Qwen3-Next's reader (a SwiGLU where the file has no experts)."""
    out = next_spec(c, header, spec)
    return out if out.get("E") else {key: value for key, value in out.items() if key != "router_renorm"}


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> the qwen35 and qwen35moe keys beyond the shared ones; what llama.cpp cannot run is refused."""
    arch = "qwen35moe" if spec.E else "qwen35"
    if spec.E and not (spec.router_renorm and spec.shared_r and spec.shared_gate):
        raise SpecError(
            f"{spec.label}: the GGUF qwen35moe architecture cannot hold this model (llama.cpp renormalises the "
            "experts' weights beside a gated shared expert): not written"
        )
    pairs = int(spec.m * spec.rope_fraction) // 2
    return linear_metadata(spec, arch) | {"rope.dimension_sections": sections(pairs)}


def sections(pairs: int) -> list[int]:
    """MRoPE's sections over the rotated pairs as Qwen3.5's interleaved MRoPE deals them (pair j to the time, height
    and width axes as j % 3 is 0, 1, 2): 11, 11, 10 for its 32 pairs. llama.cpp turns a pair no section covers by a
    fourth position, not the token's: a text model's file needs every pair covered."""
    return [-(-pairs // 3), (pairs + 1) // 3, pairs // 3, 0]


_APART = {"delta.W_a": "ssm_alpha.weight", "delta.W_b": "ssm_beta.weight"}
_NAMES = NEXT_NAMES | _APART
_FUSED = tuple(fused for fused in NEXT_LAYOUT.fused if fused[0] in ("attn_q.weight", "attn_qkv.weight"))
DENSE = Family("blk.{i}.", _NAMES, NEXT_LAYOUT.globals_, fused=_FUSED, held_as=NEXT_LAYOUT.held_as)
_ROUTED = stacked_experts(_NAMES, NEXT_LAYOUT.globals_, shared=True)
ROUTED = Family(
    "blk.{i}.",
    _ROUTED.names,
    _ROUTED.globals_,
    fused=_ROUTED.fused + _FUSED,
    stacked=_ROUTED.stacked,
    held_as=NEXT_LAYOUT.held_as,
)
_CHANGES = {"transforms": LESS_ONE | UNDO, "redo": PLUS_ONE | REDO}
GGUF = Gguf("qwen35", DENSE, gguf_spec, gguf_metadata, **_CHANGES)  # type: ignore[arg-type]
MOE_GGUF = Gguf("qwen35moe", ROUTED, gguf_spec, gguf_metadata, **_CHANGES)  # type: ignore[arg-type]

__all__ = ["GGUF", "MOE_GGUF"]
