"""The keys of the blocks' token mixers beside attention: which blocks mix their columns with which mixer (LFM2's
short convolutions between its attention blocks), and each mixer's own sizes. The Spec's class body takes each field
from here; each mixer is a component registered under its name (components/short_conv.py)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import ATTENTIONS
from .choices import key as _key

MIXER_FIELDS: dict[str, Any] = {
    "mixer_layers": field(
        default=None,
        metadata=_key(
            "layers",
            "which mixer each block mixes its columns with (LFM2: short_conv blocks between standard attention "
            "ones): a list of N kinds or a shorter pattern repeated over the blocks [default: all `attention`]",
            ATTENTIONS,
        ),
    ),
    "conv_kernel": field(
        default=3,
        metadata=_key(
            "posint",
            "short_conv: the causal depthwise convolution's kernel L, each column mixed with the L - 1 before it "
            "(LFM2's conv_L_cache)",
        ),
    ),
    "conv_bias": field(
        default=False, metadata=_key("bool", "short_conv: biases on its input and output projections and its kernel")
    ),
}

__all__ = ["MIXER_FIELDS"]
