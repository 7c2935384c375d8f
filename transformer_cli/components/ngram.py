"""Hashed n-gram inputs (Qwen4-Exp's PLE; spec keys ngram_*): a block listed in ngram_blocks adds to its residual
streams, before anything else, a term made from the token ids of each column and the g - 1 before it (g =
ngram_size, a context never reaching back past an earlier end-of-sequence id, ngram_eos, nor before the first token:
eos in their place). For each order o = 2..g and each of its h = ngram_heads heads, the ids hash to a row of one table:

    x_o = XOR_{j < o} tok_{t-j} * mult_j,   row = x_o mod size_head + offset_head

(mult_j odd numbers from splitmix64 of ngram_seed, size_head the head's prime >= ngram_vocab, each block's own
primes), and the G = (g - 1) h rows, of ngram_dim / G each, make one vector e of ngram_dim. Then, per stream k of n
(the gated hyper-connections' streams S_k, d rows each, norms of gains 1 + w per stream):

    gate_k = (RMSNorm(W_key e)_k . RMSNorm(S)_k) / sqrt(d),  gate_k = sign(gate_k) sqrt(max(|gate_k|, 1e-6))
    v_k    = sigmoid(gate_k) W_value e                                                   (d)
    S_k   += v_k + silu(conv(RMSNorm(v)_k))      (a depthwise causal convolution of ngram_kernel taps, dilation g)

A decoder keeps the last g - 1 ids and the convolution's last (taps - 1) g normed columns (NGramCache)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import kernels
from .base import Component, Pairs, Tensor, Term
from .norm import RMS_PER_ENTRY

MASK64 = (1 << 64) - 1
INTS = ("multipliers", "sizes", "offsets")  # (the table's numbers: integers, up to 2^63)
GAMMA, M1, M2, PRIME = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 10007


def _splitmix64(value: int) -> int:
    value = (value + GAMMA) & MASK64
    value = ((value ^ (value >> 30)) * M1) & MASK64
    value = ((value ^ (value >> 27)) * M2) & MASK64
    return (value ^ (value >> 31)) & MASK64


def multipliers(vocab: int, size: int, table: int, seed: int) -> np.ndarray:
    """Each of the g positions' odd multiplier, for table `table` (a block's place among the n-gram blocks)."""
    half = max(1, ((1 << 63) - 1) // max(vocab, 1) // 2)
    base = seed + PRIME * table
    return np.array([2 * (_splitmix64((base + GAMMA * (j + 1)) & MASK64) % half) + 1 for j in range(size)])


def _prime(value: int) -> bool:
    return value >= 2 and (value == 2 or value % 2 == 1) and all(value % p for p in range(3, math.isqrt(value) + 1, 2))


def head_sizes(spec, table: int) -> list[int]:
    """The G heads' table sizes of table `table`: the primes after ngram_vocab - 1, G of them for each table before."""
    heads = ((spec.ngram_size or 3) - 1) * (spec.ngram_heads or 1)
    found: list[int] = []
    value = (spec.ngram_vocab or 2) - 1
    while len(found) < (table + 1) * heads:
        value += 1
        if _prime(value):
            found.append(value)
    return found[table * heads :]


def table_rows(spec, table: int) -> int:
    """The table's rows: the heads' sizes' sum, rounded up to a multiple of ngram_vocab_multiple."""
    multiple = spec.ngram_vocab_multiple
    return -(-sum(head_sizes(spec, table)) // multiple) * multiple


class NGramInputs(Component):
    """A block's part: its table (rows, ngram_dim / G), W_key (n d, P), W_value (d, P), three norms' gains (n d), the
    convolution's kernel (n d, 1, taps), and the table's multipliers, sizes and offsets (integer buffers)."""

    @property
    def sizes(self) -> tuple[int, int, int, int, int]:
        """n (streams), d, P (ngram_dim), G (heads), taps."""
        s = self.spec
        return (
            s.hc_streams or 1,
            s.d,
            s.ngram_dim or s.d,
            ((s.ngram_size or 3) - 1) * (s.ngram_heads or 1),
            s.ngram_kernel,
        )

    def tensors(self, prefix: str) -> list[Tensor]:
        n, d, P, G, taps = self.sizes
        p, kind = prefix + "ngram.", "n-gram inputs"
        out = [Tensor(p + "table", (table_rows(self.spec, self.spec.ngram_table or 0), P // G), kind)]
        out += [Tensor(p + "W_key", (n * d, P), kind), Tensor(p + "W_value", (d, P), kind)]
        out += [Tensor(p + f"{x}_norm.gamma", (n * d,), kind) for x in ("key", "query", "conv")]
        out += [Tensor(p + "kernel", (n * d, 1, taps), kind)]
        sizes = {"multipliers": self.spec.ngram_size or 3, "sizes": G, "offsets": G}
        return out + [Tensor(p + name, (k,), kind, buffer=True) for name, k in sizes.items()]

    def terms(self) -> list[Term]:
        n, d, P, G, taps = self.sizes
        rows = table_rows(self.spec, self.spec.ngram_table or 0)
        return [
            Term(
                "rows P/G + n d P + d P + 3 n d + n d taps (n-grams)",
                rows * (P // G) + n * d * (P + 3 + taps) + d * P,
                "block",
            )
        ]

    def flops(self, b: int, n_tokens: int, pairs: Pairs) -> dict[str, int]:
        n, d, P, _, taps = self.sizes
        per = 2 * (n * d + d) * P + 3 * RMS_PER_ENTRY * n * d + 2 * n * d + 4 * n + n * d + 2 * n * d * taps + 5 * n * d
        return {"n-gram inputs": self.spec.N * per * b * n_tokens}

    def state_bytes(self, size: int) -> int:
        """The last (taps - 1) g normed columns (n d each) and the last g - 1 ids (int64: 8 bytes each)."""
        n, d, _, _, taps = self.sizes
        g = self.spec.ngram_size or 3
        return n * d * (taps - 1) * g * size + (g - 1) * 8


@dataclass
class NGramWeights:
    table: np.ndarray
    W_key: np.ndarray
    W_value: np.ndarray
    gains: tuple[np.ndarray, np.ndarray, np.ndarray]  # key, query, conv: (n d, 1, 1) each
    kernel: np.ndarray  # (n d, taps)
    mult: np.ndarray  # (g,) int64
    sizes: np.ndarray  # (G,) int64
    offsets: np.ndarray


@dataclass
class NGramCache:
    """A decoder's state of one n-gram block: the last g - 1 ids (b, g - 1) and normed columns (n d, b, span)."""

    ids: np.ndarray
    columns: np.ndarray


class NGramState:
    """The model's n-gram blocks ready for the pass: each one's weights, by block."""

    def __init__(self, spec, layers: list, get, weights) -> None:
        self.spec = spec
        self.parts = {i: NGramInputs(layer) for i, layer in enumerate(layers) if layer.ngram_table is not None}
        plus = 1.0 if spec.norm_plus_one else 0.0

        def prepared(i: int) -> NGramWeights:
            g = lambda name: get(f"blocks.{i}.ngram.{name}")  # noqa: E731
            gains = tuple((plus + g(f"{x}_norm.gamma")).reshape(-1, 1, 1) for x in ("key", "query", "conv"))
            ints = (np.asarray(weights[f"blocks.{i}.ngram.{x}"]).astype(np.int64) for x in INTS)  # (exact: not get's)
            return NGramWeights(g("table"), g("W_key"), g("W_value"), gains, g("kernel")[:, 0], *ints)

        self.weights = {i: prepared(i) for i in self.parts}

    def add(self, i: int, Z: np.ndarray, tokens: np.ndarray, holder) -> np.ndarray:
        """Block i's streams Z (n d, b, t) with its n-gram term added (a new array), the columns' ids `tokens` (b,
        t); `holder`: the block's decoding cache, which keeps the n-gram state beside its own (None: a pass alone)."""
        if i not in self.parts:
            return Z
        w, (n, d, _, _, taps) = self.weights[i], self.parts[i].sizes
        g, eos = self.spec.ngram_size or 3, self.spec.ngram_eos or 0
        b, t = tokens.shape
        state = None if holder is None else getattr(holder, "ngram", None)
        before = state.ids if state is not None else np.full((b, g - 1), eos, dtype=np.int64)
        rows = ngram_rows(np.concatenate([before, tokens], axis=1), g, w.mult, w.sizes, w.offsets, eos)[:, g - 1 :]
        e = np.asarray(w.table[rows.reshape(-1)], Z.dtype).reshape(b, t, -1).transpose(2, 0, 1)  # (P, b, t)
        key = grouped_norm(kernels.linear(w.W_key, e), w.gains[0], n, self.spec.norm_eps)
        query = grouped_norm(Z, w.gains[1], n, self.spec.norm_eps)
        gate = np.einsum("kdbt,kdbt->kbt", key.reshape(n, d, b, t), query.reshape(n, d, b, t)) * d**-0.5
        gate = np.sign(gate) * np.sqrt(np.maximum(np.abs(gate), 1e-6))
        value = (1.0 / (1.0 + np.exp(-gate)))[:, None] * kernels.linear(w.W_value, e)[None]  # (n, d, b, t)
        value = value.reshape(n * d, b, t)
        normed = grouped_norm(value, w.gains[2], n, self.spec.norm_eps)
        span = (taps - 1) * g
        earlier = state.columns if state is not None else np.zeros((n * d, b, span), Z.dtype)
        history = np.concatenate([earlier, normed], axis=-1)  # (n d, b, span + t)
        conv = sum(w.kernel[:, j, None, None] * history[..., j * g : j * g + t] for j in range(taps))
        if holder is not None and holder.keep:  # (a stale step's column used, not kept)
            holder.ngram = NGramCache(np.concatenate([before, tokens], 1)[:, -(g - 1) :], history[..., -span:].copy())
        return Z + value + conv * (1.0 / (1.0 + np.exp(-conv)))


def grouped_norm(X: np.ndarray, gain: np.ndarray, n: int, eps: float) -> np.ndarray:
    """Each of the n groups of rows of X (n d, b, t) RMS-normed on its own, times `gain` (n d, 1, 1)."""
    groups = X.reshape(n, -1, *X.shape[1:])
    square = np.einsum("kd...,kd...->k...", groups, groups) * (1.0 / groups.shape[1])
    return (groups / np.sqrt(square[:, None] + eps)).reshape(X.shape) * gain


def ngram_rows(
    history: np.ndarray, g: int, mult: np.ndarray, sizes: np.ndarray, offsets: np.ndarray, eos: int
) -> np.ndarray:
    """The table's rows (b, L, G) of every column of the ids `history` (b, L): head (o - 2) h + i hashes the o ids
    up to the column (each id before the column's segment, the ids after the last eos before it, made eos)."""
    b, L = history.shape
    positions = np.arange(L)
    last = np.maximum.accumulate(np.where(history == eos, positions, -1), axis=1)
    start = np.concatenate([np.full((b, 1), -1), last[:, :-1]], axis=1) + 1  # (each column's segment's first)
    shifted = []
    for k in range(g):
        source = positions - k
        valid = (positions - start >= k) & (source >= 0)
        shifted.append(np.where(valid, history[:, np.maximum(source, 0)], eos))
    heads = len(sizes) // (g - 1)
    out = []
    for order in range(2, g + 1):
        mixed = shifted[0] * mult[0]
        for j in range(1, order):
            mixed = np.bitwise_xor(mixed, shifted[j] * mult[j])
        part = slice((order - 2) * heads, (order - 1) * heads)
        out.append(mixed[..., None] % sizes[part] + offsets[part])
    return np.concatenate(out, axis=-1)


def buffer_values(spec, block_spec, name: str) -> np.ndarray:
    """An n-gram block's integer buffer as its table makes it (seeded weights): its multipliers, heads' sizes or
    offsets."""
    table = block_spec.ngram_table or 0
    if name.endswith("multipliers"):
        return multipliers(spec.V or 1, spec.ngram_size, table, spec.ngram_seed)
    sizes = np.array(head_sizes(spec, table))
    return sizes if name.endswith("sizes") else np.concatenate([[0], np.cumsum(sizes)[:-1]])


def ngram_parts(spec) -> list[Component]:
    """A block's n-gram inputs (none but in ngram_blocks')."""
    return [NGramInputs(spec)] if spec.ngram_table is not None else []


__all__ = ["NGramInputs", "NGramState", "buffer_values", "head_sizes", "multipliers", "ngram_parts", "table_rows"]
