"""DeepSeek-V4's attention (attention: shared_kv, compressed, compressed_sparse): one key head that is also the value
head, shared by every query head, each query seeing a sliding window of w tokens, and in the compressed kinds entries
pooled from windows of tokens too.

With q = q_rank, r = rope_m (the last r entries of every head turn, interleaved), g = o_groups, o = o_rank:
  queries  Q = RMS(W_QB RMSNorm(W_QA x)) per head without a gain (H heads of m)
  key      k = RMSNorm(W_KV x) (m), turned; the value is the same vector
  scores   scale K^T Q over the window's keys (and the entries), a sink logit per head (attn_sinks) in the softmax
  output   each head's output turned back by its query's position (-t), the heads in g groups each through its own
           W_OA (o rows), then W_OB (d, g o)
Entries (entries.py): `compressed` (HCA) pools every R = compress_heavy_rate tokens,

    E_w = RMSNorm(sum_j softmax_j(W_gate x_j + B_j) * W_KV' x_j)          (j over the window's R tokens)

turned at the window's first position w R, and a query at t sees every entry whose window ends at or before it.
`compressed_sparse` (CSA) pools 2R slots every R = compress_rate tokens: the window before's tokens through the first
halves of W_KV' and W_gate (2m rows each), the window's own through the second halves; a lightning indexer (its own
pooled keys of index_m, queries W_IQ l from the bottleneck l, head weights W_IW x / sqrt(H_I index_m)) chooses the
index_topk entries each query attends to. A decoder keeps the window's keys, the entries, the tokens of a window not
yet complete (and, for CSA, the first halves of the last complete one), as transformers' DeepSeek-V4 caches do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import kernels
from ..spec.choices import ATTENTIONS
from ..spec.definition import Spec
from ..spec.validate import bad_key
from .attention import SOFTMAX_PER_SCORE, MultiHeadAttention
from .base import GgmlCache, Pairs, Tensor, Term
from .entries import Pooler, PoolState, Series, turn
from .kv_cache import KVCache
from .norm import RMS_PER_ENTRY


@dataclass
class SharedKVWeights:
    W_QA: np.ndarray  # (q, d)
    q_gain: np.ndarray  # (q, 1, 1)
    W_QB: np.ndarray  # (H m, q)
    W_KV: np.ndarray  # (m, d)
    kv_gain: np.ndarray  # (m, 1, 1)
    sinks: np.ndarray | None  # (H,)
    W_OA: np.ndarray  # (g, o, H m / g)
    W_OB: np.ndarray  # (d, g o)
    pool: Pooler | None = None
    index: Pooler | None = None
    W_IQ: np.ndarray | None = None  # (H_I index_m, q)
    W_IW: np.ndarray | None = None  # (H_I, d)


@dataclass
class SharedKVCache(KVCache):
    """The window's keys (K and V one array) and each series' state: the entries', and the indexer's (CSA)."""

    pools: tuple[PoolState, ...] = ()


@ATTENTIONS.register("shared_kv")
class SharedKVAttention(MultiHeadAttention):
    def ggml_cache(self) -> GgmlCache | None:
        return None  # (llama.cpp's memory of this kind is not modelled)

    rate: int = 0  # tokens an entry pools (0: none)
    overlap = False  # (CSA: an entry pools its window and the one before)
    indexed = False

    @staticmethod
    def check_keys(spec: Spec, data: dict[str, Any], source: str) -> None:
        """The bottleneck, the output's groups, rotary positions on an even part, a causal window."""

        for key in ("q_rank", "o_groups", "o_rank", "window"):
            if getattr(spec, key) is None:
                raise bad_key(source, key, None, f"a positive integer with attention: {spec.attention}")
        if spec.H % (spec.o_groups or 1):
            raise bad_key(source, "o_groups", spec.o_groups, f"a divisor of H = {spec.H}")
        if spec.positional != "rope" or (spec.rope_m or 0) % 2 or (spec.rope_m or 0) > spec.m:
            raise bad_key(source, "rope_m", spec.rope_m, f"an even number up to m = {spec.m}, with positional rope")
        if spec.mask != "causal":
            raise bad_key(source, "mask", spec.mask, f"causal with attention: {spec.attention}")
        if "compressed_sparse" in {spec.attention, *(spec.mixer_layers or ())} and (spec.index_m or 0) < (
            spec.rope_m or 0
        ):
            raise bad_key(source, "index_m", spec.index_m, f"at least rope_m = {spec.rope_m} (its last entries turn)")

    @staticmethod
    def layer_changes(spec: Spec) -> dict[str, Any]:
        """A sliding block turns by the model's main base (rope_local_theta), unscaled; the compressed ones by the
        spec's own (DeepSeek-V4's compress_rope_theta, its YaRN)."""
        return {"rope_theta": spec.rope_local_theta, "rope_scaling": "none"} if spec.rope_local_theta else {}

    def normalised(self) -> str | None:
        return "queries and keys are normalised per head"

    @property
    def sizes(self) -> tuple[int, int, int, int, int, int]:
        """H, m, d, q (q_rank), g (o_groups), o (o_rank)."""
        s = self.spec
        return s.H, s.m, s.d, s.q_rank or 0, s.o_groups or 1, s.o_rank or 0

    def series(self) -> list[tuple[str, int, int]]:
        """Each series of entries: its name, its width and its rows (twice the width where entries overlap)."""
        out = [("pool", self.spec.m)] if self.rate else []
        out += [("index", self.spec.index_m or 0)] if self.indexed else []
        return [(name, width, width * (1 + self.overlap)) for name, width in out]

    def tensors(self, prefix: str) -> list[Tensor]:
        H, m, d, q, g, o = self.sizes
        p, kind = prefix + "attention.", "shared-key attention"
        out = [Tensor(p + "W_QA", (q, d), kind), Tensor(p + "q_a_norm.gamma", (q,), kind)]
        out += [Tensor(p + "W_QB", (H, m, q), kind), Tensor(p + "W_KV", (m, d), kind)]
        out += [Tensor(p + "kv_norm.gamma", (m,), kind)]
        out += [Tensor(p + "W_OA", (g, o, H * m // g), kind), Tensor(p + "W_OB", (d, g * o), kind)]
        out += [Tensor(p + "sinks", (H,), "attention sinks")] if self.spec.attn_sinks else []
        for name, width, rows in self.series():
            kind = "compressed entries" if name == "pool" else "lightning indexer"
            out += [Tensor(f"{p}{name}.W_KV", (rows, d), kind), Tensor(f"{p}{name}.W_gate", (rows, d), kind)]
            out += [Tensor(f"{p}{name}.ape", (self.rate, rows), kind), Tensor(f"{p}{name}.norm.gamma", (width,), kind)]
        if self.indexed:
            H_I, D_I = self.spec.index_heads or 0, self.spec.index_m or 0
            out += [Tensor(p + "index.W_Q", (H_I, D_I, q), "lightning indexer")]
            out += [Tensor(p + "index.W_W", (H_I, d), "lightning indexer")]
        return out

    def terms(self) -> list[Term]:
        H, m, d, q, g, o = self.sizes
        value = q * d + q + H * m * q + m * d + m + H * m * o + g * o * d + H * self.spec.attn_sinks
        sinks = " + H" if self.spec.attn_sinks else ""
        out = [Term(f"q d + q + H m q + m d + m + H m o + g o d{sinks}", value, "block", seed=True)]
        for name, width, rows in self.series():
            out.append(
                Term(f"2 {rows} d + {self.rate} {rows} + {width} ({name})", rows * (2 * d + self.rate) + width, "block")
            )
        if self.indexed:
            H_I, D_I = self.spec.index_heads or 0, self.spec.index_m or 0
            out.append(Term("index_heads index_m q + index_heads d", H_I * (D_I * q + d), "block"))
        return out

    # -- the pass -----------------------------------------------------------------------------------------------

    def prepare(self, get: Callable[[str], np.ndarray]) -> SharedKVWeights:  # type: ignore[override]
        H, m, d, q, g, o = self.sizes
        column = lambda name: get(name).reshape(-1, 1, 1)  # noqa: E731
        w = SharedKVWeights(
            get("attention.W_QA"),
            column("attention.q_a_norm.gamma"),
            get("attention.W_QB").reshape(H * m, q),
            get("attention.W_KV"),
            column("attention.kv_norm.gamma"),
            get("attention.sinks") if self.spec.attn_sinks else None,
            get("attention.W_OA"),
            get("attention.W_OB"),
        )
        for name, _, _ in self.series():
            p = f"attention.{name}."
            W = np.concatenate([get(p + "W_KV"), get(p + "W_gate")])
            setattr(w, name, Pooler(W, get(p + "ape"), column(p + "norm.gamma")))
        if self.indexed:
            w.W_IQ, w.W_IW = get("attention.index.W_Q").reshape(-1, q), get("attention.index.W_W")
        return w

    def mix(  # type: ignore[override]
        self,
        model: Any,
        i: int,
        w: SharedKVWeights,
        X: np.ndarray,
        start: int = 0,
        cache: SharedKVCache | None = None,
        weights_out: list | None = None,
        stop: Any = None,
        offset: int = 0,
        **options: Any,
    ) -> np.ndarray:
        """The sublayer without its residual, (d, b, n) -> (d, b, n), its columns at positions start.. (the queries
        at start + offset). A step (one column, a cache) reads the window's keys and every entry the cache holds."""
        H, m, _, _, _, _ = self.sizes
        _, b, n = X.shape
        rotary, eps, r = model.rotations[i], self.spec.norm_eps, self.spec.rotated_dims
        low = kernels.rms_norm(kernels.linear(w.W_QA, X), w.q_gain, eps)
        Q = kernels.linear(w.W_QB, low).reshape(H, m, b, n)
        Q = kernels.rms_norm(Q.transpose(1, 0, 2, 3), 1.0, eps).transpose(2, 1, 0, 3)  # (b, H, m, n)
        K = kernels.rms_norm(kernels.linear(w.W_KV, X), w.kv_gain, eps).transpose(1, 0, 2)[:, None]  # (b, 1, m, n)
        turn(rotary, Q[:, :, m - r :], np.arange(n) + start + offset)
        turn(rotary, K[:, :, m - r :], np.arange(n) + start)
        series = Series(self.rate, self.overlap, eps, r)
        states = (None,) * 2 if cache is None else cache.pools
        keep = cache is None or cache.keep
        pools = [
            series.read(rotary, getattr(w, name), X, start, states[k], keep)
            for k, (name, *_) in enumerate(self.series())
        ]
        caught: list | None = None if weights_out is None else []  # (the weights of the tokens' keys: below)
        how = kernels.Attend(self.spec.m**-0.5, sinks=w.sinks, stop=stop, weights_out=caught)
        step = cache is not None and n == 1  # (it reads the window's keys held and every entry complete by now)
        count = pools[0].shape[-1] if pools else 0
        select = None
        if self.indexed:
            select = self.selection(w, low, X, pools[1], start + offset, count, rotary, step)
        if step:
            keys, _ = cache.store(K, K)  # type: ignore[union-attr]
            held = keys.shape[-1]
            if select is not None:
                how = replace(how, content=lambda s, q0, c, k0, k: np.pad(select(s, q0, c), ((0, 0), (held, 0)))[None])
        else:
            if cache is not None:
                cache.fill(K, K)
            keys = K  # (each query its window's band, and the entries after the tokens' keys: the tail)
            how = replace(how, causal=True, window=self.spec.window, tail=count)
            if pools:
                how = replace(how, content=self.visible(count, select))
        if pools:
            keys = np.concatenate([keys, pools[0].transpose(1, 0, 2)[:, None]], axis=-1)
        heads = model.attend(Q, keys, keys, how)  # (H, m, b, n)
        if weights_out is not None and caught:  # (b, H, keys, n): the entries' weights left out, as a sink's are
            weights_out.append(caught[0][:, :, : keys.shape[-1] - count])
        turn(rotary, heads.transpose(2, 0, 1, 3)[:, :, m - r :], np.arange(n) + start + offset, sign=-1.0)
        return self.project(w, heads)

    def visible(self, count: int, select: Any) -> Callable[[int, int, int, int, int], np.ndarray]:
        """kernels.Attend's `content` for a pass's queries q0.. (c) over the band of its tokens' keys k0.. (k) and
        `count` entries after them: 0 at the tokens (their window kernels.attend's) and at the entries complete by
        each query's position (those the indexer chose, `select`), -inf at the others, (1, c, k + count)."""
        rate = self.rate or 1

        def content(i: int, q0: int, c: int, k0: int, k: int) -> np.ndarray:
            seen = np.arange(count)[None, :] < (np.arange(q0, q0 + c)[:, None] + 1) // rate
            entries = np.where(seen, 0.0, -np.inf)
            if select is not None:
                entries = entries + select(i, q0, c)
            return np.concatenate([np.zeros((c, k)), entries], axis=-1)[None]

        return content

    def project(self, w: SharedKVWeights, heads: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:  # type: ignore[override]
        """The heads (H, m, b, n) in g groups, each through its W_OA, then W_OB: -> (d, b, n)."""
        H, m, b, n = heads.shape
        g = w.W_OA.shape[0]
        grouped = np.matmul(w.W_OA, heads.reshape(g, H * m // g, b * n))  # (g, o, b n)
        return kernels.linear(w.W_OB, grouped.reshape(-1, b, n))

    def selection(
        self,
        w: SharedKVWeights,
        low: np.ndarray,
        X: np.ndarray,
        keys: np.ndarray,
        first: int,
        count: int,
        rotary: Any,
        step: bool,
    ) -> Callable[[int, int, int], np.ndarray]:
        """The indexer's choice: for sequence i's queries q0.. (c), 0 at the index_topk entries of highest index
        score among those each sees (all, at a step), -inf elsewhere, (c, count)."""
        H_I, D_I = self.spec.index_heads or 0, self.spec.index_m or 0
        _, b, n = X.shape
        assert w.W_IQ is not None and w.W_IW is not None
        queries = kernels.linear(w.W_IQ, low).reshape(H_I, D_I, b, n).transpose(2, 0, 1, 3)
        turn(rotary, queries[:, :, D_I - self.spec.rotated_dims :], np.arange(n) + first)
        weights = kernels.linear(w.W_IW, X).transpose(1, 0, 2) * (H_I * D_I) ** -0.5  # (b, H_I, n)
        topk, rate = self.spec.index_topk or 0, self.rate

        def select(i: int, q0: int, c: int) -> np.ndarray:
            scores = kernels.relu_(np.matmul(queries[i, :, :, q0 : q0 + c].transpose(0, 2, 1), keys[:, i]))
            index = np.matmul(weights[i, :, q0 : q0 + c].T[:, None, :], scores.transpose(1, 0, 2))[:, 0]
            if not step:
                index[np.arange(count)[None, :] >= (np.arange(q0, q0 + c)[:, None] + 1) // rate] = -np.inf
            bias = np.zeros((c, count))
            if count > topk:
                chosen = np.argpartition(-index, topk - 1, axis=-1)[:, :topk]
                bias[:] = -np.inf
                np.put_along_axis(bias, chosen, 0.0, axis=-1)
            return bias

        return select

    # -- decoding ----------------------------------------------------------------------------------------------

    def cache(self, b: int, n: int, dtype: np.dtype) -> SharedKVCache:
        """The window's keys (one array for K and V) and each series' state, room for n // rate entries."""
        keys = np.empty((b, 1, self.spec.m, min(n, self.spec.window or n)), dtype)
        pools = tuple(PoolState.made(rows, width, b, self.rate, n, dtype) for _, width, rows in self.series())
        return SharedKVCache(keys, keys, pools=pools)

    def cache_per_token(self, size: int, scale: int) -> int:
        """The window's per token: a key that is its value, which transformers keeps twice (K and V) in a sliding
        block, once in a compressed one."""
        return (1 if self.rate else 2) * self.spec.m * size

    def device_cache_per_token(self, size: int, scale: int, tensor: int) -> int:
        return self.cache_per_token(size, scale)  # (one key head: every device keeps it)

    def bytes_at(self, n: int, size: int, scale: int) -> int:
        """Bytes a decoder keeps for one sequence at context n, as transformers' caches hold them: the window's
        keys, each series' entries, its tokens of the window not yet complete (values and gates, both halves), and
        (CSA) the last complete window's first halves."""
        window = min(n, self.spec.window or n) * self.cache_per_token(size, scale)
        if not self.rate:
            return window
        T, left = divmod(n, self.rate)
        held = sum(
            T * width + 2 * left * rows + 2 * self.rate * width * (self.overlap and T > 0)
            for _, width, rows in self.series()
        )
        return window + held * size

    def reach(self) -> int | None:
        return None if self.rate else super().reach()

    def held_per_token(self) -> int:
        H, m, _, q, g, o = self.sizes
        return 2 * H * m + 2 * m + q + g * o + sum(3 * rows for _, _, rows in self.series())

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H, m, d, q, g, o = self.sizes
        N, tokens = self.spec.N, b * n
        entries = self.entry_pairs(b, n)
        per_head = H * (pairs.count + entries)
        out = {
            "Q/K/V projections": N * 2 * (q * d + H * m * q + m * d) * tokens,
            "query/key norms": N * RMS_PER_ENTRY * (q + H * m + m) * tokens,
            "scores K^T Q": N * per_head * 2 * m,
            "softmax": N * per_head * SOFTMAX_PER_SCORE,
            "weights x V": N * per_head * 2 * m,
            "output projection": N * 2 * (H * m * o + g * o * d) * tokens,
        }
        for name, _, rows in self.series():
            out[f"{name} entries"] = N * (4 * rows * d + (SOFTMAX_PER_SCORE + 2) * rows) * tokens
        if self.indexed:
            H_I, D_I = self.spec.index_heads or 0, self.spec.index_m or 0
            out["indexer projections"] = N * 2 * H_I * (D_I * q + d) * tokens
            out["indexer scores"] = N * H_I * (2 * D_I + 3) * self.entry_pairs(b, n, all_seen=True)
        return out

    def entry_pairs(self, b: int, n: int, all_seen: bool = False) -> int:
        """(query, entry) pairs a pass of b sequences of n scores: each query's complete windows' entries (CSA: at
        most index_topk of them, all for the indexer)."""
        if not self.rate:
            return 0
        T = n // self.rate
        seen = self.rate * T * (T - 1) // 2 + T * (n - self.rate * T + 1)  # sum over t < n of floor((t + 1) / rate)
        if self.indexed and not all_seen:  # (past index_topk entries, index_topk a query)
            topk = self.spec.index_topk or 0
            full = min(n, topk * self.rate)  # (the queries before: each its own count)
            T = full // self.rate
            seen = self.rate * T * (T - 1) // 2 + T * (full - self.rate * T + 1) + (n - full) * topk
        return b * seen

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H, m, d, q, g, o = self.sizes
        rows = sum(2 * rows for _, _, rows in self.series())
        linear = q * d + H * m * q + m * d + H * m * o + g * o * d + rows * d
        per_head = H * (pairs.count + self.entry_pairs(b, n))
        return {
            "linear layers": self.spec.N * linear * b * n,
            "scores K^T Q": self.spec.N * per_head * m,
            "weights x V": self.spec.N * per_head * m,
        }


@ATTENTIONS.register("compressed")
class CompressedAttention(SharedKVAttention):
    """DeepSeek-V4's HCA: the window and an entry pooled from every compress_heavy_rate tokens."""

    @staticmethod
    def layer_changes(spec: Spec) -> dict[str, Any]:
        return {}  # (the spec's own rotary base and scaling)

    def __init__(self, spec: Spec):
        super().__init__(spec)
        self.rate = spec.compress_heavy_rate or 0


@ATTENTIONS.register("compressed_sparse")
class SparseCompressedAttention(SharedKVAttention):
    """DeepSeek-V4's CSA: the window and the entries its indexer chooses, each pooled from 2 compress_rate tokens."""

    overlap = indexed = True
    layer_changes = CompressedAttention.layer_changes

    def __init__(self, spec: Spec):
        super().__init__(spec)
        self.rate = spec.compress_rate or 0


__all__ = ["CompressedAttention", "SharedKVAttention", "SparseCompressedAttention"]
