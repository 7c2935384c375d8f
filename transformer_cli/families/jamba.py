"""Jamba (JambaForCausalLM, AI21's): pre-norm blocks (input_layernorm, pre_ff_layernorm) whose mixer is Mamba-1's
selective state space (components/mamba.py, under `mamba.`, with gains on the norms of its steps, B and C, of
rms_norm_eps) but in the layers i % attn_layer_period == attn_layer_offset, which attend (grouped-query, heads of
hidden_size / H, no positions at all: Jamba's attention has no rotary), and whose feedforward is a SwiGLU of
intermediate_size but in the layers i % expert_layer_period == expert_layer_offset, which route to num_experts
experts of that size: the top num_experts_per_tok of the softmax over all of them, not renormalised. The final
norm is model.final_layernorm; the head is untied by default. The mixer's keys are mamba_*: mamba_expand x
hidden_size channels, mamba_d_state, mamba_dt_rank ("auto": ceil(hidden_size / 16)), mamba_d_conv
(mamba_conv_bias), mamba_proj_bias; hidden_act is the MLP's and the mixer's (silu).
"""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..spec.definition import Spec
from ..spec.stacks import kind_of
from . import mamba_gguf as gguf
from .checkpoints import _LLAMA_GLOBALS, _llama_names
from .config_keys import size_keys
from .keys import Keys
from .layout import Family
from .layout import norm_names as _norm
from .mamba import selective, selective_config, selective_names
from .mamba2 import state_space_gguf
from .parts import kv_heads, whole_heads
from .record import Record

NAMES = {
    "state": "mamba_d_state",
    "kernel": "mamba_d_conv",
    "expand": "mamba_expand",
    "rank": "mamba_dt_rank",
    "bias": "mamba_proj_bias",
    "conv_bias": "mamba_conv_bias",
    "act": "hidden_act",
}


def _periodic(c: Keys, N: int, key: str, default: tuple[int, int]) -> list[bool]:
    """Whether each layer i is i % {key}_period == {key}_offset."""
    period, offset = c.count(f"{key}_period", default[0]), c.index(f"{key}_offset", default[1])
    if offset >= period:
        raise c.fail(f"{key}_offset", offset, f"below {key}_period = {period}")
    return [i % period == offset for i in range(N)]


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (JambaConfig's defaults: attention every 8th layer from 4, experts every 2nd from 1)."""
    N, d, H = c.count("num_hidden_layers", 32), c.count("hidden_size", 4096), c.count("num_attention_heads", 32)
    attends = _periodic(c, N, "attn_layer", (8, 4))
    routed = _periodic(c, N, "expert_layer", (2, 1))
    out: dict[str, Any] = {
        "N": N,
        "H": H,
        "m": whole_heads(c, d, H),
        "d": d,
        "r": c.count("intermediate_size", 14336),
        "V": c.count("vocab_size", 65536),
        **kv_heads(c, "num_key_value_heads", c.count("num_key_value_heads", 8), H),
        "scale": "sqrt",
        "mask": "causal",
        "norm": "pre",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("rms_norm_eps", 1e-6),
        "feedforward": "gated",
        "activation": "silu",
        "ff_bias": False,
        "tie_embeddings": c.flag("tie_word_embeddings", False),
        "context": c.count("max_position_embeddings", 262144),
    }
    out |= selective(c, d, NAMES, {"expand": 2, "state": 16}) | {"ssm_bcdt_norm": "affine"}
    if not all(attends):
        out["mixer_layers"] = ["standard" if a else "mamba" for a in attends]
    E = c.count("num_experts", 16)
    if any(routed) and E > 1:
        k = c.count("num_experts_per_tok", 2)
        if k > E:
            raise c.fail("num_experts_per_tok", k, f"at most num_experts = {E}")
        out |= {"E": E, "k": k, "router_renorm": False}
        out |= {"feedforward_layers": ["routed" if r else "dense" for r in routed]} if not all(routed) else {}
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Jamba's config.json, the layers' kinds as the periods and offsets that make them (a pattern of one
    kind every P layers from an offset, as Jamba's config can say)."""
    out = size_keys(spec) | selective_config(spec, NAMES) | {"rms_norm_eps": spec.norm_eps, "hidden_act": "silu"}
    attends = [kind_of(spec.mixer_layers, i, spec.attention) == "standard" for i in range(spec.N)]
    routed = [bool(spec.E) and kind_of(spec.feedforward_layers, i, "routed") == "routed" for i in range(spec.N)]
    for key, flags in (("attn_layer", attends), ("expert_layer", routed)):
        out |= _period(flags, key, spec.label)
    if spec.E:
        out |= {"num_experts": spec.E, "num_experts_per_tok": spec.k}
    else:
        out["num_experts"] = 1
    del out["head_dim"]
    return out


def _period(flags: list[bool], key: str, label: str) -> dict[str, int]:
    """The period and offset whose layers are the flagged ones (none flagged: a period past the last layer)."""
    N = len(flags)
    for period in range(1, N + 1):
        for offset in range(period):
            if flags == [i % period == offset for i in range(N)]:
                return {f"{key}_period": period, f"{key}_offset": offset}
    if not any(flags):
        return {f"{key}_period": N + 1, f"{key}_offset": N}
    which = [i for i, flag in enumerate(flags) if flag]
    raise SpecError(f"{label}: layers {which} are no {key}_period and offset (Jamba's config.json cannot say them)")


def _names() -> dict[str, str]:
    names = {ours: theirs for ours, theirs in _llama_names().items() if "norm" not in ours}
    names = {ours: theirs.replace("mlp.", "feed_forward.") for ours, theirs in names.items()}
    for n, proj in (("1", "gate_proj"), ("3", "up_proj"), ("2", "down_proj")):
        names[f"ff.W{n}[{{e}}]"] = f"feed_forward.experts.{{e}}.{proj}.weight"
    names["ff.router"] = "feed_forward.router.weight"
    return (
        names
        | selective_names("mamba.", "mamba.")
        | _norm("norm1", "input_layernorm")
        | _norm("norm2", "pre_ff_layernorm")
    )


JAMBA = Family(
    "model.layers.{i}.",
    _names(),
    {k: v for k, v in _LLAMA_GLOBALS.items() if "final_norm" not in k} | _norm("final_norm", "model.final_layernorm"),
)

GGUF = state_space_gguf("jamba", gguf.JAMBA_LAYOUT, gguf.gguf_jamba_spec, gguf.gguf_jamba_metadata)
RECORD = Record("jamba", "JambaForCausalLM", spec, JAMBA, config, GGUF, config_alone=True)

__all__ = ["JAMBA", "RECORD"]
