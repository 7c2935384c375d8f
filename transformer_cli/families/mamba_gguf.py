"""The state space families' GGUF files as llama.cpp's converter writes them (conversion/mamba.py: Mamba2Model, arch
mamba2; MambaModel, arch mamba) and llama.cpp reads them (src/models/mamba.cpp, graph-context-mamba).

A Mamba (or Falcon Mamba) file: ssm.conv_kernel, inner_size (2 d: the converter takes no other expansion),
state_size, time_step_rank (R), dt_b_c_rms (Falcon Mamba's plain norms of the steps, B and C: llama.cpp runs them
with the blocks' eps, where transformers reads mixer_rms_eps; a file is read as llama.cpp runs it, and a model whose
two eps differ is refused when written); its tensors the checkpoint's renamed, A = -exp(A_log) as ssm_a.

A Mamba-2 file says its mixer in ssm.* keys: conv_kernel, inner_size (I), state_size, time_step_rank (the heads:
I / head_dim) and group_count; feed_forward_length and head_count are 0 (no feedforward, no attention). Its tensors
are the checkpoint's renamed, A = -exp(A_log) written as ssm_a (tfm holds A_log: the converter's change undone),
A and D as (H, 1), the kernel (C, 1, K) as (C, K), the gated norm's gain as (G, I / G) and dt_bias as ssm_dt.bias.
llama.cpp loads no bias of the projections, needs one on the convolution and clamps no step: a model with ssm_bias
or without conv_bias is refused when written
(transformers' time_step_limit other than (0, inf) is refused when read, families/mamba2.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import SpecError
from ..spec.definition import Spec
from .gguf_keys import vocabulary
from .gguf_layout import EXPERTS, LLAMA_LAYOUT
from .keys import Keys
from .layout import Family


def _stack(c: Keys, header: Any, mixer: str, H: int, m: int, inner: int) -> dict[str, Any]:
    """What a state space file's stack says alike: blocks of a norm and the mixer, no feedforward."""
    return {
        "N": c.count("block_count"),
        "H": H,
        "m": m,
        "d": c.count("embedding_length"),
        "r": inner,
        "V": vocabulary(c, header),
        "mask": "causal",
        "norm": "pre",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("attention.layer_norm_rms_epsilon", 1e-5),
        "attention": mixer,
        "feedforward": "none",
        "tie_embeddings": "output.weight" not in header.tensors,
        "ssm_state": c.count("ssm.state_size"),
        "conv_kernel": c.count("ssm.conv_kernel"),
        "conv_bias": any(name.endswith("ssm_conv1d.bias") for name in header.tensors),
    }


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """mamba2.* -> spec."""
    inner, heads = c.count("ssm.inner_size"), c.count("ssm.time_step_rank")
    if inner % heads:
        raise c.fail("ssm.time_step_rank", heads, f"a divisor of ssm.inner_size = {inner} (the heads of its mixer)")
    out = _stack(c, header, "mamba2", heads, inner // heads, inner)
    return out | {"ssm_heads": heads, "ssm_head_dim": inner // heads, "ssm_groups": c.count("ssm.group_count", 1)}


def gguf_mamba_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """mamba.* -> spec."""
    inner = c.count("ssm.inner_size")
    out = _stack(c, header, "mamba", 1, 1, inner) | {"ssm_inner": inner, "ssm_dt_rank": c.count("ssm.time_step_rank")}
    return out | ({"ssm_bcdt_norm": "plain"} if c.flag("ssm.dt_b_c_rms", False) else {})


def _biased(spec: Spec, arch: str) -> None:
    """llama.cpp loads no file whose convolution has no bias (ssm_conv1d.bias is required): refused in one line."""
    if not spec.conv_bias:
        raise SpecError(
            f"{spec.label}: the GGUF {arch} architecture cannot hold this model (conv_bias false: llama.cpp loads no "
            "file without ssm_conv1d.bias): not written"
        )


def gguf_mamba_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> mamba.* keys."""
    _biased(spec, "mamba")
    return {
        "context_length": 2**20,
        "feed_forward_length": 0,
        "attention.head_count": 0,
        "attention.head_count_kv": 0,
        "ssm.conv_kernel": spec.conv_kernel,
        "ssm.inner_size": spec.ssm_inner,
        "ssm.state_size": spec.ssm_state,
        "ssm.time_step_rank": spec.ssm_dt_rank,
        "ssm.dt_b_c_rms": spec.ssm_bcdt_norm == "plain",
    }


def gguf_jamba_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """jamba.* -> spec: Mamba's mixer (its norms of the steps, B and C with gains) and attention where a layer has
    key/value heads (head_count_kv's list), experts where a layer has a router (ffn_gate_inp), no positions."""
    out = gguf_mamba_spec(c, header, spec) | {"ssm_bcdt_norm": "affine", "feedforward": "gated", "activation": "silu"}
    N, H, d = out["N"], c.count("attention.head_count"), out["d"]
    listed = c.data.get("attention.head_count_kv")
    kv = listed if isinstance(listed, list) else [c.count("attention.head_count_kv", H)] * N
    if len(kv) != N or len({g for g in kv if g}) > 1:
        raise c.fail("attention.head_count_kv", listed, f"a list of {N} counts, one count where a layer attends")
    G = next((g for g in kv if g), H)
    out |= {"H": H, "m": d // H, "r": c.count("feed_forward_length"), "scale": "sqrt", "ff_bias": False}
    out |= {"G": G} if G != H else {}
    out["attention"] = "standard"  # (the stack's; the state space's blocks by mixer_layers, as from config.json)
    if 0 in kv:
        out["mixer_layers"] = ["mamba" if g == 0 else "standard" for g in kv]
    routed = [f"blk.{i}.ffn_gate_inp.weight" in header.tensors for i in range(N)]
    if any(routed):
        out |= {"E": c.count("expert_count"), "k": c.count("expert_used_count"), "router_renorm": False}
        out |= {"feedforward_layers": ["routed" if r else "dense" for r in routed]} if not all(routed) else {}
    return out


def gguf_jamba_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> jamba.* keys: Mamba's, each layer's key/value heads (0 where it mixes by the state space), the MLP's
    width."""
    from ..spec.stacks import kind_of

    attends = [kind_of(spec.mixer_layers, i, spec.attention) == "standard" for i in range(spec.N)]
    out = gguf_mamba_metadata(spec) | {"feed_forward_length": spec.r, "attention.head_count": spec.H}
    del out["ssm.dt_b_c_rms"], out["context_length"]
    return out | {"attention.head_count_kv": [spec.kv_heads if a else 0 for a in attends]}


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> mamba2.* keys: the mixer's, and no feedforward or attention (the converter's zeros)."""
    _biased(spec, "mamba2")
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
MAMBA_NAMES = {key: value for key, value in MAMBA2_NAMES.items() if "norm.gamma" not in key or key == "norm1.gamma"}
MAMBA_NAMES |= {"mamba.W_x": "ssm_x.weight", "mamba.W_dt": "ssm_dt.weight", "mamba.b_dt": "ssm_dt.bias"}
del MAMBA_NAMES["mamba.dt_bias"]
MAMBA_LAYOUT = Family("blk.{i}.", MAMBA_NAMES, GLOBALS, held_as={"ssm_conv1d.weight": MAMBA2_HELD["ssm_conv1d.weight"]})
_NORMS = {f"mamba.{x}_norm.gamma": f"ssm_{y}_norm.weight" for x, y in (("dt", "dt"), ("B", "b"), ("C", "c"))}
JAMBA_LAYOUT = Family(
    "blk.{i}.",
    LLAMA_LAYOUT.names | MAMBA_NAMES | _NORMS | {"ff.router": "ffn_gate_inp.weight", "norm2.gamma": "ffn_norm.weight"},
    GLOBALS,
    fused=EXPERTS,
    stacked=frozenset(t for t, _, _ in EXPERTS),
    held_as=MAMBA_LAYOUT.held_as,
)
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
