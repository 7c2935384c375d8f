"""What the mixers' keys need of each other beyond their types (validate.py's checks): a mixer's own keys only
where a block mixes by it, at most one kind a block."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import SpecError
from .definition import Spec

Fail = Callable[[str, str, Any, str], SpecError]
OWN_KEYS = {"conv_kernel": "short_conv", "conv_bias": "short_conv"}  # a key -> the mixer that reads it
RECURRENT = frozenset(OWN_KEYS.values())  # the mixers that are not attention


def mixers(spec: Spec) -> set[str]:
    """The mixers the spec's blocks use: `attention`'s, and those mixer_layers names."""
    return {spec.attention, *(spec.mixer_layers or ())}


def check_mixers(spec: Spec, data: dict[str, Any], source: str, fail: Fail) -> None:
    """mixer_layers of at most N kinds; each mixer's keys with that mixer (`fail`: validate.py's one-line error)."""
    kinds = data.get("mixer_layers")
    if kinds is not None and len(kinds) > spec.N:
        raise fail(source, "mixer_layers", kinds, f"at most N = {spec.N} kinds (one per block)")
    used = mixers(spec)
    if used & RECURRENT and (spec.N_enc is not None or spec.block_groups is not None):
        key = "mixer_layers" if "mixer_layers" in data else "attention"
        raise fail(
            source,
            key,
            data.get(key),
            "one stack of blocks of their own with a recurrent mixer (no N_enc, block_groups)",
        )
    for key, mixer in OWN_KEYS.items():
        if key in data and mixer not in used:
            raise fail(source, key, data[key], f"no {key} without a {mixer} block (attention or mixer_layers)")


__all__ = ["check_mixers", "mixers"]
