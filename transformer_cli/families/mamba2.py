"""Mamba-2 (Mamba2ForCausalLM): blocks of an RMSNorm and the state space mixer alone (components/mamba2.py), no
attention and no feedforward (`feedforward: none`), a final RMSNorm norm_f, an untied head by default.

The mixer's sizes: num_heads heads of head_dim (expand x hidden_size in all, which Mamba2Config requires),
n_groups groups of B and C of state_size, a kernel of conv_kernel taps (use_conv_bias), biases on its projections
with use_bias; one eps, layer_norm_epsilon, for the blocks' norms and the mixer's gated norm. H and m are the
mixer's heads and their size, r its inner size (no feedforward reads it).

transformers keeps the residual in float32 where residual_in_fp32 (the default): a dtype, not a model, so tfm keeps
it in the pass's dtype. chunk_size is the scan's chunking, which changes no number but its rounding. Refused in one
line: a time_step_limit other than (0, inf) (transformers clamps the step then in a prefill and not in a decoding
step), and an activation other than silu (hidden_act, the convolution's and the gate's).
"""

from __future__ import annotations

import math
from typing import Any

from ..spec.definition import Spec
from . import mamba_gguf as gguf
from .keys import Keys
from .layout import Family
from .record import Gguf, Record


def mixer_keys(c: Keys, d: int, names: dict[str, str], defaults: dict[str, Any]) -> dict[str, Any]:
    """The state space's spec keys, read under the family's `names` for heads, head_dim, state, groups, kernel,
    expand, bias, conv_bias (with their `defaults`), checked as transformers builds them."""
    H, P = c.count(names["heads"], defaults["heads"]), c.count(names["head_dim"], defaults["head_dim"])
    expand = c.number(names["expand"], defaults["expand"])
    if int(expand * d) != H * P:
        raise c.fail(names["heads"], H, f"{names['heads']} x {names['head_dim']} = {names['expand']} x {d}")
    G = c.count(names["groups"], defaults["groups"])
    if H % G:
        raise c.fail(names["groups"], G, f"a divisor of {names['heads']} = {H}")
    limit = c.data.get("time_step_limit", (0.0, math.inf))
    if not isinstance(limit, (list, tuple)) or [_number(x) for x in limit] != [0.0, math.inf]:
        why = "(0.0, inf): transformers clamps a prefill's steps but no decoding step's"
        raise c.refuse("time_step_limit", limit, why)
    if c.text(names["act"], "silu") != "silu":
        raise c.refuse(names["act"], c.data[names["act"]], "silu, the convolution's and the gate's activation")
    return {
        "ssm_heads": H,
        "ssm_head_dim": P,
        "ssm_state": c.count(names["state"], defaults["state"]),
        "ssm_groups": G,
        "conv_kernel": c.count(names["kernel"], defaults["kernel"]),
        "conv_bias": c.flag(names["conv_bias"], defaults["conv_bias"]),
        "ssm_bias": c.flag(names["bias"], defaults["bias"]),
    }


def _number(value: Any) -> float | None:
    """A config's number, infinity as transformers saves it ({"__float__": "Infinity"}) too; None if none."""
    if isinstance(value, dict):
        value = value.get("__float__")
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


NAMES = {
    "heads": "num_heads",
    "head_dim": "head_dim",
    "state": "state_size",
    "groups": "n_groups",
    "kernel": "conv_kernel",
    "expand": "expand",
    "bias": "use_bias",
    "conv_bias": "use_conv_bias",
    "act": "hidden_act",
}
DEFAULTS = {"heads": 128, "head_dim": 64, "state": 128, "groups": 8, "kernel": 4, "expand": 2}
DEFAULTS |= {"bias": False, "conv_bias": True}


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (Mamba2Config's defaults: 128 heads of 64, state 128, 8 groups, a kernel of 4)."""
    d = c.count("hidden_size", 4096)
    mixer = mixer_keys(c, d, NAMES, DEFAULTS)
    return mixer | {
        "N": c.count("num_hidden_layers", 64),
        "H": mixer["ssm_heads"],
        "m": mixer["ssm_head_dim"],
        "d": d,
        "r": mixer["ssm_heads"] * mixer["ssm_head_dim"],
        "V": c.count("vocab_size", 32768),
        "mask": "causal",
        "norm": "pre",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("layer_norm_epsilon", 1e-5),
        "attention": "mamba2",
        "feedforward": "none",
        "tie_embeddings": c.flag("tie_word_embeddings", False),
    }


def mixer_config(spec: Spec, names: dict[str, str]) -> dict[str, Any]:
    """The state space's keys under the family's names."""
    inner = (spec.ssm_heads or 0) * (spec.ssm_head_dim or 0)
    expand = inner / spec.d
    return {
        names["heads"]: spec.ssm_heads,
        names["head_dim"]: spec.ssm_head_dim,
        names["state"]: spec.ssm_state,
        names["groups"]: spec.ssm_groups,
        names["kernel"]: spec.conv_kernel,
        names["expand"]: int(expand) if expand.is_integer() else expand,
        names["bias"]: spec.ssm_bias,
        names["conv_bias"]: spec.conv_bias,
    }


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Mamba-2's config.json."""
    return mixer_config(spec, NAMES) | {
        "hidden_size": spec.d,
        "num_hidden_layers": spec.N,
        "vocab_size": spec.V,
        "layer_norm_epsilon": spec.norm_eps,
        "tie_word_embeddings": spec.tie_embeddings,
        "residual_in_fp32": True,
    }


def mixer_names(ours: str, theirs: str) -> dict[str, str]:
    """The state space's tensors: tfm's under `ours` ("mamba."), the checkpoint's under `theirs` ("mixer.")."""
    names = {f"{ours}W_in": "in_proj.weight", f"{ours}b_in": "in_proj.bias", f"{ours}kernel": "conv1d.weight"}
    names |= {f"{ours}b_kernel": "conv1d.bias", f"{ours}norm.gamma": "norm.weight"}
    names |= {f"{ours}W_out": "out_proj.weight", f"{ours}b_out": "out_proj.bias"}
    names |= {f"{ours}{name}": name for name in ("dt_bias", "A_log", "D")}
    return {key: theirs + value for key, value in names.items()}


def backbone(names: dict[str, str]) -> Family:
    """The state space models' checkpoint: blocks of a norm and a mixer under backbone.layers (Mamba's, Mamba-2's,
    Nemotron-H's), the embeddings, norm_f and the head."""
    globals_ = {"embedding.E": "backbone.embeddings.weight", "head.W": "lm_head.weight"}
    return Family("backbone.layers.{i}.", names, globals_ | {"final_norm.gamma": "backbone.norm_f.weight"})


def state_space_gguf(arch: str, layout: Family, read: Any, write: Any, **more: Any) -> Gguf:
    """A state space architecture's GGUF files: its own reader and keys, A = -exp(A_log) undone and made."""
    return Gguf(arch, layout, read, write, base="none", transforms=gguf.A_UNDONE, redo=gguf.A_MADE, **more)


MAMBA2 = backbone(mixer_names("mamba.", "mixer.") | {"norm1.gamma": "norm.weight"})
GGUF = state_space_gguf("mamba2", gguf.MAMBA2_LAYOUT, gguf.gguf_spec, gguf.gguf_metadata)
RECORD = Record("mamba2", "Mamba2ForCausalLM", spec, MAMBA2, config, GGUF, config_alone=True)

__all__ = ["MAMBA2", "RECORD", "backbone", "mixer_config", "mixer_keys", "mixer_names", "state_space_gguf"]
