"""The rope scaling types, registered by name: each one's frequency function, its factor on cos and sin, and
whether a pass's length changes its frequencies. The spec's `rope_scaling` choices are this registry's names
(rope_keys.py), and the rotary positions ask it (components/positional.py), so a new scaling type is one function
and one line here.

Each function reads the spec's rope keys (rope_keys.py) and returns the rot/2 frequencies f_j in float64 of a pass
whose last position is length - 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

Array = np.ndarray


# the frequency functions, in float64


def rope_frequencies(rot: int, theta: float, over: int | None = None) -> Array:
    """Rotary frequencies theta^(-2j/rot) of the rot/2 pairs j, in float64: (rot/2,); theta^(-2j/over) with `over`
    (Gemma 4's proportional rope: the exponent over the whole head)."""
    return np.power(float(theta), -2.0 * np.arange(rot // 2) / (over or rot))


def llama3_frequencies(freq: Array, factor: float, low: float, high: float, original: int) -> Array:
    """Llama 3.1's scaling of rotary frequencies f (wavelength 2 pi / f) for an original context L:
    wavelength > L/low: f / factor; < L/high: f unchanged; between: (1 - s) f / factor + s f, s = (L/wavelength - low)
    / (high - low)."""
    wavelength = 2 * np.pi / freq
    with np.errstate(divide="ignore", invalid="ignore"):  # (high = low, Llama 4's: no wavelength between)
        s = (original / wavelength - low) / (high - low)
        between = (1 - s) * freq / factor + s * freq
    return np.where(wavelength > original / low, freq / factor, np.where(wavelength < original / high, freq, between))


def yarn_frequencies(
    rot: int, theta: float, factor: float, original: int, beta_fast: float, beta_slow: float, truncate: bool
) -> Array:
    """YaRN's rotary frequencies (Peng et al. 2023, as transformers computes them): pairs that turn more than
    beta_fast times over the original context keep their frequency, those under beta_slow are interpolated
    (f / factor), a linear ramp between; in float64: (rot/2,)."""
    freq = rope_frequencies(rot, theta)

    def pair_at(rotations: float) -> float:  # the pair index that turns `rotations` times over the original context
        return rot * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = pair_at(beta_fast), pair_at(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, rot - 1)
    if low == high:
        high += 0.001  # as transformers: no division by zero
    ramp = np.clip((np.arange(rot // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    kept = 1.0 - ramp  # the share of each pair's frequency kept (extrapolated)
    return freq / factor * (1.0 - kept) + freq * kept


def yarn_attention_factor(factor: float, mscale: float | None, mscale_all_dim: float | None) -> float:
    """YaRN's factor on cos and sin: 0.1 ln(factor) + 1 (1 for factor <= 1); DeepSeek's mscale and mscale_all_dim
    give the ratio of two such factors."""

    def m(scale: float, k: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * k * math.log(scale) + 1.0

    if mscale and mscale_all_dim:
        return m(factor, mscale) / m(factor, mscale_all_dim)
    return m(factor)


def dynamic_frequencies(rot: int, theta: float, factor: float, original: int, length: int) -> Array:
    """Dynamic NTK scaling (as transformers' _compute_dynamic_ntk_parameters): for a pass whose last position is
    L - 1 with L past the original context, the base grows to theta ((factor L / original) - (factor - 1))^(rot /
    (rot - 2)); up to the original context it is theta. In float64: (rot/2,)."""
    L = max(length, original)
    base = theta * ((factor * L / original) - (factor - 1)) ** (rot / (rot - 2))
    return rope_frequencies(rot, base)


def longrope_frequencies(
    rot: int, theta: float, short: tuple[float, ...], long: tuple[float, ...], original: int, length: int
) -> Array:
    """LongRoPE (Phi-3.5, as transformers computes it): pair j's frequency divided by long[j] in a pass whose
    length L is past the original context, by short[j] up to it (every position of the pass alike). (rot/2,)."""
    factors = np.asarray(long if length > original else short, dtype=np.float64)
    return rope_frequencies(rot, theta) / factors


def longrope_attention_factor(factor: float, original: int) -> float:
    """LongRoPE's factor on cos and sin: sqrt(1 + ln(factor) / ln(original)), 1 for factor <= 1."""
    return 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))


class RopeKeys(Protocol):
    """The keys a scaling type reads, read-only (a Spec has them all)."""

    @property
    def rotated_dims(self) -> int: ...

    @property
    def m(self) -> int: ...

    @property
    def rope_pairing(self) -> str: ...

    @property
    def rope_theta(self) -> float: ...

    @property
    def rope_factor(self) -> float: ...

    @property
    def rope_low_freq_factor(self) -> float: ...

    @property
    def rope_high_freq_factor(self) -> float: ...

    @property
    def rope_original_max_len(self) -> int: ...

    @property
    def rope_attention_factor(self) -> float | None: ...

    @property
    def rope_short_factor(self) -> tuple[float, ...] | None: ...

    @property
    def rope_long_factor(self) -> tuple[float, ...] | None: ...

    @property
    def rope_beta_fast(self) -> float: ...

    @property
    def rope_beta_slow(self) -> float: ...

    @property
    def rope_mscale(self) -> float | None: ...

    @property
    def rope_mscale_all_dim(self) -> float | None: ...

    @property
    def rope_truncate(self) -> bool: ...


def unscaled(s: RopeKeys, length: int) -> np.ndarray:
    """f_j = theta^(-2j/rot) (proportional pairs: theta^(-2j/m))."""
    return rope_frequencies(s.rotated_dims, s.rope_theta, s.m if s.rope_pairing == "proportional" else None)


def llama3(s: RopeKeys, length: int) -> np.ndarray:
    """Llama 3.1's: low frequencies divided by the factor, high ones kept, a ramp between."""
    return llama3_frequencies(
        unscaled(s, length), s.rope_factor, s.rope_low_freq_factor, s.rope_high_freq_factor, s.rope_original_max_len
    )


def linear(s: RopeKeys, length: int) -> np.ndarray:
    """Every frequency divided by the factor."""
    return unscaled(s, length) / s.rope_factor


def dynamic(s: RopeKeys, length: int) -> np.ndarray:
    """Dynamic NTK: the base grows with a pass past the original context."""
    return dynamic_frequencies(s.rotated_dims, s.rope_theta, s.rope_factor, s.rope_original_max_len, length)


def yarn(s: RopeKeys, length: int) -> np.ndarray:
    """YaRN's interpolated and extrapolated pairs."""
    return yarn_frequencies(
        s.rotated_dims,
        s.rope_theta,
        s.rope_factor,
        s.rope_original_max_len,
        s.rope_beta_fast,
        s.rope_beta_slow,
        s.rope_truncate,
    )


def longrope(s: RopeKeys, length: int) -> np.ndarray:
    """LongRoPE's short factors up to the original context, its long ones past it."""
    return longrope_frequencies(
        s.rotated_dims,
        s.rope_theta,
        s.rope_short_factor or (),
        s.rope_long_factor or (),
        s.rope_original_max_len,
        length,
    )


def no_factor(s: RopeKeys) -> float:
    return 1.0


def yarn_factor(s: RopeKeys) -> float:
    """The spec's rope_attention_factor, else YaRN's 0.1 ln(factor) + 1 (or DeepSeek's ratio of two)."""
    if s.rope_attention_factor is not None:
        return s.rope_attention_factor
    return yarn_attention_factor(s.rope_factor, s.rope_mscale, s.rope_mscale_all_dim)


def longrope_factor(s: RopeKeys) -> float:
    """The spec's rope_attention_factor, else sqrt(1 + ln(factor) / ln(L))."""
    if s.rope_attention_factor is not None:
        return s.rope_attention_factor
    return longrope_attention_factor(s.rope_factor, s.rope_original_max_len)


@dataclass(frozen=True)
class Scaling:
    """One scaling type: its frequencies (spec, length) -> (rot/2,), its factor on cos and sin, and whether the
    frequencies may depend on the pass's length (then the theory compares two lengths)."""

    frequencies: Callable[[RopeKeys, int], np.ndarray]
    attention_factor: Callable[[RopeKeys], float] = no_factor
    length_dependent: bool = False


ROPE_SCALINGS: dict[str, Scaling] = {
    "none": Scaling(unscaled),
    "llama3": Scaling(llama3),
    "linear": Scaling(linear),
    "dynamic": Scaling(dynamic, length_dependent=True),
    "yarn": Scaling(yarn, yarn_factor),
    "longrope": Scaling(longrope, longrope_factor, length_dependent=True),
}
