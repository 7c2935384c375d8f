"""GGUF's tensor names as convert_hf_to_gguf.py writes them, and the converter's changes the families share:
LLaMA's layout (the template of the others) and its Q/K permutation for llama.cpp's interleaved rotary, both ways."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .layout import Family, linear_names, norm_names

Transform = Callable[[np.ndarray, dict[str, Any]], np.ndarray]


def _linear(ours: str, theirs: str, parts: str = "Wb") -> dict[str, str]:
    return {ours.format(p): f"{theirs}.{'weight' if p == 'W' else 'bias'}" for p in parts}


def _llama_names() -> dict[str, str]:
    names = {
        "norm1.gamma": "attn_norm.weight",
        "norm2.gamma": "ffn_norm.weight",
        "attention.q_norm.gamma": "attn_q_norm.weight",
        "attention.k_norm.gamma": "attn_k_norm.weight",
    }
    for x, theirs in (("Q", "attn_q"), ("K", "attn_k"), ("V", "attn_v"), ("O", "attn_output")):
        names |= _linear("attention.{}_" + x, theirs)
    for n, theirs in (("1", "ffn_gate"), ("3", "ffn_up"), ("2", "ffn_down")):
        names |= _linear("ff.{}" + n, theirs)
    return names


LLAMA_LAYOUT = Family(
    "blk.{i}.",
    _llama_names(),
    {"embedding.E": "token_embd.weight", "head.W": "output.weight", "final_norm.gamma": "output_norm.weight"},
)


def _heads(meta: dict[str, Any], key: str) -> int:
    """The head count under `key` (else head_count); a list per layer (granitehybrid's: 0 where a layer has no
    attention) gives the attention layers' one count."""
    heads = meta.get(key) or meta["attention.head_count"]
    return max(heads) if isinstance(heads, list) else heads


def unpermute(heads_key: str) -> Transform:
    """The inverse of convert_hf_to_gguf.py's LlamaModel.permute: llama.cpp's rotary turns adjacent pairs, so the
    converter reorders each head's rows from the halves (j, j + m/2) to pairs (2j, 2j + 1); this puts them back.
    `heads_key`: the metadata key with the head count it used (head_count for Q, head_count_kv for K)."""

    def undo(rows: np.ndarray, meta: dict[str, Any]) -> np.ndarray:
        heads = _heads(meta, heads_key)
        return rows.reshape(heads, rows.shape[0] // heads // 2, 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)

    return undo


def permute(heads_key: str) -> Transform:
    """convert_hf_to_gguf.py's LlamaModel.permute: each head's rows from the halves (j, j + m/2) to adjacent pairs
    (2j, 2j + 1), for llama.cpp's rotary; the inverse of `unpermute`."""

    def do(rows: np.ndarray, meta: dict[str, Any]) -> np.ndarray:
        heads = _heads(meta, heads_key)
        return rows.reshape(heads, 2, rows.shape[0] // heads // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)

    return do


_Q, _K = unpermute("attention.head_count"), unpermute("attention.head_count_kv")
LLAMA_PERMUTED = {"attn_q.weight": _Q, "attn_k.weight": _K, "attn_q.bias": _Q, "attn_k.bias": _K}  # to undo
_Q2, _K2 = permute("attention.head_count"), permute("attention.head_count_kv")
LLAMA_REDO = {"attn_q.weight": _Q2, "attn_k.weight": _K2, "attn_q.bias": _Q2, "attn_k.bias": _K2}  # to write

# the LayerNorm families' (BLOOM, GPT-NeoX, Phi-2): LayerNorms with biases, biases on every projection, and the fused
# attn_qkv the converter reorders from per-head [q; k; v] groups to [Q; K; V] (how tfm reads a fused tensor)
_one = lambda spec: 1  # noqa: E731
LAYERNORM_FUSED = (
    ("attn_qkv.weight", ("attention.W_Q", "attention.W_K", "attention.W_V"), _one),
    ("attn_qkv.bias", ("attention.b_Q", "attention.b_K", "attention.b_V"), _one),
)
LAYERNORM_BLOCK = (
    linear_names("attention.{}_O", "attn_output")
    | linear_names("ff.{}1", "ffn_up")
    | linear_names("ff.{}2", "ffn_down")
    | norm_names("norm1", "attn_norm")
    | norm_names("norm2", "ffn_norm")
)
LAYERNORM_GLOBALS = {"embedding.E": "token_embd.weight", "head.W": "output.weight"} | norm_names(
    "final_norm", "output_norm"
)
LAYERNORM_LAYOUT = Family("blk.{i}.", LAYERNORM_BLOCK, LAYERNORM_GLOBALS, fused=LAYERNORM_FUSED)  # GPT-NeoX's

# the plain feedforward with biases and the attention's output (GPT-2, StarCoder2), the globals with the final
# norm's bias, and the fused [Q; K; V] rows with their biases
PLAIN_BLOCK = {
    "attention.W_O": "attn_output.weight",
    "attention.b_O": "attn_output.bias",
    "ff.W1": "ffn_up.weight",
    "ff.b1": "ffn_up.bias",
    "ff.W2": "ffn_down.weight",
    "ff.b2": "ffn_down.bias",
}
GLOBALS_WITH_BIAS = {
    "embedding.E": "token_embd.weight",
    "head.W": "output.weight",
    "final_norm.gamma": "output_norm.weight",
    "final_norm.beta": "output_norm.bias",
}
QKV_FUSED = LAYERNORM_FUSED


EXPERTS = (  # every expert's matrix stacked in one tensor: (E, r, d), (E, r, d), (E, d, r)
    ("ffn_gate_exps.weight", ("ff.W1",), _one),
    ("ffn_up_exps.weight", ("ff.W3",), _one),
    ("ffn_down_exps.weight", ("ff.W2",), _one),
)


def stacked_experts(names: dict[str, str], globals_: dict[str, str], shared: bool = False) -> Family:
    """A layout whose feedforward is E experts stacked in one tensor per matrix (ffn_gate_exps (E, r, d), ...) and
    a router ffn_gate_inp (E, d); with `shared`, Qwen2-MoE's shared expert (_shexp) and its gate."""
    dense = {ours: theirs for ours, theirs in names.items() if not ours.startswith("ff.")}
    routed = dense | {"ff.router": "ffn_gate_inp.weight"}
    if shared:
        routed |= {
            "ff.shared.W1": "ffn_gate_shexp.weight",
            "ff.shared.W3": "ffn_up_shexp.weight",
            "ff.shared.W2": "ffn_down_shexp.weight",
            "ff.shared.W_gate": "ffn_gate_inp_shexp.weight",
        }
    return Family("blk.{i}.", routed, globals_, fused=EXPERTS, stacked=frozenset(t for t, _, _ in EXPERTS))


LLAMA_EXPERTS = stacked_experts(LLAMA_LAYOUT.names, LLAMA_LAYOUT.globals_)  # Mixtral's (llama) and Qwen3-MoE's


@dataclass(frozen=True)
class Joined:
    """A tensor the converter writes in pieces (DeepSeek's kv_b as k_b and v_b): the pieces' names and shapes for
    a spec, and the tensor made whole from them (in that order)."""

    pieces: Callable[[Any], dict[str, tuple[int, ...]]]
    join: Callable[[list[np.ndarray]], np.ndarray]
    divide: Callable[[np.ndarray, Any], list[np.ndarray]]  # the converter's split, to write a file


__all__ = [
    "EXPERTS",
    "GLOBALS_WITH_BIAS",
    "Joined",
    "LAYERNORM_BLOCK",
    "LAYERNORM_FUSED",
    "LAYERNORM_GLOBALS",
    "LAYERNORM_LAYOUT",
    "LLAMA_EXPERTS",
    "LLAMA_LAYOUT",
    "LLAMA_PERMUTED",
    "LLAMA_REDO",
    "PLAIN_BLOCK",
    "QKV_FUSED",
    "Transform",
    "permute",
    "stacked_experts",
    "unpermute",
]
