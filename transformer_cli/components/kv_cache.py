"""A block's attention state while decoding (attention.py's), one module of its own: the cache's arrays, and what
an attention block keeps in them (CachedKeysValues: its keys and values; latent attention's own kinds override it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..spec.definition import Spec
from .base import GgmlCache


@dataclass
class KVCache:
    """A block's attention state while decoding: what it keeps of each column, two arrays (keys and values, or
    latent attention's rotary keys and latents) of `slots` columns, and how many columns have been stored. With a
    sliding window w the slots are a ring of w the steps go round (attention does not depend on the order of its
    keys)."""

    K: np.ndarray
    V: np.ndarray
    filled: int = 0
    keep: bool = True  # False: the next step's column is used but not stored (the stale-cache fault)
    chunked: bool = False  # a chunk's slots: a step sees the slots of its own chunk, 0 .. t % slots

    def store(self, K: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Write one step's (b, G, m, 1) entries in the next slot, and return every entry the step reads (views)."""
        slots = self.K.shape[-1]
        at = self.filled % slots
        self.K[..., at : at + 1], self.V[..., at : at + 1] = K, V
        used = at + 1 if self.chunked else min(self.filled + 1, slots)
        self.filled += self.keep
        return self.K[..., :used], self.V[..., :used]

    def fill(self, K: np.ndarray, V: np.ndarray) -> None:
        """Write a prefill's p columns (b, G, m, p) into an empty cache: with a window the latest w columns, each in
        the slot it would have had."""
        assert self.filled == 0, "a prefill fills an empty cache"
        p, slots = K.shape[-1], self.K.shape[-1]
        kept = np.arange(max(0, p - slots), p)
        self.K[..., kept % slots], self.V[..., kept % slots] = K[..., kept], V[..., kept]
        self.filled = p if self.keep else 0


class CachedKeysValues:
    """What a decoder keeps of an attention block, per token: its G keys of m and G values of v_m."""

    spec: Spec

    def cache(self, b: int, n: int, dtype: np.dtype) -> KVCache:
        """An empty cache for b sequences of at most n columns: n slots, or the window's w when w < n."""
        span = self.spec.window or self.spec.chunk  # (a chunk's keys: slots t % C, the chunk's first at slot 0)
        keys, values = self.cache_shapes(b, min(n, span) if span else n)
        return KVCache(np.empty(keys, dtype), np.empty(values, dtype), chunked=self.spec.chunk is not None)

    def cache_shapes(self, b: int, slots: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The two arrays a decoder's cache holds for b sequences of `slots` tokens: keys (b, G, m, slots) and
        values (b, G, m_v, slots)."""
        return (b, self.spec.kv_heads, self.spec.m, slots), (b, self.spec.kv_heads, self.spec.value_size, slots)

    def cache_entries(self, w: Any, X: np.ndarray, K: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What the cache keeps of the columns X (d, b, n), whose rotated keys and values are K, V: K and V."""
        return K, V

    def keys_values(self, w: Any, first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The keys and values a step attends to, from the cache's two arrays: they are the keys and values."""
        return first, second

    def cache_per_token(self, size: int, scale: int) -> int:
        """Bytes a decoder keeps per token and block in `size`-byte elements (with a `scale`-byte scale per head and
        token for K and for V): G keys of m and G values of v_m."""
        return self.spec.kv_heads * ((self.spec.m + self.spec.value_size) * size + 2 * scale)

    def ggml_cache(self) -> GgmlCache | None:
        """llama.cpp's (src/llama-kv-cache.cpp): G keys of m and G values of v_m per token, K and V apart."""
        G, m, v = self.spec.kv_heads, self.spec.m, self.spec.value_size
        return GgmlCache(G * m, G * v, m, v)


__all__ = ["CachedKeysValues", "KVCache"]
