"""The keys of the norms' parameters beyond their kind and place: none at all (norm_affine), or gains of 1 + gamma
(norm_plus_one). The Spec's class body takes each field from here."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import key as _key

NORM_FIELDS: dict[str, Any] = {
    "norm_affine": field(
        default=True, metadata=_key("bool", "the norms' gains (and betas); false: none, x normalised alone (OLMo 1)")
    ),
    "first_attn_norm": field(
        default=True,
        metadata=_key(
            "bool",
            "false: block 0 has no norm before its attention, the embedding's norm being its input's (ModernBERT); "
            "pre-norm only",
        ),
    ),
    "norm_plus_one": field(
        default=False,
        metadata=_key(
            "bool", "the norms scale by (1 + gamma), gamma starting at 0 (Gemma's RMSNorm, Nemotron's LayerNorm)"
        ),
    ),
    "norm_layers": field(
        default=None,
        metadata=_key(
            "layers",
            "where each block's norms sit, pre (before each sublayer) or output (after it: OLMo 2's), when the blocks "
            "differ (OLMo-Hybrid: its attention blocks output, its linear attention blocks pre): a list of N kinds or "
            "a shorter pattern [default: every block as `norm`]",
            ("pre", "output"),
        ),
    ),
}

__all__ = ["NORM_FIELDS"]
