"""The feedforward's kind, gpt-oss's clamped SwiGLU's two numbers, and which blocks route to experts. The Spec's
class body takes each field from here."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import FEEDFORWARD_KINDS, FEEDFORWARDS
from .choices import key as _key

FEEDFORWARD_FIELDS: dict[str, Any] = {
    "feedforward": field(
        default="plain",
        metadata=_key(
            "choice",
            "plain: W2 act(W1 X + b1) + b2; gated: W2 (act(W1 X) * (W3 X)); clamped: gpt-oss's "
            "SwiGLU, W2 ((clamp(W3 X, +-limit) + 1) * g sigmoid(alpha g)), g = min(W1 X, limit); limited: gated "
            "with act(min(W1 X, limit)) * clamp(W3 X, +-limit) (GLM-5-Next's, DeepSeek-V4's); xielu: plain "
            "with Apertus's xIELU, its two parameters ff.alpha_p, ff.alpha_n per block (activation unused); none: "
            "no feedforward, the block its mixer alone (Mamba-2)",
            FEEDFORWARDS,
        ),
    ),
    "swiglu_alpha": field(default=1.702, metadata=_key("posfloat", "clamped: the sigmoid's slope alpha")),
    "swiglu_limit": field(default=7.0, metadata=_key("posfloat", "clamped, limited: the clamp's limit")),
    "feedforward_layers": field(
        default=None,
        metadata=_key(
            "layers",
            "which blocks route to the E experts and which have one dense feedforward of size r (DeepSeek's first "
            "layers; hashed: routed by the token's id, router_hash's): a list of N kinds or a shorter pattern repeated "
            "over the blocks [default: all routed]; with E",
            FEEDFORWARD_KINDS,
        ),
    ),
    "ff_scales": field(
        default=None,
        metadata=_key(
            "floats",
            "gated: two numbers, the gate's rows W1 X times the first before the activation, the output times the "
            "second (Falcon-H1's mlp_multipliers) [default: none]",
        ),
    ),
}

__all__ = ["FEEDFORWARD_FIELDS"]
