"""Autoregressive decoding: one new column at a time, each block attending to a key/value cache.

For a causal model this must reproduce the parallel forward pass over the known sequence (seed 001).
The two fault options exist to build the check's controls: a decoder with a stale cache or a wrong
position must be caught.

The cache is allocated once for the whole sequence, (b, G, m, n) keys and values per block, and each step writes
its column in place and attends to a view of the filled part: nothing is copied per step. With a sliding window
w it holds w columns, a ring the steps go round (attention does not depend on the order of its keys).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..components.cross import memory_keys
from .transformer import Array, Transformer, from_columns, to_columns


@dataclass
class Cache:
    """One block's keys and values, (b, G, m, slots), and how many columns have been stored."""

    K: Array
    V: Array
    filled: int = 0

    def store(self, K: Array, V: Array, keep: bool = True) -> tuple[Array, Array]:
        """Write the step's (b, G, m, 1) key and value in the next slot, and return every key and value the step
        reads (views); keep=False lets the next step overwrite them (the stale-cache fault)."""
        slots = self.K.shape[-1]
        at = self.filled % slots
        self.K[..., at : at + 1], self.V[..., at : at + 1] = K, V
        used = min(self.filled + 1, slots)
        self.filled += keep
        return self.K[..., :used], self.V[..., :used]


class Decoder:
    """A model's decoding state for b sequences of at most n columns: each block's cache and, for an
    encoder-decoder's decoder, the cross-attention's keys and values of the source (made once)."""

    def __init__(self, model: Transformer, b: int, n: int, memory: Array | None = None, position_offset: int = 0):
        self.model, self.offset = model, position_offset
        spec = model.spec
        shapes = [model.attention.cache_shapes(b, min(n, blk.window) if blk.window else n) for blk in model.blocks]
        self.caches = [Cache(np.empty(keys, model.dtype), np.empty(values, model.dtype)) for keys, values in shapes]
        self.memory = None if memory is None else to_columns(np.asarray(memory), model.dtype)  # (d, b, n_src)
        self.crosses: list = [None] * len(model.blocks)
        if self.memory is not None:  # per block: the memory's keys and values, and the sublayer that reads them
            self.crosses = [(c, memory_keys(c, self.memory, spec.cross_heads)) for c in model.crosses or []]
        self.t = 0  # the next column's position

    def prefill(self, Z: Array) -> Array:
        """The first columns (d, b, p) through the parallel pass, their keys and values stored: -> ((d or V), b, p)."""
        found: list[tuple[Array, Array]] = []
        out = self.model.columns_forward(Z, kv_out=found, memory=self.memory)
        p = Z.shape[-1]
        for cache, (K, V) in zip(self.caches, found, strict=True):
            slots = cache.K.shape[-1]
            kept = np.arange(max(0, p - slots), p)  # with a window the latest w columns, each in the slot it would have
            cache.K[..., kept % slots], cache.V[..., kept % slots] = K[..., kept], V[..., kept]
            cache.filled = p
        self.t = p
        return out

    def step(self, z: Array, keep: bool = True) -> Array:
        """The next column (d, b, 1) through every block, reading and extending the caches: -> ((d or V), b, 1).
        keep=False: its keys and values are used but not stored (the stale-cache fault)."""
        model, t, offset = self.model, self.t, self.offset
        pe = model.positions(t + offset, 1)
        z = z + pe[:, None, :] if pe is not None else z
        z = model.embedding.finish(z, model.embedded) if model.embedded else z
        for blk, cache, cross in zip(model.blocks, self.caches, self.crosses, strict=True):

            def attention(u: Array, blk=blk, cache=cache) -> Array:
                Q, K, V = model.qkv(blk, u)  # each (b, H, m, 1)
                model.rotate(Q, K, t + offset, key_start=t, blk=blk)  # the key is cached already turned
                stored = cache.store(*model.attention.cache_entries(blk, u, K, V), keep)  # t + 1, or w with a window
                K_all, V_all = model.attention.keys_values(blk, *stored)  # (b, G, m, t + 1): latents expanded
                first_key = t + 1 - K_all.shape[-1]  # (a window keeps the latest keys only)
                heads = model.attend(Q, K_all, V_all, causal=False, positions=(t + offset, first_key), sinks=blk.sinks)
                return model.project(blk, heads)

            reads = None
            if cross is not None:
                c, keys = cross
                reads = (lambda u, c=c, keys=keys: model.cross_attention(c, u, keys), c.norm)
            z = model.apply_block(blk, z, attention, reads)
        self.t += 1
        return model.finish(z)


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
