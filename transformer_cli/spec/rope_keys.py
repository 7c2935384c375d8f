"""The rotary keys of a spec (positional: rope): the base, the part of each head turned, the pairing, and the
frequency scalings (Llama 3.1's, linear, dynamic NTK, YaRN, LongRoPE) with their parameters. The Spec's class body
takes each field from here, so the rope's keys and their help live together."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import ROPE_PAIRINGS, ROPE_SCALINGS
from .choices import key as _key

ROPE_FIELDS: dict[str, Any] = {
    "rope_theta": field(default=10000.0, metadata=_key("posfloat", "rotary base: pair j turns t theta^(-2j/rot)")),
    "rope_fraction": field(
        default=1.0, metadata=_key("fraction", "rotated part of each head: rot = int(m * fraction) dims, even")
    ),
    "rope_pairing": field(
        default="half",
        metadata=_key(
            "choice",
            "half: dim j with j + rot/2 (LLaMA, NeoX); interleaved: 2j with 2j+1 (GPT-J); half_reversed: half's "
            "pairs turned by -angle (NanoChat); proportional: dim j < rot/2 with j + m/2, f_j = theta^(-2j/m) "
            "(Gemma 4's full layers)",
            ROPE_PAIRINGS,
        ),
    ),
    "rope_scaling": field(
        default="none",
        metadata=_key(
            "choice",
            "frequency scaling: llama3 (Llama 3.1), linear (f / factor), dynamic (NTK: the base grows with a pass "
            "past the original context), yarn (Qwen2.5, DeepSeek, gpt-oss), longrope (Phi-3.5) or none",
            ROPE_SCALINGS,
        ),
    ),
    "rope_factor": field(
        default=8.0,
        metadata=_key(
            "posfloat",
            "llama3: low frequencies divided by this; linear: every frequency; dynamic: the "
            "base's growth rate; yarn: the context's stretch (interpolated frequencies divided by it); "
            "longrope: the stretch its attention factor is made from",
        ),
    ),
    "rope_low_freq_factor": field(default=1.0, metadata=_key("posfloat", "llama3: wavelength > L / this: scaled")),
    "rope_high_freq_factor": field(default=4.0, metadata=_key("posfloat", "llama3: wavelength < L / this: kept")),
    "rope_original_max_len": field(
        default=8192,
        metadata=_key(
            "posint",
            "llama3, yarn, longrope: L, the original context length; dynamic: the length past "
            "which the base grows (transformers' max_position_embeddings)",
        ),
    ),
    "rope_attention_factor": field(
        default=None,
        metadata=_key(
            "posfloat",
            "yarn, longrope: cos and sin times this [yarn: 0.1 ln(factor) + 1, or with "
            "rope_mscale and rope_mscale_all_dim their ratio of that form (DeepSeek); longrope: "
            "sqrt(1 + ln(factor) / ln(L))]",
        ),
    ),
    "rope_short_factor": field(
        default=None,
        metadata=_key("floats", "longrope: rot/2 numbers dividing the frequencies of a pass up to L long"),
    ),
    "rope_long_factor": field(
        default=None, metadata=_key("floats", "longrope: rot/2 numbers dividing the frequencies of a longer pass")
    ),
    "rope_beta_fast": field(default=32.0, metadata=_key("posfloat", "yarn: rotations past which pairs extrapolate")),
    "rope_beta_slow": field(default=1.0, metadata=_key("posfloat", "yarn: rotations below which pairs interpolate")),
    "rope_mscale": field(default=None, metadata=_key("posfloat", "yarn: DeepSeek's mscale")),
    "rope_mscale_all_dim": field(default=None, metadata=_key("posfloat", "yarn: DeepSeek's mscale_all_dim")),
    "rope_truncate": field(
        default=True, metadata=_key("bool", "yarn: the ramp's ends rounded to whole pairs (false: gpt-oss)")
    ),
    "rope_query_beta": field(
        default=None,
        metadata=_key(
            "posfloat",
            "Llama 4's attention scaling: the query at position t times 1 + beta ln(1 + floor(t / "
            "rope_query_len)), after its rotation (Ministral 3, Mistral 4's llama_4_scaling_beta)",
        ),
    ),
    "rope_learned": field(
        default=False,
        metadata=_key(
            "bool",
            "each rotary frequency times exp(alpha_j), alpha a learned tensor positional.alpha (rot/2) (Mistral Large "
            "4's LeRoPE)",
        ),
    ),
    "rope_query_len": field(
        default=None, metadata=_key("posint", "the positions per step of that scaling; with rope_query_beta")
    ),
}
