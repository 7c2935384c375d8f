"""The values a spec's choice keys take, and the metadata every key declares (definition.py, rope_keys.py).

A component's kinds are named once, where each is implemented: the registries below are filled by the component
modules (`@POSITIONALS.register("rope")`, transformer_cli/registry.py), and the spec reads their names when it
checks or prints a value. The choices the spec itself implements are named here.
"""

from __future__ import annotations

from typing import Any

from .. import kernels
from ..registry import Registry
from .rope_scaling import ROPE_SCALINGS as SCALING_TYPES

SCALES = ("none", "sqrt")
MASKS = ("none", "causal")
ROPE_PAIRINGS = ("half", "interleaved", "half_reversed", "proportional")
ROPE_SCALINGS = tuple(SCALING_TYPES)  # each with its frequency function
ACTIVATIONS = tuple(kernels.ACTIVATIONS)  # each with its kernel
ATTENTION_KINDS = SLIDING, FULL = ("sliding", "full")  # a block of a stack with a window: through it, or not
# a block's feedforward: routed to experts, one dense, none (Nemotron-H's blocks of a mixer alone), or routed by the
# token's id (DeepSeek-V4's first blocks: router_hash)
FEEDFORWARD_KINDS = ROUTED, DENSE, NO_FEEDFORWARD, HASHED = ("routed", "dense", "none", "hashed")
KV_SOURCES = OWN_KV, REUSED_KV = ("own", "reused")  # a block's keys and values: its own, or an earlier block's
PLACES = FIRST, LATER = ("first", "later")  # block 0 and the rest, where block 0 lacks a norm (first_attn_norm)
POSITION_KINDS = ROTARY, NOPE = ("rope", "nope")  # a block of a rotary stack: turns its queries and keys, or not
LEARNED = ("learned", "learned_relative")  # the positionals with a learned table P (max_len of them)
RELATIVE = ("relative", "learned_relative")  # those with T5's bias table of buckets

# the components' kinds, each registered by the module that implements it
POSITIONALS: Registry[Any] = Registry("positional")  # components/positional.py
NORMS: Registry[Any] = Registry("norm")  # components/residual.py: where a block's norms sit (parallel: its own key)
NORM_TYPES: Registry[Any] = Registry("norm_type")  # components/norm.py
FEEDFORWARDS: Registry[Any] = Registry("feedforward")  # components/feedforward.py
ATTENTIONS: Registry[Any] = Registry("attention")  # components/attention.py, components/latent.py

LABELS = ("name", "description", "context")  # shown, but a difference in a label is not a difference in the model


def key(kind: str, doc: str, choices: tuple[str, ...] | Registry[Any] = ()) -> dict[str, Any]:
    """A key's metadata: its kind (what validate.py checks), its help, its choices (a tuple, or the registry of the
    components' kinds)."""
    return {"kind": kind, "doc": doc, "choices": choices}


def shortest_pattern(kinds: list[str] | tuple[str, ...], N: int) -> tuple[str, ...]:
    """The shortest pattern that, repeated over N blocks, gives the same kinds as `kinds` repeated."""
    per_layer = [kinds[i % len(kinds)] for i in range(N)]
    period = next(p for p in range(1, N + 1) if all(per_layer[i] == per_layer[i % p] for i in range(N)))
    return tuple(per_layer[:period])
