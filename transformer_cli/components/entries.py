"""DeepSeek-V4's compressed entries (compressed.py's): each made from a window of `rate` tokens, the values W_KV' x
and gates W_gate x + B_j of its slots (B the slots' learned bias), per entry

    E = RMSNorm(sum_j softmax_j(gate_j) value_j)

turned by the rotary angles of its window's first position. With `overlap` (CSA) the values and gates are 2 width
rows: an entry's first `rate` slots are the window before's first halves (none for the first window), its last the
window's own second halves. A pass from empty makes the entries of its complete windows at once; a decoder keeps
the tokens of the window not yet complete and, with overlap, the last complete window's first halves (PoolState),
and makes an entry when a step completes its window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import kernels


@dataclass
class Pooler:
    """One series of entries as `prepare` lays it out: [W_KV'; W_gate] (2 rows, d), the slots' bias (rate, rows),
    the norm's gain (width, 1, 1)."""

    W: np.ndarray
    bias: np.ndarray
    gain: np.ndarray


@dataclass
class PoolState:
    """A decoder's state of one series (b sequences): the tokens of the window not yet complete (values and gates,
    the bias added), the first halves of the last complete window's (overlap), the entries."""

    kv: np.ndarray  # (rows, b, rate)
    gate: np.ndarray
    entries: np.ndarray  # (width, b, slots)
    previous: tuple[np.ndarray, np.ndarray] | None = None  # (rows / 2, b, rate) each
    pending: int = 0
    count: int = 0

    @classmethod
    def made(cls, rows: int, width: int, b: int, rate: int, n: int, dtype: np.dtype) -> PoolState:
        """An empty state for b sequences of at most n tokens."""
        return cls(
            np.empty((rows, b, rate), dtype), np.empty((rows, b, rate), dtype), np.empty((width, b, n // rate), dtype)
        )


@dataclass(frozen=True)
class Series:
    """How a block makes one series of entries: every `rate` tokens, overlapping or not, normed with `eps`, the last
    `rotated` entries of each turned."""

    rate: int
    overlap: bool
    eps: float
    rotated: int

    def read(
        self, rotary: Any, p: Pooler, X: np.ndarray, start: int, state: PoolState | None, keep: bool
    ) -> np.ndarray:
        """The entries (width, b, T) a pass of the columns X (d, b, n) at positions start.. reads: those of its
        complete windows (a pass from empty, which fills an empty `state`), or, at a step, the state's after the
        step's column joins its window (a stale step's own entry used, not kept)."""
        raw = kernels.linear(p.W, X)  # (2 rows, b, n): values, then gates
        rows = raw.shape[0] // 2
        if state is not None and X.shape[-1] == 1:
            return self.step(rotary, p, raw[:rows], raw[rows:], state, keep)
        width, rate, (_, b, n) = p.gain.shape[0], self.rate, X.shape
        T = n // rate
        kv, gate = (a[..., : T * rate].reshape(rows, b, T, rate) for a in (raw[:rows], raw[rows:]))
        gate = gate + p.bias.T[:, None, None, :]
        previous = None
        if self.overlap:  # (window w's first slots: window w - 1's first halves, none before the first)
            previous = np.zeros((width, b, T, rate), kv.dtype), np.full((width, b, T, rate), -np.inf, kv.dtype)
            previous[0][:, :, 1:], previous[1][:, :, 1:] = kv[:width, :, :-1], gate[:width, :, :-1]
        entries = self.pool(rotary, p, kv, gate, previous, start + np.arange(T) * rate)
        if state is not None:  # (a prefill: the entries, the tokens past them, the last complete window's halves)
            left = n - T * rate
            state.entries[..., :T], state.count, state.pending = entries, T, left
            state.kv[..., :left] = raw[:rows, :, T * rate :]
            state.gate[..., :left] = raw[rows:, :, T * rate :] + p.bias.T[:, None, :left]
            if self.overlap and T:
                state.previous = kv[:width, :, -1].copy(), gate[:width, :, -1].copy()
        return entries

    def step(
        self, rotary: Any, p: Pooler, kv: np.ndarray, gate: np.ndarray, state: PoolState, keep: bool
    ) -> np.ndarray:
        """A step's column (rows, b, 1) joins its window; a window it completes makes an entry."""
        width, at, b = p.gain.shape[0], state.pending, kv.shape[1]
        state.kv[..., at], state.gate[..., at] = kv[..., 0], gate[..., 0] + p.bias[at][:, None]
        if at + 1 < self.rate:
            state.pending += keep
            return state.entries[..., : state.count]
        previous = None
        if self.overlap:
            empty = np.zeros((width, b, self.rate), kv.dtype), np.full((width, b, self.rate), -np.inf, kv.dtype)
            previous = tuple(a[:, :, None] for a in state.previous or empty)
        window = state.kv[:, :, None], state.gate[:, :, None]  # (rows, b, 1, rate)
        entry = self.pool(rotary, p, *window, previous, np.array([state.count * self.rate]))  # type: ignore[arg-type]
        if not keep:
            return np.concatenate([state.entries[..., : state.count], entry], axis=-1)
        state.entries[..., state.count : state.count + 1] = entry
        if self.overlap:
            state.previous = state.kv[:width].copy(), state.gate[:width].copy()
        state.count, state.pending = state.count + 1, 0
        return state.entries[..., : state.count]

    def pool(
        self,
        rotary: Any,
        p: Pooler,
        kv: np.ndarray,
        gate: np.ndarray,
        previous: tuple[np.ndarray, np.ndarray] | None,
        positions: np.ndarray,
    ) -> np.ndarray:
        """Windows' entries (width, b, T) from their tokens' values and gates (rows, b, T, rate), softmax-weighted
        per entry over their slots (the window before's first halves too, `previous`), normed, turned at their
        first positions."""
        width = p.gain.shape[0]
        if previous is not None:
            kv = np.concatenate([previous[0], kv[width:]], axis=-1)
            gate = np.concatenate([previous[1], gate[width:]], axis=-1)
        weights = np.exp(gate - gate.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        pooled = kernels.rms_norm((weights * kv).sum(axis=-1), p.gain, self.eps)  # (width, b, T)
        turn(rotary, pooled.transpose(1, 0, 2)[:, width - self.rotated :], positions)
        return pooled


def turn(rotary: Any, X: np.ndarray, positions: np.ndarray, sign: float = 1.0) -> None:
    """X's columns (..., r, k) turned in place by the rotary angles of `positions` (k), interleaved pairs; sign -1:
    turned back."""
    if not X.shape[-2] or not X.shape[-1]:
        return
    freq = rotary.frequencies(int(positions.max()) + 1)
    angles = freq[:, None] * positions[None, :].astype(np.float64)
    factor = rotary.attention_factor
    cos, sin = (factor * np.cos(angles)).astype(X.dtype), (sign * factor * np.sin(angles)).astype(X.dtype)
    kernels.rotate_(X, cos, sin, "interleaved")


__all__ = ["PoolState", "Pooler", "Series", "turn"]
