"""Autoregressive decoding: one new column at a time, each block attending to a key/value cache.

For a causal model this must reproduce the parallel forward pass over the known sequence (seed 001).
The two fault options exist to build the check's controls: a decoder with a stale cache or a wrong
position must be caught.

Each block's cache is its attention component's (components/attention.py's KVCache), allocated once for the whole
sequence: each step writes its column in place and attends to a view of the filled part, nothing is copied per
step. The prefill and every step are the model's one pass (Transformer.run) with the caches handed to it.
"""

from __future__ import annotations

import numpy as np

from ..components.cross import Memory
from .parallel import PassThreads
from .transformer import Array, Transformer, from_columns, to_columns


class Decoder:
    """A model's decoding state for b sequences of at most n columns: each block's cache and, for an
    encoder-decoder's decoder, the cross-attention's keys and values of the source (made once, then kept)."""

    def __init__(self, model: Transformer, b: int, n: int, memory: Array | None = None, position_offset: int = 0):
        self.model, self.offset = model, position_offset
        self.caches = [attention.cache(b, n, model.dtype) for attention, _ in model.layers]
        self.memory = None  # the encoder's output (d, b, n_src) and each block's keys and values of it
        if memory is not None:
            self.memory = Memory(to_columns(np.asarray(memory), model.dtype), model.spec.cross_kv_heads, keep=True)
        self.t = 0  # the next column's position

    def prefill(self, Z: Array) -> Array:
        """The first columns (d, b, p) through the parallel pass, their keys and values stored: -> ((d or V), b, p)."""
        with PassThreads(self.model.workers):
            out = self.model.run(Z.copy(), 0, self.caches, memory=self.memory)
        self.t = Z.shape[-1]
        return out

    def step(self, z: Array, keep: bool = True) -> Array:
        """The next column (d, b, 1) through every block, reading and extending the caches: -> ((d or V), b, 1).
        keep=False: its keys and values are used but not stored (the stale-cache fault)."""
        for cache in self.caches:
            if cache is not None:  # (a block of kv_shared's keeps none: it reads an earlier block's)
                cache.keep = keep
        z = z.copy(order="K")  # (in the layout given: a norm's sums are added in the order of the memory)
        out = self.model.run(z, self.t, self.caches, memory=self.memory, offset=self.offset)
        self.t += 1
        return out


def decode(
    model: Transformer,
    X: Array,
    position_offset: int = 0,
    stale_at: int | None = None,
    memory: Array | None = None,
    prompt: int = 0,
) -> Array:
    """Run T column by column with a key/value cache: (d, n) or (b, d, n) -> same shape.

    An encoder-decoder's decoder reads the encoder's output `memory` ((d, n_src) or (b, d, n_src)): each block's
    cross-attention keys and values are made from it once, before the first step (the cross-attention's cache).
    `prompt`: the first `prompt` columns go through the parallel forward pass at once (the prefill), which fills
    the cache; the rest one at a time.

    position_offset: encode column t at position t + offset (a fault when not 0). With rotary positions the query
    turns by t + offset and its key by t: shifting both alike changes nothing, rotary scores depend on t - s only.
    stale_at: at step t = stale_at the new key and value are used but not stored (a fault).
    """
    Z, ndim = model.columns(np.asarray(X))  # (d, b, n); token ids are embedded
    _, b, n = Z.shape
    decoder = Decoder(model, b, n, memory, position_offset)
    columns = [decoder.prefill(Z[:, :, :prompt])] if prompt else []
    for t in range(prompt, n):
        columns.append(decoder.step(Z[:, :, t : t + 1], keep=t != stale_at))
    return from_columns(np.concatenate(columns, axis=-1), ndim)  # (d, b, n) -> the input's layout
