"""Mamba (MambaForCausalLM) and Falcon Mamba (FalconMambaForCausalLM): blocks of an RMSNorm and Mamba-1's selective
state space alone (components/mamba.py, `feedforward: none`), a final norm norm_f, a head tied by default.

The mixer's sizes: expand x hidden_size channels (intermediate_size, as MambaConfig makes it), each a state of
state_size, steps of rank time_step_rank ("auto": ceil(hidden_size / 16)), a kernel of conv_kernel
(use_conv_bias), biases on its projections with use_bias; layer_norm_epsilon is the blocks' norms'. Falcon Mamba
normalises the steps' low-rank part, B and C without gains, with mixer_rms_eps (ssm_bcdt_norm plain). H and m are
1, r the channels (no feedforward reads them). transformers keeps the residual in float32 where residual_in_fp32: a
dtype, so tfm keeps it in the pass's. An activation other than silu (hidden_act) is refused in one line.
"""

from __future__ import annotations

import math
from typing import Any

from ..spec.definition import Spec
from . import mamba_gguf as gguf
from .keys import Keys
from .mamba2 import backbone, state_space_gguf
from .record import Record


def selective(c: Keys, d: int, names: dict[str, str], defaults: dict[str, Any]) -> dict[str, Any]:
    """Mamba-1's spec keys under the family's `names` for state, kernel, expand, rank, bias, conv_bias, act (and
    the channels themselves, `inner`, where the family reads them)."""
    if c.text(names["act"], "silu") != "silu":
        raise c.refuse(names["act"], c.data[names["act"]], "silu, the convolution's and the gate's activation")
    rank = c.data.get(names["rank"], "auto")
    inner = int(c.number(names["expand"], defaults["expand"]) * d)
    if "inner" in names and c.has(names["inner"]):  # (MambaConfig keeps a saved intermediate_size over expand's)
        inner = c.count(names["inner"])
    return {
        "ssm_inner": inner,
        "ssm_state": c.count(names["state"], defaults["state"]),
        "ssm_dt_rank": math.ceil(d / 16) if rank == "auto" else c.count(names["rank"]),
        "conv_kernel": c.count(names["kernel"], 4),
        "conv_bias": c.flag(names["conv_bias"], True),
        "ssm_bias": c.flag(names["bias"], False),
    }


NAMES = {
    "state": "state_size",
    "kernel": "conv_kernel",
    "expand": "expand",
    "inner": "intermediate_size",
    "rank": "time_step_rank",
    "bias": "use_bias",
    "conv_bias": "use_conv_bias",
    "act": "hidden_act",
}


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (MambaConfig's defaults: state 16, expand 2, a kernel of 4, a tied head)."""
    d = c.count("hidden_size", 768)
    mixer = selective(c, d, NAMES, {"expand": 2, "state": 16})
    out = mixer | {
        "N": c.count("num_hidden_layers", 32),
        "H": 1,
        "m": 1,
        "d": d,
        "r": mixer["ssm_inner"],
        "V": c.count("vocab_size", 50280),
        "mask": "causal",
        "norm": "pre",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("layer_norm_epsilon", 1e-5),
        "attention": "mamba",
        "feedforward": "none",
        "tie_embeddings": c.flag("tie_word_embeddings", True),
    }
    return out


def falcon_spec(c: Keys) -> dict[str, Any]:
    """Falcon Mamba: Mamba's, with the plain norms of the steps, B and C (mixer_rms_eps, 1e-6 by default)."""
    out = spec(c) | {"ssm_bcdt_norm": "plain"}
    eps = c.number("mixer_rms_eps", 1e-6)
    return out | ({"ssm_bcdt_eps": eps} if eps != out["norm_eps"] else {})


def selective_config(spec: Spec, names: dict[str, str]) -> dict[str, Any]:
    """Mamba-1's keys under the family's names."""
    expand = (spec.ssm_inner or 0) / spec.d
    return {
        names["state"]: spec.ssm_state,
        names["kernel"]: spec.conv_kernel,
        names["expand"]: int(expand) if expand.is_integer() else expand,
        names["rank"]: spec.ssm_dt_rank,
        names["bias"]: spec.ssm_bias,
        names["conv_bias"]: spec.conv_bias,
    } | ({names["inner"]: spec.ssm_inner} if "inner" in names else {})


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Mamba's config.json."""
    out = selective_config(spec, NAMES) | {"hidden_size": spec.d, "num_hidden_layers": spec.N, "vocab_size": spec.V}
    out |= {"layer_norm_epsilon": spec.norm_eps, "tie_word_embeddings": spec.tie_embeddings}
    if spec.ssm_bcdt_norm == "plain":
        out["mixer_rms_eps"] = spec.ssm_bcdt_eps or spec.norm_eps
    return out


def selective_names(ours: str, theirs: str) -> dict[str, str]:
    """Mamba-1's tensors: tfm's under `ours`, the checkpoint's under `theirs`; Jamba's norms of dt, B and C."""
    names = {"W_in": "in_proj.weight", "b_in": "in_proj.bias", "kernel": "conv1d.weight", "b_kernel": "conv1d.bias"}
    names |= {"W_x": "x_proj.weight", "W_dt": "dt_proj.weight", "b_dt": "dt_proj.bias", "A_log": "A_log", "D": "D"}
    names |= {"W_out": "out_proj.weight", "b_out": "out_proj.bias"}
    names |= {f"{x}_norm.gamma": f"{y}_layernorm.weight" for x, y in (("dt", "dt"), ("B", "b"), ("C", "c"))}
    return {ours + key: theirs + value for key, value in names.items()}


MAMBA = backbone(selective_names("mamba.", "mixer.") | {"norm1.gamma": "norm.weight"})
GGUF = state_space_gguf(
    "mamba",
    gguf.MAMBA_LAYOUT,
    gguf.gguf_mamba_spec,
    gguf.gguf_mamba_metadata,
    model_type=lambda spec: "falcon_mamba" if spec.ssm_bcdt_norm == "plain" else "mamba",
)
RECORDS = (
    Record("mamba", "MambaForCausalLM", spec, MAMBA, config, GGUF, config_alone=True),
    Record("falcon_mamba", "FalconMambaForCausalLM", falcon_spec, MAMBA, config, GGUF, config_alone=True),
)

__all__ = ["MAMBA", "RECORDS", "selective", "selective_config", "selective_names"]
