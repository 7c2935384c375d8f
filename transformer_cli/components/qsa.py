"""Qwen4's block-sparse attention (attention: qsa): the spec's attention (Qwen3.5's gated heads) in which each query
attends only to the blocks of index_pool keys an indexer scores highest, and to the last (t + 1) mod index_pool keys
(the block not yet complete). The indexer has index_heads query heads of index_m and one raw key a token,
[q; k] = W_I x: its queries are RMS-normed (their own gain) and turned at their positions, a block's key is the
mean of its raw keys, normed (its gain) and turned at the block's first position, and query t scores block b as
sum_h relu(q_h(t) . K_b) / sqrt(index_m), for the blocks that end at or before it. It keeps the index_topk /
index_pool best. A decoder caches the raw keys beside the keys and values; the blocks are made again from them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import kernels
from ..spec.choices import ATTENTIONS
from ..spec.definition import Spec
from ..spec.validate import bad_key
from .attention import AttentionWeights, MultiHeadAttention
from .base import GgmlCache, Tensor, Term
from .indexed import IndexedCache
from .norm import norm_kind
from .pooled import check_groups, group_bias


@dataclass
class QsaWeights(AttentionWeights):
    indexer: tuple = ()  # (W_I (H_I D_I + D_I, d): the queries' rows, then the key's; the query and key norms' gains)


@ATTENTIONS.register("qsa")
class BlockIndexAttention(MultiHeadAttention):
    def ggml_cache(self) -> GgmlCache | None:
        return None  # (llama.cpp's memory of this kind is not modelled)

    @staticmethod
    def check_keys(spec: Spec, data: dict[str, Any], source: str) -> None:
        MultiHeadAttention.check_keys(spec, data, source)
        if spec.mask != "causal":
            raise bad_key(source, "mask", spec.mask, "causal with attention: qsa (it selects earlier keys)")
        if (spec.index_m or 0) < spec.rotated_dims:
            raise bad_key(source, "index_m", spec.index_m, f"at least the rotated part, {spec.rotated_dims}")
        check_groups(spec, source)

    @property
    def index_sizes(self) -> tuple[int, int, int, int]:
        """H_I, D_I, index_topk and the block size."""

        s = self.spec
        return s.index_heads or 0, s.index_m or 0, s.index_topk or 0, s.index_pool or 1

    def tensors(self, prefix: str) -> list[Tensor]:
        H_I, D_I, _, _ = self.index_sizes
        p, kind, d = prefix + "attention.index.", "block indexer", self.spec.d
        own = [Tensor(p + "W_Q", (H_I, D_I, d), kind), Tensor(p + "W_K", (D_I, d), kind)]
        own += [Tensor(p + "q_norm.gamma", (D_I,), kind), Tensor(p + "k_norm.gamma", (D_I,), kind)]
        return super().tensors(prefix) + own

    def terms(self) -> list[Term]:
        H_I, D_I, _, _ = self.index_sizes
        own = Term("index_heads index_m d + index_m d + 2 index_m", D_I * ((H_I + 1) * self.spec.d + 2), "block")
        return super().terms() + [own]

    def prepare(self, get: Callable[[str], np.ndarray]) -> Any:
        H_I, D_I, _, _ = self.index_sizes
        gains = norm_kind(self.spec).stacked  # (RMSNorm gains, 1 + w with norm_plus_one)
        indexer = (
            np.concatenate([get("attention.index.W_Q").reshape(H_I * D_I, -1), get("attention.index.W_K")]),
            gains(lambda g: get(f"attention.index.q_norm.{g}"))[0],
            gains(lambda g: get(f"attention.index.k_norm.{g}"))[0],
        )
        return QsaWeights(**vars(super().prepare(get)), indexer=indexer)

    def mix(  # type: ignore[override]
        self, model: Any, i: int, w: Any, X: np.ndarray, start: int = 0, cache: Any = None, **options: Any
    ) -> np.ndarray:
        """The attention's sublayer, each query's scores but the selected keys' -inf."""
        H_I, D_I, topk, R = self.index_sizes
        _, b, n = X.shape
        offset, rotary = options.get("offset", 0), model.rotations[i]
        W, q_gain, k_gain = w.indexer
        both = kernels.linear(W, X)
        queries = _normed(both[: H_I * D_I].reshape(H_I, D_I, b, n), q_gain, self.spec.norm_eps)
        queries = np.ascontiguousarray(queries.transpose(2, 0, 1, 3))  # (b, H_I, D_I, n)
        r = self.spec.rotated_dims
        if r:
            rotary.turn(queries[:, :, :r], start + offset, start + max(offset, 0) + n, self.spec.rope_pairing)
        keys = both[H_I * D_I :].transpose(1, 0, 2)  # (b, D_I, n): raw, as cached
        if cache is not None:
            keys = cache.index_keys(keys)
        causal = cache is None or n > 1
        content = block_selection(queries, keys, k_gain, self.spec, rotary, causal, start + offset)
        return super().mix(model, i, w, X, start, cache, content=content, **options)

    def cache(self, b: int, n: int, dtype: np.dtype) -> IndexedCache:
        return IndexedCache.made(self.cache_shapes(b, n), self.index_sizes[1], dtype)

    def cache_per_token(self, size: int, scale: int) -> int:
        """The keys and values, and the indexer's raw key (with a scale)."""
        return super().cache_per_token(size, scale) + self.index_sizes[1] * size + scale

    def held_per_token(self) -> int:
        H_I, D_I, _, _ = self.index_sizes
        return super().held_per_token() + (H_I + 1) * D_I


def _normed(X: np.ndarray, gain: np.ndarray, eps: float) -> np.ndarray:
    """Each (heads, D_I, ...) head RMS-normed over its D_I entries, times the gain (D_I, 1, 1)."""
    scale = 1.0 / np.sqrt(np.mean(X * X, axis=1, keepdims=True) + eps)
    return X * scale * gain.reshape(1, -1, *([1] * (X.ndim - 2)))


def block_selection(
    queries: np.ndarray, keys: np.ndarray, k_gain: np.ndarray, spec: Spec, rotary: Any, causal: bool, first: int
) -> Callable[[int, int, int, int, int], np.ndarray]:
    """kernels.Attend's `content` for sequence i's queries q0.. (c) and keys k0.. (k): 0 at the tokens of the blocks
    each query keeps and of its tail, -inf elsewhere, (1, c, k). A query's position is first + its column (a
    prefill), or the last key's (a decoding step)."""
    D_I, T = queries.shape[2], keys.shape[-1]
    R, r = spec.index_pool or 1, spec.rotated_dims
    blocks = T // R
    made: dict[int, np.ndarray] = {}

    def block_keys(i: int) -> np.ndarray:
        """Sequence i's complete blocks' keys (D_I, blocks), turned at each block's first position."""
        if i not in made:
            mean = keys[i, :, : blocks * R].reshape(D_I, blocks, R).mean(axis=-1)
            pooled = _normed(mean[None], k_gain, spec.norm_eps)[0]
            if r and blocks:
                cos, sin = rotary.tables(0, blocks * R, pooled.dtype)
                kernels.rotate_(pooled[:r], cos[:, ::R], sin[:, ::R], spec.rope_pairing)
            made[i] = pooled
        return made[i]

    def content(i: int, q0: int, c: int, k0: int, k: int) -> np.ndarray:
        t = first + np.arange(q0, q0 + c) if causal else np.full(c, T - 1)
        index = None
        if blocks:
            scores = np.matmul(queries[i, :, :, q0 : q0 + c].transpose(0, 2, 1), block_keys(i))
            kernels.relu_(scores)
            index = scores.sum(axis=0)  # (c, blocks): the heads' sum (its 1 / sqrt(index_m) changes no choice)
        return group_bias(index, t, np.arange(k0, k0 + k), R, spec.index_topk or 0, queries.dtype)

    return content


__all__ = ["BlockIndexAttention"]
