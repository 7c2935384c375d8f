"""The rope scaling types, registered by name: each one's frequency function, its factor on cos and sin, and
whether a pass's length changes its frequencies. The spec's `rope_scaling` choices are this registry's names
(rope_keys.py), and the rotary positions ask it (components/positional.py), so a new scaling type is one function
and one line here.

Each function reads the spec's rope keys (rope_keys.py) and returns the rot/2 frequencies f_j in float64 of a pass
whose last position is length - 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .. import kernels


class RopeKeys(Protocol):
    """The keys a scaling type reads, read-only (a Spec has them all)."""

    @property
    def rotated_dims(self) -> int: ...

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
    """f_j = theta^(-2j/rot)."""
    return kernels.rope_frequencies(s.rotated_dims, s.rope_theta)


def llama3(s: RopeKeys, length: int) -> np.ndarray:
    """Llama 3.1's: low frequencies divided by the factor, high ones kept, a ramp between."""
    return kernels.llama3_frequencies(
        unscaled(s, length), s.rope_factor, s.rope_low_freq_factor, s.rope_high_freq_factor, s.rope_original_max_len
    )


def linear(s: RopeKeys, length: int) -> np.ndarray:
    """Every frequency divided by the factor."""
    return unscaled(s, length) / s.rope_factor


def dynamic(s: RopeKeys, length: int) -> np.ndarray:
    """Dynamic NTK: the base grows with a pass past the original context."""
    return kernels.dynamic_frequencies(s.rotated_dims, s.rope_theta, s.rope_factor, s.rope_original_max_len, length)


def yarn(s: RopeKeys, length: int) -> np.ndarray:
    """YaRN's interpolated and extrapolated pairs."""
    return kernels.yarn_frequencies(
        s.rotated_dims, s.rope_theta, s.rope_factor, s.rope_original_max_len, s.rope_beta_fast, s.rope_beta_slow,
        s.rope_truncate,
    )  # fmt: skip


def longrope(s: RopeKeys, length: int) -> np.ndarray:
    """LongRoPE's short factors up to the original context, its long ones past it."""
    return kernels.longrope_frequencies(
        s.rotated_dims, s.rope_theta, s.rope_short_factor or (), s.rope_long_factor or (), s.rope_original_max_len,
        length,
    )  # fmt: skip


def no_factor(s: RopeKeys) -> float:
    return 1.0


def yarn_factor(s: RopeKeys) -> float:
    """The spec's rope_attention_factor, else YaRN's 0.1 ln(factor) + 1 (or DeepSeek's ratio of two)."""
    if s.rope_attention_factor is not None:
        return s.rope_attention_factor
    return kernels.yarn_attention_factor(s.rope_factor, s.rope_mscale, s.rope_mscale_all_dim)


def longrope_factor(s: RopeKeys) -> float:
    """The spec's rope_attention_factor, else sqrt(1 + ln(factor) / ln(L))."""
    if s.rope_attention_factor is not None:
        return s.rope_attention_factor
    return kernels.longrope_attention_factor(s.rope_factor, s.rope_original_max_len)


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
