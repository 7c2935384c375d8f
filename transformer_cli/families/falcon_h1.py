"""Falcon-H1 (FalconH1ForCausalLM, TII's): in every block attention and Mamba-2 side by side
(components/parallel_mixer.py), both reading the block's normed input, their outputs added; then LLaMA's SwiGLU MLP.
Bamba's checkpoint layout (bamba.py: input_layernorm, pre_ff_layernorm, mamba.*, feed_forward.*, final_layernorm).

Its muP multipliers, all read: embedding_multiplier (embed_scale), lm_head_multiplier (logit_scale),
attention_in_multiplier, key_multiplier, attention_out_multiplier, ssm_in_multiplier and ssm_out_multiplier
(parallel_scales), ssm_multipliers on the rows z, x, B, C and dt of the state space's input projection
(ssm_scales), mlp_multipliers on the gate before its activation and on the MLP's output (ff_scales).

The state space: mamba_n_heads heads of mamba_d_head (auto: mamba_d_ssm over the heads; mamba_d_ssm none: mamba_expand
x hidden_size), mamba_n_groups of mamba_d_state, a kernel of mamba_d_conv (mamba_conv_bias); mamba_rms_norm false
(the default) gates y by silu(z) with no norm, true normalises per group, before the gate with
mamba_norm_before_gate (the default) or after it. mamba_proj_bias (the input projection's) and projectors_bias (the
output projection's, despite its name) are one key here (ssm_bias): a model with one of them alone is refused.
Attention: grouped-query heads of head_dim (else hidden_size / heads), rotary over whole heads. Its GGUF files
(falcon-h1, the multipliers folded into the weights) are falcon_h1_gguf.py's.
"""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .bamba import BAMBA
from .bamba import NAMES as BAMBA_NAMES
from .config_keys import shared_keys
from .falcon_h1_gguf import LAYOUT, folded, gguf_metadata, gguf_spec
from .keys import Keys
from .mamba2 import mixer_config, mixer_keys, state_space_gguf
from .parts import llama_like
from .record import Record

NAMES = BAMBA_NAMES
DEFAULTS = {"heads": 128, "state": 256, "groups": 1, "kernel": 4, "expand": 2, "bias": False, "conv_bias": True}
PARALLEL = (
    "attention_in_multiplier",
    "key_multiplier",
    "attention_out_multiplier",
    "ssm_in_multiplier",
    "ssm_out_multiplier",
)


def _scales(c: Keys, key: str, count: int) -> list[float] | None:
    """A list of `count` multipliers, None when absent or all 1."""
    values = c.data.get(key)
    if values is None:
        return None
    if not isinstance(values, list) or len(values) != count:
        raise c.fail(key, values, f"a list of {count} numbers")
    return None if all(v == 1 for v in values) else [float(v) for v in values]


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (FalconH1Config's defaults: 32 layers of 4,096, 32 heads, 8 key/value heads, 128 mixer
    heads of 1,024 / 128, state 256)."""
    out = llama_like(c, c.count("num_key_value_heads", 8), None, 1e-5, False, 8192)
    out |= {"attention_bias": c.flag("attention_bias", False), "ff_bias": c.flag("mlp_bias", False)}
    d = out["d"]
    inner = c.nullable_count("mamba_d_ssm", 1024) or int(c.number("mamba_expand", 2) * d)
    if c.nullable_count("mamba_d_ssm", 1024) is not None and c.has("mamba_expand"):
        c.ignored("mamba_expand", "5.24's Falcon-H1 takes mamba_d_ssm's channels", unless=inner / d)
    heads = c.count("mamba_n_heads", 128)
    head = c.data.get("mamba_d_head", "auto")
    head = inner // heads if head == "auto" else c.count("mamba_d_head")
    if c.flag("projectors_bias", False) != c.flag("mamba_proj_bias", False):
        why = "equal to mamba_proj_bias: tfm's state space has biases on both its projections or on neither"
        raise c.refuse("projectors_bias", c.data.get("projectors_bias", False), why)
    keys = Keys(c.data | {"mamba_d_head": head, "mamba_expand": inner / d}, c.source, notes=c.notes)
    out |= mixer_keys(keys, d, NAMES, DEFAULTS | {"head_dim": head}) | {"attention": "attention_mamba2"}
    if c.flag("mamba_rms_norm", False):
        out["ssm_norm"] = "before_gate" if c.flag("mamba_norm_before_gate", True) else "gated"
    else:
        out["ssm_norm"] = "none"
    parallel = [c.number(key, 1.0) for key in PARALLEL]
    if any(v != 1 for v in parallel):
        out["parallel_scales"] = parallel
    for key, ours, count in (("ssm_multipliers", "ssm_scales", 5), ("mlp_multipliers", "ff_scales", 2)):
        found = _scales(c, key, count)
        if found is not None:
            out[ours] = found
    for key, ours in (("embedding_multiplier", "embed_scale"), ("lm_head_multiplier", "logit_scale")):
        value = c.number(key, 1.0)
        if value != 1.0:
            out[ours] = value
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Falcon-H1's config.json."""
    inner = (spec.ssm_heads or 0) * (spec.ssm_head_dim or 0)
    out = shared_keys(spec) | mixer_config(spec, NAMES) | {"mamba_d_ssm": inner, "projectors_bias": spec.ssm_bias}
    out |= {"attention_bias": spec.attention_bias, "mlp_bias": spec.ff_bias, "hidden_act": "silu"}
    out |= {"mamba_rms_norm": spec.ssm_norm != "none", "mamba_norm_before_gate": spec.ssm_norm != "gated"}
    out |= dict(zip(PARALLEL, spec.parallel_scales or (1.0,) * 5, strict=True))
    out |= {"ssm_multipliers": list(spec.ssm_scales or (1.0,) * 5)}
    out |= {"mlp_multipliers": list(spec.ff_scales or (1.0, 1.0))}  # (floats: FalconH1Config takes no int)
    embed = spec.embed_scale if isinstance(spec.embed_scale, float) else 1.0
    return out | {"embedding_multiplier": embed, "lm_head_multiplier": spec.logit_scale}


GGUF = state_space_gguf("falcon-h1", LAYOUT, gguf_spec, gguf_metadata, held_model=folded)
RECORD = Record("falcon_h1", "FalconH1ForCausalLM", spec, BAMBA, config, GGUF)

__all__ = ["RECORD"]
