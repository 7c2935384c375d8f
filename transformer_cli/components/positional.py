"""Positions: encodings added to X before block 1 (sinusoidal, learned positional.P), or rotary positions (RoPE),
which turn each head's queries and keys by angles proportional to their positions, in every block."""

from __future__ import annotations

import numpy as np

from .. import kernels
from ..errors import SpecError
from ..spec.definition import NOT_RUN
from .base import Component, Pairs, Tensor, Term

ROTARY_PER_ENTRY = 3  # x cos - y sin: two multiplies and an add per rotated entry (the sign is the add's)


class NoPositions(Component):
    where = "input"

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"positions": 0}


class Sinusoidal(Component):
    """PE[2i, t] = sin(t / 10000^(2i/d)), PE[2i+1, t] = cos(...): no parameters."""

    where = "input"

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"positions": self.spec.d * b * n}

    def breaks_equivariance(self) -> str | None:
        return "sinusoidal positional encoding"

    def absolute_positions(self) -> str | None:
        return self.breaks_equivariance()  # added to X at absolute positions (learned too, below)


class Learned(Sinusoidal):
    """A learned (d, max_len) matrix P, its first n columns added to X; with position_offset, (d, offset +
    max_len) with position t in column offset + t (BART's table keeps 2 unused columns first)."""

    @property
    def columns(self) -> int:
        return (self.spec.max_len or 0) + (self.spec.position_offset or 0)

    def tensors(self, prefix: str) -> list[Tensor]:
        return [Tensor(prefix + "positional.P", (self.spec.d, self.columns), "positional")]

    def terms(self) -> list[Term]:
        symbols = "d*(max_len + offset)" if self.spec.position_offset else "d*max_len"
        return [Term(symbols, self.spec.d * self.columns, "model")]

    def breaks_equivariance(self) -> str | None:
        return "learned positional encoding"


class Rotary(Component):
    """RoPE: pair j of the first rot = int(m * rope_fraction) dims of each query and key head turns by t * f_j at
    position t, f_j = theta^(-2j/rot) (llama3: rescaled); values never turn. Scores then depend on t - s only.

    No parameters and no max_len. FLOPs: ROTARY_PER_ENTRY per rotated entry of Q and K (H heads each), per block.
    """

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        s = self.spec
        heads = s.H + s.kv_heads  # the queries' H heads and the keys' G (never the values)
        return {"rotary positions": s.N * ROTARY_PER_ENTRY * heads * s.rotated_dims * b * n}

    def breaks_equivariance(self) -> str | None:
        return "rotary positions"  # absolute positions t enter each rotation, so T(XP) != T(X)P in general

    def check_runnable(self) -> None:
        """Refuse a rope scaling tfm counts and plans but cannot run yet (its parameters are not read)."""
        if self.spec.rope_scaling in NOT_RUN:
            raise SpecError(
                f"{self.spec.label}: rope_scaling '{self.spec.rope_scaling}' is counted and planned, but tfm's "
                "forward pass does not implement it yet (run, verify, attention and bench refuse it)"
            )

    def frequencies(self) -> np.ndarray:
        """The rot/2 frequencies f_j, in float64."""
        self.check_runnable()
        s = self.spec
        freq = kernels.rope_frequencies(s.rotated_dims, s.rope_theta)
        if s.rope_scaling == "llama3":
            freq = kernels.llama3_frequencies(freq, s.rope_factor, s.rope_low_freq_factor, s.rope_high_freq_factor,
                                             s.rope_original_max_len)  # fmt: skip
        return freq

    def tables(self, start: int, n: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
        """cos and sin of the angles t * f_j for positions t = start .. start+n-1: each (rot/2, n), in `dtype`.

        The angles are computed in float64 and only then cast, so float32 models lose nothing to the angles.
        """
        angles = self.frequencies()[:, None] * np.arange(start, start + n, dtype=np.float64)[None, :]
        return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


class Relative(Component):
    """T5's relative position bias: a learned (rel_buckets, H) table; the score of query t and key s in head h gets
    table[bucket(s - t), h] added. Buckets: exact for small distances, logarithmic up to rel_max_distance, both
    signs apart when unmasked (an encoder), only s <= t with a causal mask. One table per stack, shared by its
    blocks. It depends on s - t only: relative, and it tells positions apart."""

    where = "input"

    def tensors(self, prefix: str) -> list[Tensor]:
        return [Tensor(prefix + "positional.rel_bias", (self.spec.rel_buckets, self.spec.H), "positional")]

    def terms(self) -> list[Term]:
        return [Term("buckets*H", self.spec.rel_buckets * self.spec.H, "model")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"relative position bias": self.spec.N * self.spec.H * pairs.count}  # one add per score

    def breaks_equivariance(self) -> str | None:
        return "relative position bias"


POSITIONALS = {"none": NoPositions, "sinusoidal": Sinusoidal, "learned": Learned, "rope": Rotary,
               "relative": Relative}  # fmt: skip
