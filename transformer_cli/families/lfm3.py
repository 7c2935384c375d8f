"""LFM3 (Lfm3ForCausalLM, Liquid AI's): LFM2's short convolutions (components/short_conv.py, conv_L_cache taps, 7
by default) between attention blocks of two kinds, sliding_attention (a window of sliding_window, turned by the
default rotary of their own base) and full_attention (Gemma 4's proportional rotary on partial_rotary_factor of
each head), as layer_types says (by default: full every fourth from block 2, sliding every fourth from block 4, the
rest convolutions). Attention has heads of head_dim (128), an RMSNorm of each query and key head, biases with
attention_bias, and with use_attention_gate each head's output times sigmoid(g_proj x), one a head. With
use_sandwich_norm (the default) each sublayer's output is normalised too (post_operator_norm, post_ffn_norm: the
sandwich layout), else pre-norm. The MLP is a SwiGLU of intermediate_size as given; the final norm is
model.embedding_norm; the head is tied by default.
"""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .config_keys import size_keys
from .gemma4 import _ropes
from .keys import Keys
from .layout import Family
from .layout import linear_names as _linear
from .layout import norm_names as _norm
from .lfm2 import CONV, LFM2
from .record import Record

KINDS = ("conv", "sliding_attention", "full_attention")


def _layer_types(c: Keys, N: int) -> list[str]:
    kinds = c.data.get("layer_types") or [
        "full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0 else "conv" for i in range(N)
    ]
    if not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= set(KINDS):
        raise c.fail("layer_types", kinds, f"a list of {N} of {', '.join(KINDS)}")
    return kinds


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (Lfm3Config's defaults: 16 heads of 128, 4 key/value heads, a window of 256)."""
    N, d, H = c.count("num_hidden_layers", 24), c.count("hidden_size", 2048), c.count("num_attention_heads", 16)
    G, m = c.count("num_key_value_heads", 4), c.count("head_dim", 128)
    kinds = _layer_types(c, N)
    sliding = "sliding_attention" in kinds
    out: dict[str, Any] = {
        "N": N,
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size", 7680),
        "V": c.count("vocab_size", 128000),
        "scale": "sqrt",
        "mask": "causal",
        "norm": "sandwich" if c.flag("use_sandwich_norm", True) else "pre",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("norm_eps", 1e-5, "rms_norm_eps"),
        "feedforward": "gated",
        "activation": "silu",
        "ff_bias": False,
        "qk_norm": True,
        "attention_bias": c.flag("attention_bias", False),
        "tie_embeddings": c.flag("tie_word_embeddings", True),
        "context": c.count("max_position_embeddings", 128000),
        "conv_kernel": c.count("conv_L_cache", 7),
        "conv_bias": c.flag("conv_bias", False),
    }
    out |= {"G": G} if G != H else {}
    if c.flag("use_attention_gate", True):
        out |= {"attn_gate": True, "attn_gate_per_head": True}
    out |= _ropes(c, m, sliding)
    if sliding:
        out["window"] = c.count("sliding_window", 256)
        if "full_attention" in kinds:
            out["attention_layers"] = ["sliding" if kind == "sliding_attention" else "full" for kind in kinds]
    if "conv" in kinds:
        out["mixer_layers"] = [CONV if kind == "conv" else "standard" for kind in kinds]
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> LFM3's config.json."""
    mixers = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    attention = [kind_of(spec.attention_layers, i, "sliding") if spec.window else "full" for i in range(spec.N)]
    kinds = ["conv" if mix == CONV else f"{kind}_attention" for mix, kind in zip(mixers, attention, strict=True)]
    ropes = {"full_attention": {"rope_type": "proportional", "rope_theta": spec.rope_theta}}
    ropes["full_attention"]["partial_rotary_factor"] = spec.rope_fraction
    ropes["sliding_attention"] = {"rope_type": "default", "rope_theta": spec.rope_local_theta or spec.rope_theta}
    return size_keys(spec) | {
        "norm_eps": spec.norm_eps,
        "layer_types": kinds,
        "sliding_window": spec.window or 256,
        "rope_parameters": ropes,
        "use_sandwich_norm": spec.norm == "sandwich",
        "use_attention_gate": spec.attn_gate,
        "attention_bias": spec.attention_bias,
        "conv_L_cache": spec.conv_kernel,
        "conv_bias": spec.conv_bias,
    }


def _names() -> dict[str, str]:
    names = {ours: theirs for ours, theirs in LFM2.names.items() if not ours.startswith("attention.")}
    for x, proj in (("Q", "q_proj"), ("K", "k_proj"), ("V", "v_proj"), ("O", "o_proj")):
        names |= _linear("attention.{}_" + x, f"self_attn.{proj}")
    names |= {"attention.q_norm.gamma": "self_attn.q_norm.weight", "attention.k_norm.gamma": "self_attn.k_norm.weight"}
    names |= {"attention.W_G": "self_attn.gate_proj.weight"}  # (g_proj, as transformers saves it)
    return names | _norm("norm1_out", "post_operator_norm") | _norm("norm2_out", "post_ffn_norm")


LFM3 = Family(LFM2.block, _names(), LFM2.globals_)
RECORD = Record("lfm3", "Lfm3ForCausalLM", spec, LFM3, config, config_alone=True)

__all__ = ["LFM3", "RECORD"]
