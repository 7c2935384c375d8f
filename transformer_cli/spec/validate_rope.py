"""What the rope keys, Llama 4's and T5's relative positions' keys need of each other beyond their types
(validate.py's checks)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import SpecError
from .definition import Spec
from .stacks import decoder

Fail = Callable[[str, str, Any, str], SpecError]
Expected = Callable[[str], str]


def check_llama4(spec: Spec, data: dict[str, Any], source: str, fail: Fail, expected: Expected) -> None:
    """Llama 4's keys: chunks on a causal stack without a window; the query/key norms' options with qk_norm; the
    NoPE blocks' temperature whole (`fail` and `expected`: validate.py's one-line error and a key's kind)."""
    _fail, _expected = fail, expected
    if spec.chunk is not None and spec.mask != "causal":
        raise _fail(source, "chunk", spec.chunk, "no chunk without mask: causal")
    if spec.chunk is not None and spec.window is not None:
        raise _fail(source, "chunk", spec.chunk, "no chunk with a window")
    for key in ("qk_norm_nope", "qk_norm_affine"):
        if key in data and not spec.qk_norm:
            raise _fail(source, key, data[key], f"no {key} without qk_norm")
    if (spec.nope_query_beta is None) != (spec.nope_query_len is None):
        key, other = (
            ("nope_query_len", "nope_query_beta")
            if spec.nope_query_len is None
            else ("nope_query_beta", "nope_query_len")
        )
        raise SpecError(f"{source}: key '{key}': missing, expected {_expected(key)} with {other}")


def check_rope(spec: Spec, source: str, expected: Expected) -> None:
    """What the rope keys' types cannot say: whole pairs of rotated dims, and llama3's two bands in order."""
    _expected = expected
    for group in decoder(spec).groups():  # (each kind of block's own head size and part turned: Gemma 4's)
        layer, rot = group.spec, group.spec.rotated_dims
        if layer.positional == "rope" and (rot < 2 or rot % 2):
            raise SpecError(
                f"{source}: keys 'm', 'rope_fraction': int(m * rope_fraction) = int({layer.m} * "
                f"{layer.rope_fraction!r}) = {rot} rotated dims per head, expected an even number of at least 2"
            )
    rot = spec.rotated_dims
    if spec.rope_scaling == "dynamic" and rot == 2:
        raise SpecError(
            f"{source}: key 'rope_scaling': 'dynamic' needs more than 2 rotated dims per head (its base's "
            f"exponent is rot / (rot - 2)), got rot = int({spec.m} * {spec.rope_fraction!r}) = 2"
        )
    for key in ("rope_short_factor", "rope_long_factor"):
        factors = getattr(spec, key)
        if factors is not None and len(factors) != rot // 2:
            raise SpecError(
                f"{source}: key '{key}': got {len(factors)} numbers, expected rot/2 = {rot // 2} (one per rotated pair)"
            )
    if (spec.rope_query_beta is None) != (spec.rope_query_len is None):
        key, other = (
            ("rope_query_len", "rope_query_beta")
            if spec.rope_query_len is None
            else ("rope_query_beta", "rope_query_len")
        )
        raise SpecError(f"{source}: key '{key}': missing, expected {_expected(key)} with {other}")
    if spec.rope_scaling == "llama3" and spec.rope_high_freq_factor < spec.rope_low_freq_factor:
        raise SpecError(
            f"{source}: key 'rope_high_freq_factor': got {spec.rope_high_freq_factor!r}, expected at least "
            f"rope_low_freq_factor = {spec.rope_low_freq_factor!r} (equal: no band between, Llama 4's)"
        )


def check_relative(spec: Spec, source: str, fail: Fail) -> None:
    """T5's buckets: each direction a stack looks in needs an exact bucket and a logarithmic one (fewer divide by
    zero, in transformers as here), and the farthest distance must lie past the exact ones."""
    unmasked = bool(spec.N_enc) or spec.mask != "causal"
    least = 4 if unmasked else 2
    if spec.rel_buckets < least:
        why = (
            "an unmasked stack splits them between keys before and after the query, each half"
            if unmasked
            else "a causal stack"
        )
        raise fail(
            source,
            "rel_buckets",
            spec.rel_buckets,
            f"at least {least} ({why} needing an exact bucket and a logarithmic one)",
        )
    if spec.rel_max_distance <= spec.rel_buckets // 2:
        raise fail(source, "rel_max_distance", spec.rel_max_distance, "more than rel_buckets / 2 (the exact buckets)")


__all__ = ["check_llama4", "check_relative", "check_rope"]
