"""Bamba (BambaForCausalLM, IBM's): LLaMA's pre-norm block (input_layernorm, pre_ff_layernorm, a SwiGLU MLP of
intermediate_size) whose mixer is Mamba-2's state space (components/mamba2.py, under `mamba.`) in every layer but
those attn_layer_indices lists, which attend (grouped-query, heads of hidden_size / H, no biases unless
attention_bias, rotary on the first half of each head: BambaConfig fixes partial_rotary_factor at 0.5). The final
norm is model.final_layernorm; the head is untied by default.

The mixer's keys are mamba_*: mamba_n_heads heads of mamba_d_head ("auto": mamba_expand x hidden_size over the
heads), mamba_n_groups of mamba_d_state, a kernel of mamba_d_conv (mamba_conv_bias), mamba_proj_bias on its
projections; rms_norm_eps is every norm's, the gated one's too; hidden_act is the MLP's and the convolution's
(silu). mamba_chunk_size chunks transformers' scan and changes no number but its rounding. transformers 5.24's
Bamba numbers positions 0 .. n - 1 in a call without position_ids whatever its cache holds (generate passes them).
"""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .checkpoints import _LLAMA_GLOBALS, _llama_names
from .config_keys import shared_keys
from .keys import Keys
from .layout import Family
from .layout import norm_names as _norm
from .mamba2 import mixer_config, mixer_keys, mixer_names
from .parts import llama_like
from .record import Record

NAMES = {
    "heads": "mamba_n_heads",
    "head_dim": "mamba_d_head",
    "state": "mamba_d_state",
    "groups": "mamba_n_groups",
    "kernel": "mamba_d_conv",
    "expand": "mamba_expand",
    "bias": "mamba_proj_bias",
    "conv_bias": "mamba_conv_bias",
    "act": "hidden_act",
}
DEFAULTS = {"heads": 128, "state": 256, "groups": 1, "kernel": 4, "expand": 2, "bias": False, "conv_bias": True}


def state_space(c: Keys, names: dict[str, str], defaults: dict[str, Any]) -> dict[str, Any]:
    """The mamba_* keys as the spec's, mamba_d_head "auto" (or absent) made expand x hidden_size over the heads."""
    d = c.count("hidden_size", 4096)
    head_dim = c.data.get(names["head_dim"], "auto")
    if head_dim == "auto":
        heads = c.count(names["heads"], defaults["heads"])
        head_dim = int(c.number(names["expand"], defaults["expand"]) * d) // heads
    keys = Keys(c.data | {names["head_dim"]: head_dim}, c.source, notes=c.notes)
    return mixer_keys(keys, d, names, defaults | {"head_dim": head_dim})


def attention_layers(c: Keys, N: int, key: str = "attn_layer_indices") -> dict[str, Any]:
    """The layers `key` lists attend, the others mix by the state space: mixer_layers (none when all attend)."""
    listed = c.data.get(key) or []
    if not isinstance(listed, list) or not all(isinstance(i, int) and 0 <= i < N for i in listed):
        raise c.fail(key, listed, f"a list of layer indices below num_hidden_layers = {N}")
    kinds = ["standard" if i in listed else "mamba2" for i in range(N)]
    return {} if set(kinds) == {"standard"} else {"mixer_layers": kinds}


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (BambaConfig's defaults: 32 heads, 8 key/value heads, 128 mixer heads, state 256)."""
    out = llama_like(c, c.count("num_key_value_heads", 8), None, 1e-5, False, 262144, partial=0.5)
    out |= {"attention_bias": c.flag("attention_bias", False), "ff_bias": c.flag("mlp_bias", False)}
    return out | state_space(c, NAMES, DEFAULTS) | attention_layers(c, out["N"])


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Bamba's config.json (its rotary's half fixed by BambaConfig itself)."""
    attending = [i for i in range(spec.N) if kind_of(spec.mixer_layers, i, spec.attention) == "standard"]
    out = shared_keys(spec) | mixer_config(spec, NAMES) | {"attn_layer_indices": attending}
    return out | {"attention_bias": spec.attention_bias, "mlp_bias": spec.ff_bias, "hidden_act": "silu"}


def _names() -> dict[str, str]:
    names = {
        ours: theirs.replace("mlp.", "feed_forward.") for ours, theirs in _llama_names().items() if "norm" not in ours
    }
    return (
        names | mixer_names("mamba.", "mamba.") | _norm("norm1", "input_layernorm") | _norm("norm2", "pre_ff_layernorm")
    )


BAMBA = Family(
    "model.layers.{i}.",
    _names(),
    {k: v for k, v in _LLAMA_GLOBALS.items() if "final_norm" not in k} | _norm("final_norm", "model.final_layernorm"),
)

RECORD = Record("bamba", "BambaForCausalLM", spec, BAMBA, config)

__all__ = ["BAMBA", "RECORD", "attention_layers", "state_space"]
