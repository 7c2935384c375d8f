"""The state space families' GGUF files as llama.cpp's converter writes them (conversion/mamba.py: Mamba2Model, arch
mamba2) and llama.cpp reads them (src/models/mamba.cpp, graph-context-mamba).

A Mamba-2 file says its mixer in ssm.* keys: conv_kernel, inner_size (I), state_size, time_step_rank (the heads:
I / head_dim) and group_count; feed_forward_length and head_count are 0 (no feedforward, no attention). Its tensors
are the checkpoint's renamed, A = -exp(A_log) written as ssm_a (tfm holds A_log: the converter's change undone),
A and D as (H, 1), the kernel (C, 1, K) as (C, K), the gated norm's gain as (G, I / G) and dt_bias as ssm_dt.bias.
llama.cpp loads no bias of the projections and clamps no step: a model with ssm_bias is refused when written
(transformers' time_step_limit other than (0, inf) is refused when read, families/mamba2.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..spec.definition import Spec
from .gguf_keys import vocabulary
from .keys import Keys
from .layout import Family


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """mamba2.* -> spec."""
    d, inner, heads = c.count("embedding_length"), c.count("ssm.inner_size"), c.count("ssm.time_step_rank")
    if inner % heads:
        raise c.fail("ssm.time_step_rank", heads, f"a divisor of ssm.inner_size = {inner} (the heads of its mixer)")
    return {
        "N": c.count("block_count"),
        "H": heads,
        "m": inner // heads,
        "d": d,
        "r": inner,
        "V": vocabulary(c, header),
        "mask": "causal",
        "norm": "pre",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("attention.layer_norm_rms_epsilon", 1e-5),
        "attention": "mamba2",
        "feedforward": "none",
        "tie_embeddings": "output.weight" not in header.tensors,
        "ssm_heads": heads,
        "ssm_head_dim": inner // heads,
        "ssm_state": c.count("ssm.state_size"),
        "ssm_groups": c.count("ssm.group_count", 1),
        "conv_kernel": c.count("ssm.conv_kernel"),
        "conv_bias": "blk.0.ssm_conv1d.bias" in header.tensors,
    }


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> mamba2.* keys: the mixer's, and no feedforward or attention (the converter's zeros)."""
    heads, head_dim = spec.ssm_heads or 0, spec.ssm_head_dim or 0
    return {
        "context_length": 2**20,  # (the converter's: "arbitrary value")
        "feed_forward_length": 0,
        "attention.head_count": 0,
        "attention.head_count_kv": 0,
        "ssm.conv_kernel": spec.conv_kernel,
        "ssm.inner_size": heads * head_dim,
        "ssm.state_size": spec.ssm_state,
        "ssm.time_step_rank": heads,
        "ssm.group_count": spec.ssm_groups,
    }


def _a(array: np.ndarray, meta: dict[str, Any]) -> np.ndarray:
    """ssm_a's A = -exp(A_log) back to A_log."""
    return np.log(-np.asarray(array, np.float64))  # (in float64: A_log not rounded again)


def _a_log(array: np.ndarray, meta: dict[str, Any]) -> np.ndarray:
    """A_log as the converter writes it: A = -exp(A_log)."""
    return -np.exp(array)


MAMBA2_NAMES = {
    "norm1.gamma": "attn_norm.weight",
    "mamba.W_in": "ssm_in.weight",
    "mamba.kernel": "ssm_conv1d.weight",
    "mamba.b_kernel": "ssm_conv1d.bias",
    "mamba.dt_bias": "ssm_dt.bias",
    "mamba.A_log": "ssm_a",
    "mamba.D": "ssm_d",
    "mamba.norm.gamma": "ssm_norm.weight",
    "mamba.W_out": "ssm_out.weight",
}
MAMBA2_HELD = {
    "ssm_conv1d.weight": lambda spec, shape: (shape[0], shape[2]),  # (C, 1, K) as (C, K)
    "ssm_a": lambda spec, shape: (*shape, 1),
    "ssm_d": lambda spec, shape: (*shape, 1),
    "ssm_norm.weight": lambda spec, shape: (spec.ssm_groups, math.prod(shape) // spec.ssm_groups),
}
GLOBALS = {"embedding.E": "token_embd.weight", "head.W": "output.weight", "final_norm.gamma": "output_norm.weight"}
MAMBA2_LAYOUT = Family("blk.{i}.", MAMBA2_NAMES, GLOBALS, held_as=MAMBA2_HELD)
A_UNDONE, A_MADE = {"ssm_a": _a}, {"ssm_a": _a_log}

__all__ = [
    "A_MADE",
    "A_UNDONE",
    "GLOBALS",
    "MAMBA2_HELD",
    "MAMBA2_LAYOUT",
    "MAMBA2_NAMES",
    "gguf_metadata",
    "gguf_spec",
]
