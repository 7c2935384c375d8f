"""DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): latent attention (latent.py) whose queries each attend only to
the index_topk keys a lightning indexer scores highest.

The indexer has H_I = index_heads query heads of D_I = index_m entries and one key a token, made from the queries'
bottleneck l = RMSNorm(W_QA x) and the block's input x:
  queries  q_h = W_IQ^h l,  key k = LayerNorm(W_IK x) (gains and biases; eps index_eps, DeepSeek's 1e-6), the
           first rope_m entries of each turned by the block's rotary tables (index_pairing: half-split for
           DeepSeek-V3.2, interleaved for GLM-5), or its last (index_rope: HY-V4's)
  weights  w_h = (W_IW x)_h / sqrt(H_I)
  score    I(s, t) = sum_h w_h(s) relu(q_h(s) . k(t) / sqrt(D_I)), over the keys t <= s
Query s attends to the index_topk keys of highest I(s, .), or to every key it sees when it sees no more: the
attention's scores of the others are -inf. A decoder caches k beside the latent: D_I more numbers a token and block.

The selection is made one chunk of queries and one sequence at a time, when kernels.attend asks for it (its
`content`): the index scores held are one chunk's (c, t), never (n, n). Of keys whose index scores tie at the
cut, np.argpartition keeps some; torch's topk may keep others.
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
from .base import GgmlCache, Pairs, Tensor, Term
from .kv_cache import KVCache
from .latent import LatentAttention, LatentWeights, temperature_of, warm
from .norm import NORM_PER_ENTRY

INPUT_EPS = 1e-6  # the LayerNorm of the block's input an indexer's queries read (index_query input: nn.LayerNorm's)


@dataclass
class Indexer:
    """One block's lightning indexer as `prepare` lays it out: matrices on columns, the key norm's as (D_I, 1, 1)."""

    W_Q: np.ndarray  # (H_I D_I, q): from the queries' bottleneck
    W_K: np.ndarray  # (D_I, d)
    k_gain: np.ndarray
    k_bias: np.ndarray
    W_W: np.ndarray  # (H_I, d): each head's weight
    q_norm: tuple[np.ndarray, np.ndarray] | None = None  # index_query input: the LayerNorm of x its queries read
    temperature: tuple[np.ndarray, np.ndarray] | None = None  # (s, b) (H_I,) each: query_temperature's


@dataclass
class IndexedWeights(LatentWeights):
    indexer: Indexer | None = None


@dataclass
class IndexedCache(KVCache):
    """Latent attention's cache (the rotary keys and latents) and the indexer's keys (b, D_I, slots) beside it."""

    index: np.ndarray | None = None

    @classmethod
    def made(cls, shapes: tuple[tuple[int, ...], tuple[int, ...]], rows: int, dtype: np.dtype) -> IndexedCache:
        """An empty cache of the attention's two arrays' `shapes` (b, .., slots) and `rows` of indexer keys a slot."""
        (b, *_, slots), values = shapes
        index = np.empty((b, rows, slots), dtype)
        return cls(np.empty(shapes[0], dtype), np.empty(values, dtype), index=index)

    def index_keys(self, keys: np.ndarray) -> np.ndarray:
        """Store the columns' indexer keys (b, D_I, p) after those filled; return every one stored (a view)."""
        assert self.index is not None
        end = self.filled + keys.shape[-1]
        self.index[..., self.filled : end] = keys
        return self.index[..., :end]


@ATTENTIONS.register("indexed")
class IndexedAttention(LatentAttention):
    @staticmethod
    def check_keys(spec: Spec, data: dict[str, Any], source: str) -> None:
        """Latent attention's keys, with the bottleneck (the indexer's queries come from it), a causal mask, and
        an indexer head wider than its rotary part."""
        LatentAttention.check_keys(spec, data, source)
        if spec.q_rank is None and spec.index_query == "bottleneck":
            raise bad_key(source, "attention", "indexed", "q_rank with attention: indexed (its indexer reads it)")
        if spec.mask != "causal":
            raise bad_key(source, "mask", spec.mask, "causal with attention: indexed (it selects earlier keys)")
        if (spec.index_m or 0) < spec.rotated_dims:
            raise bad_key(source, "index_m", spec.index_m, f"at least rope_m = {spec.rotated_dims}")
        kinds = spec.mixer_layers or (spec.attention,)
        if kinds[0] == "indexed_shared":
            key, value = ("mixer_layers", list(kinds)) if spec.mixer_layers else ("attention", spec.attention)
            raise bad_key(source, key, value, "an indexed block first (an indexed_shared block reuses its selection)")

    @property
    def index_sizes(self) -> tuple[int, int, int]:
        """H_I, D_I and index_topk."""
        s = self.spec
        return s.index_heads or 0, s.index_m or 0, s.index_topk or 0

    def tensors(self, prefix: str) -> list[Tensor]:
        H_I, D_I, _ = self.index_sizes
        p, kind, d = prefix + "attention.index.", "lightning indexer", self.spec.d
        own = [Tensor(p + "W_Q", (H_I, D_I, self.query_width), kind), Tensor(p + "W_K", (D_I, d), kind)]
        own += [Tensor(p + "k_norm.gamma", (D_I,), kind), Tensor(p + "k_norm.beta", (D_I,), kind)]
        own += [Tensor(p + "W_W", (H_I, d), kind)]
        if self.spec.index_query == "input":
            own += [Tensor(p + "q_norm.gamma", (d,), kind), Tensor(p + "q_norm.beta", (d,), kind)]
        if self.spec.query_temperature:
            own += [Tensor(p + f"temp.{x}", (H_I,), "query temperature") for x in ("scale", "bias")]
        return super().tensors(prefix) + own

    @property
    def query_width(self) -> int:
        """What the indexer's queries read: the bottleneck's q_rank rows, or d (index_query input)."""
        return self.spec.d if self.spec.index_query == "input" else self.spec.q_rank or 0

    def _indexer_weights(self) -> int:
        H_I, D_I, _ = self.index_sizes
        own = 2 * self.spec.d * (self.spec.index_query == "input") + 2 * H_I * self.spec.query_temperature
        return H_I * D_I * self.query_width + D_I * (self.spec.d + 2) + H_I * self.spec.d + own

    def terms(self) -> list[Term]:
        width = "d" if self.spec.index_query == "input" else "q_rank"
        extra = (" + 2d" if self.spec.index_query == "input" else "") + (
            " + 2 index_heads" if self.spec.query_temperature else ""
        )
        formula = f"index_heads index_m {width} + index_m(d + 2) + index_heads d{extra}"
        own = Term(formula, self._indexer_weights(), "block")
        return super().terms() + [own]

    def prepare(self, get: Callable[[str], np.ndarray]) -> IndexedWeights:  # type: ignore[override]
        H_I, D_I, _ = self.index_sizes
        own = Indexer(
            get("attention.index.W_Q").reshape(H_I * D_I, -1),
            get("attention.index.W_K"),
            get("attention.index.k_norm.gamma").reshape(-1, 1, 1),
            get("attention.index.k_norm.beta").reshape(-1, 1, 1),
            get("attention.index.W_W"),
        )
        if self.spec.index_query == "input":
            own.q_norm = (
                get("attention.index.q_norm.gamma").reshape(-1, 1, 1),
                get("attention.index.q_norm.beta").reshape(-1, 1, 1),
            )
        if self.spec.query_temperature:
            own.temperature = temperature_of(get, "attention.index.temp.")
        return IndexedWeights(**vars(super().prepare(get)), indexer=own)

    def mix(  # type: ignore[override]
        self,
        model: Any,
        i: int,
        w: IndexedWeights,
        X: np.ndarray,
        start: int = 0,
        cache: IndexedCache | None = None,
        **options: Any,
    ) -> np.ndarray:
        """Latent attention's sublayer (attention.py's mix), each query's scores but the selected keys' -inf."""
        offset = options.get("offset", 0)
        low = self.bottleneck(w, X) if self.spec.q_rank else None
        if self.spec.kv_reused:  # (its own indexer, an earlier block's latents: Mistral Large 4's)
            queries, keys, weights = self.index(model.rotations[i], w, X, low, start, offset)
            if cache is not None:  # (the indexer's keys alone: the cache holds no latents)
                keys = cache.index_keys(keys)
                cache.filled += X.shape[-1] if cache.keep else 0
            select = self.select(w, queries, keys, weights, cache is None or X.shape[-1] > 1)
            if options.get("shared") is not None:
                options["shared"]["index"] = select
            return self.reused(model, i, w, X, start, cache, content=select, **options)
        Q, latent, rotary = self.compress(w, X, low)
        Q = warm(Q, w.temperature, start + offset)
        K, V = self.keys_values(w, rotary, latent)
        queries, keys, weights = self.index(model.rotations[i], w, X, low, start, offset)
        if cache is not None:
            keys = cache.index_keys(keys)
        causal = cache is None or X.shape[-1] > 1  # (a step's one query sees every key cached)
        select = self.select(w, queries, keys, weights, causal)
        if options.get("shared") is not None:  # (for the blocks after it that reuse its selection)
            options["shared"]["index"] = select
        return super().mix(model, i, w, X, start, cache, qkv=(Q, K, V), content=select, **options)

    def select(
        self, w: IndexedWeights, queries: np.ndarray, keys: np.ndarray, weights: np.ndarray, causal: bool
    ) -> Callable[[int, int, int, int, int], np.ndarray]:
        """kernels.Attend's `content`: each query's index_topk keys scored highest (`selection`)."""
        return selection(queries, keys, weights, causal, self.spec.index_topk or 0)

    def index(
        self, rotary: Any, w: IndexedWeights, X: np.ndarray, low: np.ndarray | None, start: int, offset: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The indexer's queries (b, H_I, D_I, n) and keys (b, D_I, n), turned at positions start + offset.. and
        start.., and its heads' weights (b, H_I, n), 1 / sqrt(H_I D_I) folded in (relu(a s) = s relu(a), s > 0)."""
        H_I, D_I, _ = self.index_sizes
        ix, (_, b, n) = w.indexer, X.shape
        assert ix is not None
        read = kernels.layer_norm(X, *ix.q_norm, INPUT_EPS) if ix.q_norm is not None else low
        assert read is not None
        queries = kernels.linear(ix.W_Q, read).reshape(H_I, D_I, b, n).transpose(2, 0, 1, 3)
        queries = warm(queries, ix.temperature, start + offset)
        keys = kernels.layer_norm(kernels.linear(ix.W_K, X), ix.k_gain, ix.k_bias, self.spec.index_eps)
        keys = keys.transpose(1, 0, 2)
        length, r = start + max(offset, 0) + n, self.spec.rotated_dims
        turned = slice(D_I - r, D_I) if self.spec.index_rope == "last" else slice(0, r)  # (views: turned in place)
        if r:  # (a block without positions turns nothing: Mistral Large 4's NoPE layers)
            rotary.turn(queries[:, :, turned], start + offset, length, self.spec.index_pairing)
            rotary.turn(keys[:, turned], start, length, self.spec.index_pairing)
        weights = kernels.linear(ix.W_W, X).transpose(1, 0, 2) * (H_I * D_I) ** -0.5
        return queries, keys, weights

    def cache(self, b: int, n: int, dtype: np.dtype) -> IndexedCache:
        return IndexedCache.made(self.cache_shapes(b, n), self.index_sizes[1], dtype)

    def cache_per_token(self, size: int, scale: int) -> int:
        """Latent attention's, and the indexer's key (with a scale)."""
        return super().cache_per_token(size, scale) + self.index_sizes[1] * size + scale

    def ggml_cache(self) -> GgmlCache | None:
        """llama.cpp's (src/llama-kv-cache-dsa.cpp): latent attention's, and the indexer's key in K's type."""
        own = super().ggml_cache()
        return None if own is None else replace(own, index_k=self.index_sizes[1])

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H_I, D_I, topk = self.index_sizes
        N, tokens = self.spec.N, b * n
        out = super().flops(b, n, pairs)
        out["indexer projections"] = N * 2 * (self._indexer_weights() - 2 * D_I) * tokens
        out["indexer norm"] = N * NORM_PER_ENTRY * D_I * tokens
        out["indexer scores"] = N * H_I * pairs.count * (2 * D_I + 3)  # (product, relu, weight, sum)
        return out

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H_I, D_I, _ = self.index_sizes
        out = super().multiply_adds(b, n, pairs)
        out["linear layers"] += self.spec.N * (self._indexer_weights() - 2 * D_I) * b * n
        out["indexer scores"] = self.spec.N * H_I * pairs.count * (D_I + 1)
        return out

    def held_per_token(self) -> int:
        """Latent attention's, and the indexer's queries, key and weights."""
        H_I, D_I, _ = self.index_sizes
        return super().held_per_token() + H_I * D_I + D_I + H_I


def selection(
    queries: np.ndarray, keys: np.ndarray, weights: np.ndarray, causal: bool, topk: int
) -> Callable[[int, int, int, int, int], np.ndarray]:
    """kernels.Attend's `content` from the indexer's queries, keys and weights: for sequence i's queries q0.. (c of
    them) and keys k0.. (k), 0 at the `topk` keys each selects and -inf elsewhere, (1, c, k)."""

    def content(i: int, q0: int, c: int, k0: int, k: int) -> np.ndarray:
        scores = np.matmul(queries[i, :, :, q0 : q0 + c].transpose(0, 2, 1), keys[i, :, k0 : k0 + k])
        kernels.relu_(scores)  # (H_I, c, k)
        index = np.matmul(weights[i, :, q0 : q0 + c].T[:, None, :], scores.transpose(1, 0, 2))[:, 0]
        if causal:  # (query q0 + j sees keys up to its own position)
            index += kernels.causal_mask(q0 - k0, q0 - k0 + c, k)
        bias = np.zeros((1, c, k), dtype=scores.dtype)
        if k > topk:  # (else every key it sees)
            chosen = np.argpartition(-index, topk - 1, axis=-1)[:, :topk]
            bias[0] = -np.inf
            np.put_along_axis(bias[0], chosen, 0.0, axis=-1)
        return bias

    return content


@ATTENTIONS.register("indexed_shared")
class SharedIndexAttention(LatentAttention):
    """GLM-5's "shared" layers: latent attention without an indexer of its own, each query attending to the keys
    the indexer of the last block before it with one selects (that block's selection, which it keeps for the blocks
    after it)."""

    def ggml_cache(self) -> GgmlCache | None:
        return None  # (llama.cpp's memory of this kind is not modelled)

    check_keys = IndexedAttention.check_keys

    def mix(  # type: ignore[override]
        self, model: Any, i: int, w: LatentWeights, X: np.ndarray, start: int = 0, cache: Any = None, **options: Any
    ) -> np.ndarray:
        return super().mix(model, i, w, X, start, cache, content=options["shared"]["index"], **options)


__all__ = ["IndexedAttention", "SharedIndexAttention"]
