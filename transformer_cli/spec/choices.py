"""The values a spec's choice keys take, and the metadata every key declares (definition.py, rope_keys.py)."""

from __future__ import annotations

from typing import Any

from .. import kernels
from .rope_scaling import ROPE_SCALINGS as SCALING_TYPES

SCALES = ("none", "sqrt")
MASKS = ("none", "causal")
POSITIONALS = ("none", "sinusoidal", "learned", "rope", "relative", "alibi")
ROPE_PAIRINGS = ("half", "interleaved")
ROPE_SCALINGS = tuple(SCALING_TYPES)  # each with its frequency function
NORMS = ("none", "pre", "post", "sandwich", "output")
NORM_TYPES = ("layernorm", "rmsnorm")
FEEDFORWARDS = ("plain", "gated", "clamped")
ACTIVATIONS = tuple(kernels.ACTIVATIONS)  # each with its kernel
ATTENTION_KINDS = ("sliding", "full")  # a block of a stack with a window: through it, or seeing every earlier key
FEEDFORWARD_KINDS = ("routed", "dense")  # a block of a stack with experts: routed to them, or one feedforward


LABELS = ("name", "description", "context")  # shown, but a difference in a label is not a difference in the model


def key(kind: str, doc: str, choices: tuple[str, ...] = ()) -> dict[str, Any]:
    """A key's metadata: its kind (what validate.py checks), its help, its choices."""
    return {"kind": kind, "doc": doc, "choices": choices}
