"""A block's attention state while decoding (attention.py's), one module of its own."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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


__all__ = ["KVCache"]
