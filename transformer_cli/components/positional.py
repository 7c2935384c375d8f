"""Positions: encodings added to X before block 1 (sinusoidal, learned positional.P), rotary positions (RoPE),
which turn each head's queries and keys by angles proportional to their positions in every block, or a bias
on each score by the key's distance (T5's relative positions).

Each kind runs itself in the forward pass through three hooks, neutral by default: `encodings` (added to the
input columns), `rotate` (queries and keys, in place) and `bias` (on the scores of a chunk of queries and keys).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import kernels
from ..spec.choices import POSITIONALS
from ..spec.rope_scaling import ROPE_SCALINGS, Scaling
from .base import Component, Pairs, Tensor, Term

ROTARY_PER_ENTRY = 3  # x cos - y sin: two multiplies and an add per rotated entry (the sign is the add's)


class Positions(Component):
    """What a position scheme does in the forward pass; each hook is a no-op unless the kind has it."""

    # whether a query's position moved alone (its keys' kept) changes its weights: not with ALiBi, whose bias then
    # moves every key's score of that query alike, which the softmax cannot see
    query_position_matters = True

    def load(self, get: Callable[[str], np.ndarray], dtype: np.dtype) -> None:
        """Read its tensors (`get(name)` in the pass's dtype) and get ready to run in `dtype`."""
        self.dtype = np.dtype(dtype)

    def encodings(self, start: int, n: int) -> np.ndarray | None:
        """The (d, n) encodings added to the columns at positions start .. start+n-1, or None."""
        return None

    def rotate(self, Q: np.ndarray, K: np.ndarray, start: int, key_start: int) -> None:
        """Turn Q's columns (b, H, m, n_q), at positions start.., and K's (b, G, m, n_k), at key_start.., in place."""

    def bias(self, first_query: int, first_key: int) -> kernels.Bias | None:
        """The bias on the scores of queries from first_query and keys from first_key (kernels.attend's), or None."""
        return None

    def content_bias(self, attention, w, Q: np.ndarray, K: np.ndarray, first: int, first_key: int):
        """A bias that depends on the block's queries and keys too (DeBERTa's, components/disentangled.py):
        kernels.attend's `content`, or None."""
        return None

    def saved_bytes(self, n: int, s: int, frozen: bool = False) -> int:
        """Bytes a stack's training pass keeps once for its positions over n tokens in s-byte elements (none), its
        tables frozen (LoRA) or not."""
        return 0


@POSITIONALS.register("none")
class NoPositions(Positions):
    where = "input"

    def rotate(self, Q: np.ndarray, K: np.ndarray, start: int, key_start: int) -> None:
        """Nothing turns; with nope_query_beta (Llama 4's temperature), each query times its position's scale."""
        if self.spec.nope_query_beta is not None:
            t = np.arange(start, start + Q.shape[-1])
            scale = 1.0 + self.spec.nope_query_beta * np.log1p((t + 1) // (self.spec.nope_query_len or 1))
            Q *= scale.astype(Q.dtype)

    def shift_dependent(self, n: int, shift: int) -> str | None:
        L = self.spec.nope_query_len
        if self.spec.nope_query_beta is None or L is None or n + shift < L:
            return None
        return f"nope_query_beta: the queries from position {L - 1} on are scaled (positions up to {n + shift - 1})"

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"positions": 0}


@POSITIONALS.register("sinusoidal")
class Sinusoidal(Positions):
    """PE[2i, t] = sin(t / 10000^(2i/d)), PE[2i+1, t] = cos(...): no parameters."""

    where = "input"

    def encodings(self, start: int, n: int) -> np.ndarray | None:
        return kernels.sinusoidal_positions(self.spec.input_width, start + n)[:, start:].astype(self.dtype)

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"positions": self.spec.input_width * b * n}

    def breaks_equivariance(self) -> str | None:
        return "sinusoidal positional encoding"

    def absolute_positions(self) -> str | None:
        return self.breaks_equivariance()  # added to X at absolute positions (learned too, below)


@POSITIONALS.register("learned")
class Learned(Sinusoidal):
    """A learned (d, max_len) matrix P, its first n columns added to X; with position_offset, (d, offset +
    max_len) with position t in column offset + t (BART's table keeps 2 unused columns first)."""

    @property
    def columns(self) -> int:
        return (self.spec.max_len or 0) + (self.spec.position_offset or 0)

    def tensors(self, prefix: str) -> list[Tensor]:
        return [Tensor(prefix + "positional.P", (self.spec.input_width, self.columns), "positional")]

    def load(self, get: Callable[[str], np.ndarray], dtype: np.dtype) -> None:
        super().load(get, dtype)
        self.P = get("positional.P")  # (d, offset + max_len)

    def encodings(self, start: int, n: int) -> np.ndarray | None:
        offset = start + (self.spec.position_offset or 0)  # BART's table keeps its first columns unused
        return self.P[:, offset : offset + n]

    def terms(self) -> list[Term]:
        width = "d_e" if self.spec.embed_project else "d"
        symbols = f"{width}*(max_len + offset)" if self.spec.position_offset else f"{width}*max_len"
        return [Term(symbols, self.spec.input_width * self.columns, "model")]

    def breaks_equivariance(self) -> str | None:
        return "learned positional encoding"


@POSITIONALS.register("sinusoidal_fairseq")
class FairseqSinusoidal(Sinusoidal):
    """fairseq's sinusoids (M2M-100, NLLB): sin in the first d/2 rows, cos in the next, f_k = 10000^(-k/(d/2 - 1));
    with position_offset, position t reads column t + offset (M2M-100's padding index + 1). No parameters."""

    def encodings(self, start: int, n: int) -> np.ndarray | None:
        first = start + (self.spec.position_offset or 0)
        return kernels.fairseq_positions(self.spec.input_width, first + n)[:, first:].astype(self.dtype)

    def breaks_equivariance(self) -> str | None:
        return "sinusoidal positional encoding (fairseq's)"


@POSITIONALS.register("rope")
class Rotary(Positions):
    """RoPE: pair j of the first rot = int(m * rope_fraction) dims of each query and key head turns by t * f_j at
    position t, f_j = theta^(-2j/rot) (llama3: rescaled); values never turn. Scores then depend on t - s only.

    No parameters and no max_len. FLOPs: ROTARY_PER_ENTRY per rotated entry of Q and K (H heads each), per block.
    """

    def saved_bytes(self, n: int, s: int, frozen: bool = False) -> int:
        """The cosines and sines (n, m) the rotations keep."""
        return 2 * n * self.spec.m * s

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        s = self.spec
        heads = s.H + s.kv_heads  # the queries' H heads and the keys' G (never the values)
        return {"rotary positions": s.N * ROTARY_PER_ENTRY * heads * s.rotated_dims * b * n}

    def breaks_equivariance(self) -> str | None:
        return "rotary positions"  # absolute positions t enter each rotation, so T(XP) != T(X)P in general

    def relative_positions(self) -> str | None:
        if self.spec.rope_query_beta is not None:  # (the queries' scale depends on t itself, from L on)
            return (
                f"rotary scores depend on t - s only, and the queries' scale is 1 before t = {self.spec.rope_query_len}"
            )
        return "rotary scores depend on t - s only"

    def shift_dependent(self, n: int, shift: int) -> str | None:
        """Llama 4's query scale: 1 before position L, so a shift matters once the pass reaches L."""
        L = self.spec.rope_query_len
        if L is None or n + shift <= L:
            return None
        return f"rope_query_beta: the queries from position {L} on are scaled (positions up to {n + shift - 1})"

    @property
    def scaling(self) -> Scaling:
        """The spec's rope scaling type (spec/rope_scaling.py)."""
        return ROPE_SCALINGS[self.spec.rope_scaling]

    alpha: np.ndarray | None = None  # (rot/2,): rope_learned's exponents, in float64

    def tensors(self, prefix: str) -> list[Tensor]:
        if not self.spec.rope_learned:
            return []
        return [Tensor(prefix + "positional.alpha", (self.spec.rotated_dims // 2,), "positional")]

    def terms(self) -> list[Term]:
        return [Term("rot/2", self.spec.rotated_dims // 2, "model")] if self.spec.rope_learned else []

    def frequencies(self, length: int = 0) -> np.ndarray:
        """The rot/2 frequencies f_j of a pass whose last position is length - 1, in float64 (only dynamic and
        longrope depend on the length, and only past their original context); with rope_learned, times
        exp(alpha_j)."""
        freq = self.scaling.frequencies(self.spec, length)
        return freq if self.alpha is None else freq * np.exp(self.alpha)

    def length_dependent(self, first: int, second: int) -> str | None:
        """Why passes of lengths `first` and `second` turn the same position by different angles, or None."""
        if not self.scaling.length_dependent:
            return None
        if np.array_equal(self.frequencies(first), self.frequencies(second)):
            return None
        L = self.spec.rope_original_max_len
        return (
            f"rope_scaling {self.spec.rope_scaling}: the frequencies depend on the pass's length past L = {L} "
            f"(lengths {first} and {second} differ)"
        )

    @property
    def attention_factor(self) -> float:
        """What cos and sin are multiplied by: YaRN's or LongRoPE's attention factor, else 1."""
        return self.scaling.attention_factor(self.spec)

    def tables(self, start: int, n: int, dtype: np.dtype, length: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """cos and sin of the angles t * f_j for positions t = start .. start+n-1 of a pass `length` long (default
        start + n): each (rot/2, n), in `dtype`.

        The angles are computed in float64 and only then cast, so float32 models lose nothing to the angles.
        """
        freq = self.frequencies(start + n if length is None else length)
        angles = freq[:, None] * np.arange(start, start + n, dtype=np.float64)[None, :]
        factor = self.attention_factor
        if factor != 1.0:  # YaRN, LongRoPE: both scaled in float64, then cast
            return (factor * np.cos(angles)).astype(dtype), (factor * np.sin(angles)).astype(dtype)
        return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)

    def load(self, get: Callable[[str], np.ndarray], dtype: np.dtype) -> None:
        super().load(get, dtype)
        self._tables: tuple = (None, None, None)  # (start, n, length), cos, sin: the last tables made
        if self.spec.rope_learned:
            self.alpha = np.asarray(get("positional.alpha"), dtype=np.float64)

    def rotate(self, Q: np.ndarray, K: np.ndarray, start: int, key_start: int) -> None:
        """The pass is as long as its last query or key (dynamic and longrope choose their frequencies by it).
        With rope_query_beta, each query then times its position's scale (Llama 4's, query_scales)."""
        length = max(start + Q.shape[-1], key_start + K.shape[-1])
        for X, first in ((Q, start), (K, key_start)):
            kernels.rotate_(X, *self._rotary_tables(first, X.shape[-1], length), self.spec.rope_pairing)
        if self.spec.rope_query_beta is not None:
            Q *= self.query_scales(start, Q.shape[-1]).astype(Q.dtype)

    def turn(self, X: np.ndarray, start: int, length: int, pairing: str) -> None:
        """X's columns turned in place as positions start.. of a pass `length` long, paired as `pairing` says (a
        lightning indexer's own queries and keys: components/indexed.py)."""
        kernels.rotate_(X, *self._rotary_tables(start, X.shape[-1], length), pairing)

    def query_scales(self, start: int, n: int) -> np.ndarray:
        """Llama 4's attention scaling of the queries at positions start..start+n-1: 1 + beta ln(1 + floor(t / L))."""
        t = np.arange(start, start + n)
        beta, every = self.spec.rope_query_beta or 0.0, self.spec.rope_query_len or 1
        return 1.0 + beta * np.log1p(t // every)

    def _rotary_tables(self, start: int, n: int, length: int) -> tuple[np.ndarray, np.ndarray]:
        """cos, sin for positions start .. start+n-1, kept for the next call (every block asks for the same)."""
        key, cos, sin = self._tables
        if key != (start, n, length):
            cos, sin = self.tables(start, n, self.dtype, length)
            self._tables = ((start, n, length), cos, sin)  # one assignment: threads see old or new, never a mix
        return cos, sin


@POSITIONALS.register("relative")
class Relative(Positions):
    """T5's relative position bias: a learned (rel_buckets, H) table; the score of query t and key s in head h gets
    table[bucket(s - t), h] added. Buckets: exact for small distances, logarithmic up to rel_max_distance, both
    signs apart when unmasked (an encoder), only s <= t with a causal mask. One table per stack, shared by its
    blocks (with rel_per_block, each block's own: its attention holds it, UMT5). It depends on s - t only:
    relative, and it tells positions apart."""

    where = "input"

    def tensors(self, prefix: str) -> list[Tensor]:
        if self.spec.rel_per_block:  # (block tensors: the attention's)
            return []
        return [Tensor(prefix + "positional.rel_bias", (self.spec.rel_buckets, self.spec.H), "positional")]

    def terms(self) -> list[Term]:
        if self.spec.rel_per_block:
            return []
        return [Term("buckets*H", self.spec.rel_buckets * self.spec.H, "model")]

    def saved_bytes(self, n: int, s: int, frozen: bool = False) -> int:
        """The (n, n) int64 bucket ids the lookup in the bias table keeps (for the table's gradient: none frozen)."""
        return 0 if frozen else 8 * n * n

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"relative position bias": self.spec.N * self.spec.H * pairs.count}  # one add per score

    def breaks_equivariance(self) -> str | None:
        return "relative position bias"

    def relative_positions(self) -> str | None:
        return "the relative position bias depends on s - t only"

    def load(self, get: Callable[[str], np.ndarray], dtype: np.dtype) -> None:
        super().load(get, dtype)
        self.table = get("positional.rel_bias")  # (rel_buckets, H)

    def bias(self, first_query: int, first_key: int) -> kernels.Bias | None:
        return lambda q0, queries, k0, keys: self.relative_bias(first_query + q0, queries, first_key + k0, keys)

    def relative_bias(self, first_query: int, queries: int, first_key: int, keys: int) -> np.ndarray:
        """The bias of those queries and keys: (H, queries, keys), table[bucket(s - t), h]."""
        lags = _lags(first_query, queries, first_key, keys)
        s = self.spec
        buckets = kernels.relative_buckets(lags, s.rel_buckets, s.rel_max_distance, bidirectional=s.mask != "causal")
        return np.ascontiguousarray(self.table[buckets].transpose(2, 0, 1))


@POSITIONALS.register("learned_relative")
class LearnedRelative(Learned, Relative):
    """MPNet's: learned positions P added to the input and T5's relative bias (one table, shared by the blocks) on
    every score. Positions are absolute then, not relative."""

    def tensors(self, prefix: str) -> list[Tensor]:
        return Learned.tensors(self, prefix) + Relative.tensors(self, prefix)

    def terms(self) -> list[Term]:
        return Learned.terms(self) + Relative.terms(self)

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return Learned.flops(self, b, n, pairs) | Relative.flops(self, b, n, pairs)

    def relative_positions(self) -> str | None:
        return None  # (P tells absolute positions apart)


@POSITIONALS.register("alibi")
class ALiBi(Positions):
    """ALiBi (BLOOM): head h's score of query t and key s gets slope_h (s - t) added, slopes fixed by the number of
    heads (kernels.alibi_slopes), never scaled. No parameters; it depends on s - t only: relative, and it tells
    positions apart."""

    where = "input"
    query_position_matters = False

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"alibi position bias": self.spec.N * self.spec.H * pairs.count}  # one add per score

    def breaks_equivariance(self) -> str | None:
        return "ALiBi position bias"

    def relative_positions(self) -> str | None:
        return "the ALiBi bias depends on s - t only"

    def load(self, get: Callable[[str], np.ndarray], dtype: np.dtype) -> None:
        super().load(get, dtype)
        self.slopes = kernels.alibi_slopes(self.spec.H).astype(dtype)[:, None, None]  # (H, 1, 1)

    def bias(self, first_query: int, first_key: int) -> kernels.Bias | None:
        return lambda q0, queries, k0, keys: self.alibi_bias(first_query + q0, queries, first_key + k0, keys)

    def alibi_bias(self, first_query: int, queries: int, first_key: int, keys: int) -> np.ndarray:
        """The bias of those queries and keys: (H, queries, keys), slope_h (s - t)."""
        return self.slopes * _lags(first_query, queries, first_key, keys).astype(self.dtype)[None]


def _lags(first_query: int, queries: int, first_key: int, keys: int) -> np.ndarray:
    """s - t for the queries t = first_query.. and the keys s = first_key..: (queries, keys)."""
    return np.arange(first_key, first_key + keys)[None, :] - np.arange(first_query, first_query + queries)[:, None]


def block_positions(model: Positions, layer, i: int, get: Callable[[str], np.ndarray], dtype: np.dtype) -> Positions:
    """Block i's positions: the model's `model`, or its own where its rotary base, head size or rotated part differs
    (Gemma 3's local, Gemma 4's full layers) or it has none (a NoPE layer), its tables its own (UMT5's)."""
    spec = model.spec
    own = (layer.positional, layer.rope_theta, layer.rope_scaling, layer.m, layer.rotated_dims)
    if (
        own == (spec.positional, spec.rope_theta, spec.rope_scaling, spec.m, spec.rotated_dims)
        and not layer.rel_per_block
    ):
        return model
    positions = POSITIONALS[layer.positional](layer)
    positions.load(lambda name: get(f"blocks.{i}.{name}"), dtype)
    return positions
