"""Autoregressive decoding: one new column at a time, each block attending to a key/value cache.

For a causal model this must reproduce the parallel forward pass over the known sequence (seed 001).
The two fault options exist to build the check's controls: a decoder with a stale cache or a wrong
position must be caught.
"""

from __future__ import annotations

import numpy as np

from .cross import memory_keys
from .transformer import Array, Transformer, from_columns, to_columns


def decode(
    model: Transformer,
    X: Array,
    position_offset: int = 0,
    stale_at: int | None = None,
    memory: Array | None = None,
) -> Array:
    """Run T column by column with a key/value cache: (d, n) or (b, d, n) -> same shape.

    An encoder-decoder's decoder reads the encoder's output `memory` ((d, n_src) or (b, d, n_src)): each block's
    cross-attention keys and values are made from it once, before the first step (the cross-attention's cache).

    position_offset: encode column t at position t + offset (a fault when not 0). With rotary positions the query
    turns by t + offset and its key by t: shifting both alike changes nothing, rotary scores depend on t - s only.
    stale_at: at step t = stale_at the new key and value are used but not stored (a fault).
    """
    X = np.asarray(X)
    Z, ndim = model.columns(X)  # (d, b, n); token ids are embedded
    window = model.spec.window
    cache: list[tuple[list[Array], list[Array]]] = [([], []) for _ in model.blocks]  # per block: K, V columns
    crosses = [None] * len(model.blocks)
    if memory is not None:  # per block: the memory's keys and values, once, and the sublayer that reads them
        M = to_columns(np.asarray(memory), model.dtype)
        crosses = [(c, memory_keys(c, M, model.spec.cross_heads)) for c in model.crosses]
    columns = []
    for t in range(Z.shape[-1]):
        z = Z[:, :, t : t + 1]  # (d, b, 1)
        pe = model.positions(t + position_offset, 1)
        z = z + pe[:, None, :] if pe is not None else z
        z = model.embedding.finish(z, model.embedded) if model.embedded else z
        for blk, (Ks, Vs), cross in zip(model.blocks, cache, crosses, strict=True):

            def attention(u: Array, blk=blk, Ks=Ks, Vs=Vs, t=t) -> Array:
                Q, K, V = model.qkv(blk, u)  # each (b, H, m, 1)
                model.rotate(Q, K, t + position_offset, key_start=t)  # the key is cached already turned
                K_all = np.concatenate([*Ks, K], axis=-1)  # (b, G, m, t + 1): every key up to now (w with a window)
                V_all = np.concatenate([*Vs, V], axis=-1)
                if t != stale_at:
                    Ks.append(K)
                    Vs.append(V)
                if window is not None:  # a sliding window: the next step needs only the w - 1 latest keys
                    del Ks[: max(0, len(Ks) - (window - 1))], Vs[: max(0, len(Vs) - (window - 1))]
                first_key = t + 1 - K_all.shape[-1]  # (a window keeps the latest keys only)
                heads = model.attend(Q, K_all, V_all, causal=False, positions=(t + position_offset, first_key))
                return model.project(blk, heads)

            reads = None
            if cross is not None:
                c, keys = cross
                reads = (lambda u, c=c, keys=keys: model.cross_attention(c, u, keys), c.norm)
            z = model.apply_block(blk, z, attention, reads)
        columns.append(model.finish(z))
    return from_columns(np.concatenate(columns, axis=-1), ndim)  # (d, b, n) -> the input's layout
