"""GLM-5-Next's sparse attention (attention: indexed_pool): latent attention whose queries each attend to the tokens
of the pools of index_pool keys a lightning indexer scores highest, and to the last (t + 1) mod index_pool tokens
(the pool not yet complete). The indexer (indexed.py's, without positions) scores pools, not tokens: with k(t) =
LayerNorm(W_IK x_t) and s(t) = W_gate x_t (D_I each), pool p (tokens p P .. p P + P - 1) has the key

    K_p = sum_j softmax_j(s(p P + j) + ape_j) * k(p P + j)          (per entry, over the pool's P tokens)

and query t scores it sum_h w_h(t) relu(q_h(t) . K_p / sqrt(D_I)) if the pool ends at or before t. Query t keeps
the min(index_topk / P, pools) best of those, and the tail. A decoder caches k and s a token beside the latent;
the pools are made again from them at each step, as transformers' Glm5NextTextIndexer does. Of pools whose scores
tie at the cut, np.argpartition keeps some; torch's topk may keep others."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import kernels
from ..spec.choices import ATTENTIONS
from ..spec.definition import Spec
from ..spec.validate import bad_key
from .base import GgmlCache, Pairs, Tensor, Term
from .indexed import IndexedAttention, IndexedCache, IndexedWeights

INDEX_EPS = 1e-6  # the indexer's key norm, nn.LayerNorm(index_head_dim, eps=1e-6)


@dataclass
class PooledWeights(IndexedWeights):
    ape: np.ndarray | None = None  # (P, D_I): each slot's bias of the pool's weights
    W_gate: np.ndarray | None = None  # (D_I, d)


@ATTENTIONS.register("indexed_pool")
class PooledIndexAttention(IndexedAttention):
    def ggml_cache(self) -> GgmlCache | None:
        return None  # (llama.cpp's memory of this kind is not modelled)

    @staticmethod
    def check_keys(spec: Spec, data: dict[str, Any], source: str) -> None:
        """The indexer's keys, no positions (GLM-5-Next's turns nothing), a pool size dividing index_topk."""

        IndexedAttention.check_keys(spec, data, source)
        if spec.positional != "none":
            raise bad_key(source, "positional", spec.positional, "none with attention: indexed_pool")
        check_groups(spec, source)

    def tensors(self, prefix: str) -> list[Tensor]:
        _, D_I, _ = self.index_sizes
        p, kind = prefix + "attention.index.", "lightning indexer"
        own = [
            Tensor(p + "ape", (self.spec.index_pool or 0, D_I), kind),
            Tensor(p + "W_gate", (D_I, self.spec.d), kind),
        ]
        return super().tensors(prefix) + own

    def terms(self) -> list[Term]:
        _, D_I, _ = self.index_sizes
        own = Term("index_pool index_m + index_m d", D_I * ((self.spec.index_pool or 0) + self.spec.d), "block")
        return super().terms() + [own]

    def prepare(self, get: Callable[[str], np.ndarray]) -> PooledWeights:  # type: ignore[override]
        made = super().prepare(get)
        return PooledWeights(**vars(made), ape=get("attention.index.ape"), W_gate=get("attention.index.W_gate"))

    def index(
        self, rotary: Any, w: IndexedWeights, X: np.ndarray, low: np.ndarray | None, start: int, offset: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The indexer's queries (b, H_I, D_I, n), its keys and gate scores [k; s] (b, 2 D_I, n), its heads'
        weights (b, H_I, n), 1 / sqrt(H_I D_I) folded in."""
        H_I, D_I, _ = self.index_sizes
        ix, (_, b, n) = w.indexer, X.shape
        assert ix is not None and isinstance(w, PooledWeights) and w.W_gate is not None and low is not None
        queries = kernels.linear(ix.W_Q, low).reshape(H_I, D_I, b, n).transpose(2, 0, 1, 3)
        keys = kernels.layer_norm(kernels.linear(ix.W_K, X), ix.k_gain, ix.k_bias, INDEX_EPS)
        packed = np.concatenate([keys, kernels.linear(w.W_gate, X)]).transpose(1, 0, 2)
        weights = kernels.linear(ix.W_W, X).transpose(1, 0, 2) * (H_I * D_I) ** -0.5
        return queries, packed, weights

    def select(
        self, w: IndexedWeights, queries: np.ndarray, keys: np.ndarray, weights: np.ndarray, causal: bool
    ) -> Callable[[int, int, int, int, int], np.ndarray]:
        assert isinstance(w, PooledWeights) and w.ape is not None
        return pooled_selection(queries, keys, weights, causal, self.spec.index_topk or 0, w.ape)

    def cache(self, b: int, n: int, dtype: np.dtype) -> IndexedCache:
        return IndexedCache.made(self.cache_shapes(b, n), 2 * self.index_sizes[1], dtype)  # (keys, gate scores)

    def cache_per_token(self, size: int, scale: int) -> int:
        """The latent's and its key part's, the indexer's key and gate scores, and a flag a token that
        transformers' cache holds beside them (whether the token is padding)."""
        return super().cache_per_token(size, scale) + (self.index_sizes[1] + 1) * size

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        _, D_I, _ = self.index_sizes
        out = super().flops(b, n, pairs)
        out["indexer projections"] += self.spec.N * 2 * D_I * self.spec.d * b * n
        return out

    def held_per_token(self) -> int:
        return super().held_per_token() + self.index_sizes[1]


def pooled_selection(
    queries: np.ndarray, packed: np.ndarray, weights: np.ndarray, causal: bool, topk: int, ape: np.ndarray
) -> Callable[[int, int, int, int, int], np.ndarray]:
    """kernels.Attend's `content` for sequence i's queries q0.. (c) and keys k0.. (k): 0 at the tokens of the pools
    each query keeps and of its tail, -inf elsewhere, (1, c, k). A query's position is its column's (a prefill), or
    the last key's (a decoding step)."""
    P, D_I = ape.shape
    T = packed.shape[-1]
    pools = T // P
    made: dict[int, np.ndarray] = {}

    def pool_keys(i: int) -> np.ndarray:
        """Sequence i's complete pools' keys (D_I, pools)."""
        if i not in made:
            keys = packed[i, :D_I, : pools * P].reshape(D_I, pools, P)
            logits = packed[i, D_I:, : pools * P].reshape(D_I, pools, P) + ape.T[:, None, :]
            logits = np.exp(logits - logits.max(axis=-1, keepdims=True))
            made[i] = (logits / logits.sum(axis=-1, keepdims=True) * keys).sum(axis=-1)
        return made[i]

    def content(i: int, q0: int, c: int, k0: int, k: int) -> np.ndarray:
        t = np.arange(q0, q0 + c) if causal else np.full(c, T - 1)  # (each query's position)
        index = None
        if pools:
            scores = np.matmul(queries[i, :, :, q0 : q0 + c].transpose(0, 2, 1), pool_keys(i))
            kernels.relu_(scores)  # (H_I, c, pools)
            index = np.matmul(weights[i, :, q0 : q0 + c].T[:, None, :], scores.transpose(1, 0, 2))[:, 0]
        return group_bias(index, t, np.arange(k0, k0 + k), P, topk, packed.dtype)

    return content


def group_bias(
    index: np.ndarray | None, t: np.ndarray, positions: np.ndarray, size: int, budget: int, dtype: np.dtype
) -> np.ndarray:
    """kernels.Attend's `content` (1, c, k) for queries at positions t (c) and keys at `positions` (k): 0 at the keys
    of the budget / size best groups of `size` keys each query may choose (those ending at or before it, scored by
    `index` (c, groups); none without complete groups) and of its incomplete group, -inf elsewhere (GLM-5-Next's
    pools, Qwen4's blocks)."""
    bias = np.full((1, len(t), len(positions)), -np.inf, dtype=dtype)
    tail = t + 1 - (t + 1) % size  # (each query's first key past its complete groups)
    bias[0][(positions >= tail[:, None]) & (positions <= t[:, None])] = 0.0
    if index is None or not index.shape[1]:
        return bias
    groups = index.shape[1]
    candidate = (np.arange(groups) + 1) * size - 1 <= t[:, None]  # (the group ends at or before the query)
    index = np.where(candidate, index, -np.inf)
    keep = min(budget // size, groups)
    picked = candidate.copy()
    if keep < groups:
        chosen = np.argpartition(-index, keep - 1, axis=-1)[:, :keep]
        picked = np.zeros_like(candidate)
        np.put_along_axis(picked, chosen, True, axis=-1)
        picked &= candidate
    inside = positions // size < groups
    allowed = np.zeros(bias.shape[1:], dtype=bool)
    allowed[:, inside] = picked[:, positions[inside] // size]
    bias[0][allowed] = 0.0
    return bias


def check_groups(spec: Spec, source: str) -> None:
    """A group size (index_pool) dividing the indexer's budget (index_topk)."""
    if spec.index_pool is None or (spec.index_topk or 0) % spec.index_pool:
        raise bad_key(source, "index_pool", spec.index_pool, f"a divisor of index_topk = {spec.index_topk}")


__all__ = ["PooledIndexAttention"]
