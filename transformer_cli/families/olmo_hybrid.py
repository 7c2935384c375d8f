"""OLMo-Hybrid (OlmoHybridForCausalLM, AI2's): Gated DeltaNet (components/deltanet.py) in the linear_attention layers
of layer_types (default: three of every four, at least one layer attending) and OLMo 3's attention in the
full_attention ones. The two kinds of block place their norms differently (norm_layers): an attention block
normalises each sublayer's output (OLMo 2's post_attention_layernorm, post_feedforward_layernorm), a linear one each
sublayer's input (input_layernorm, post_attention_layernorm; its files name them attention_layer_norm and
feedforward_layer_norm, and the attention block's post_attention_layernorm feedforward_layer_norm too).

The attention: heads of hidden_size / heads, an RMSNorm over all query heads and one over all key heads, rotary
positions over whole heads (rope_parameters; none at all where its rope_theta is null, as the published
checkpoints have it). The linear attention: Qwen3-Next's rule with its projections apart (q, k, v, the gate g, a, b),
one convolution over [q; k; v], beta doubled with linear_allow_neg_eigval (the default), an output norm of eps 1e-5
(FLA's, whatever rms_norm_eps), and the sizes' defaults: key heads of int(0.75 hidden_size / heads), value heads
twice as wide.
"""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .checkpoints import OLMO2
from .config_keys import shared_keys
from .keys import Keys
from .layout import Family
from .layout import norm_names as _norm
from .parts import llama_like
from .record import Record

OUTPUT_NORM_EPS = 1e-5  # the linear attention's gated norm (FusedRMSNormGated's default)


def _kinds(c: Keys, N: int) -> list[str]:
    kinds = c.data.get("layer_types")
    if kinds is None:
        kinds = ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(N)]
        kinds[-1] = "full_attention" if "full_attention" not in kinds else kinds[-1]
    if not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= {"linear_attention", "full_attention"}:
        raise c.fail("layer_types", kinds, f"a list of {N} 'linear_attention' or 'full_attention'")
    return kinds


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (OlmoHybridConfig's defaults: 32 layers of 3,840, 30 heads)."""
    rope = c.data.get("rope_parameters")
    nope = "rope_theta" in (rope or c.data) and (rope or c.data)["rope_theta"] is None
    if nope:  # (a rope_theta of null: no positions at all; a null rope_parameters is transformers' default rope)
        c = Keys({k: v for k, v in c.data.items() if not k.startswith("rope_")}, c.source, notes=c.notes)
    out = llama_like(c, c.nullable_count("num_key_value_heads", None), None, 1e-6, False, 65536)
    if nope:
        out = {k: v for k, v in out.items() if not k.startswith("rope_")} | {"positional": "none"}
    H, d = out["H"], out["d"]
    kinds = _kinds(c, out["N"])
    nk, nv = c.nullable_count("linear_num_key_heads", H) or H, c.nullable_count("linear_num_value_heads", H) or H
    dk = c.nullable_count("linear_key_head_dim", None) or int(0.75 * d / nk)
    if nv % nk:
        raise c.fail("linear_num_value_heads", nv, f"a multiple of linear_num_key_heads = {nk}")
    out |= {"attention_bias": c.flag("attention_bias", False), "qk_norm": True, "qk_norm_over": "all"}
    out |= {
        "mixer_layers": ["deltanet" if kind == "linear_attention" else "standard" for kind in kinds],
        "norm_layers": ["pre" if kind == "linear_attention" else "output" for kind in kinds],
        "linear_k_heads": nk,
        "linear_k_dim": dk,
        "linear_v_heads": nv,
        "linear_v_dim": c.nullable_count("linear_value_head_dim", None) or 2 * dk,
        "conv_kernel": c.count("linear_conv_kernel_dim", 4),
        "linear_norm_eps": OUTPUT_NORM_EPS,
    }
    if c.flag("linear_allow_neg_eigval", True):
        out["linear_beta_scale"] = 2.0
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> OLMo-Hybrid's config.json."""
    kinds = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    out = shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": "silu"}
    out.pop("head_dim", None)  # (OlmoHybridConfig has none: hidden_size / heads)
    out |= {"layer_types": ["linear_attention" if kind == "deltanet" else "full_attention" for kind in kinds]}
    out |= {"linear_num_key_heads": spec.linear_k_heads, "linear_key_head_dim": spec.linear_k_dim}
    out |= {"linear_num_value_heads": spec.linear_v_heads, "linear_value_head_dim": spec.linear_v_dim}
    out |= {"linear_conv_kernel_dim": spec.conv_kernel, "linear_allow_neg_eigval": spec.linear_beta_scale == 2.0}
    return out if spec.positional == "rope" else out | {"rope_parameters": {"rope_type": "default", "rope_theta": None}}


_LINEAR = {"W_q": "q_proj", "W_k": "k_proj", "W_v": "v_proj", "W_z": "g_proj", "W_a": "a_proj", "W_b": "b_proj"}
_LINEAR |= {"W_out": "o_proj", "norm.gamma": "o_norm"}
# (the files' names: a linear block's norms before its sublayers attention_layer_norm and feedforward_layer_norm, an
# attention block's after its attention feedforward_layer_norm too; transformers renames them when it loads)
NAMES = OLMO2.names | _norm("norm1", "attention_layer_norm") | _norm("norm2", "feedforward_layer_norm")
NAMES |= _norm("norm1_out", "feedforward_layer_norm")
NAMES |= {f"delta.{ours}": f"linear_attn.{theirs}.weight" for ours, theirs in _LINEAR.items()}
NAMES |= {f"delta.{name}": f"linear_attn.{name}" for name in ("A_log", "dt_bias")}


def _key_rows(spec: Spec) -> int:
    assert spec.linear_k_heads is not None and spec.linear_k_dim is not None
    return spec.linear_k_heads * spec.linear_k_dim


def _value_rows(spec: Spec) -> int:
    assert spec.linear_v_heads is not None and spec.linear_v_dim is not None
    return spec.linear_v_heads * spec.linear_v_dim


# the convolution over [q; k; v], held as three (written as the published files hold them: q's, k's and v's rows)
_CONV = tuple(
    (f"linear_attn.{x}_conv1d.weight", rows) for x, rows in zip("qkv", (_key_rows, _key_rows, _value_rows), strict=True)
)
OLMO_HYBRID = Family(OLMO2.block, NAMES, OLMO2.globals_, row_parts={"delta.kernel": _CONV})
RECORD = Record("olmo_hybrid", "OlmoHybridForCausalLM", spec, OLMO_HYBRID, config)

__all__ = ["RECORD"]
