"""Autoregressive decoding: one new column at a time, each block attending to a key/value cache.

For a causal model this must reproduce the parallel forward pass over the known sequence (seed 001).
The two fault options exist to build the check's controls: a decoder with a stale cache or a wrong
position must be caught.
"""

from __future__ import annotations

import numpy as np

from .model import Array, Transformer


def decode(model: Transformer, X: Array, position_offset: int = 0, stale_at: int | None = None) -> Array:
    """Run T column by column with a key/value cache: (d, n) or (b, d, n) -> same shape.

    position_offset: encode column t at position t + offset (a fault when not 0).
    stale_at: at step t = stale_at the new key and value are used but not stored (a fault).
    """
    X3 = np.asarray(X, dtype=model.dtype)
    X3 = X3[None] if X3.ndim == 2 else X3  # (b, d, n)
    cache: list[tuple[list[Array], list[Array]]] = [([], []) for _ in model.blocks]  # per block: K, V columns
    columns = []
    for t in range(X3.shape[-1]):
        x = X3[:, :, t : t + 1]  # (b, d, 1)
        pe = model.positions(t + position_offset, 1)
        x = x + pe if pe is not None else x
        for blk, (Ks, Vs) in zip(model.blocks, cache, strict=True):

            def attention(z: Array, blk=blk, Ks=Ks, Vs=Vs, t=t) -> Array:
                Q, K, V = model.qkv(blk, z)  # each (b, H, m, 1)
                K_all = np.concatenate([*Ks, K], axis=-1)  # (b, H, m, t + 1): every key up to now
                V_all = np.concatenate([*Vs, V], axis=-1)
                if t != stale_at:
                    Ks.append(K)
                    Vs.append(V)
                return model.attend(blk, Q, K_all, V_all, None)[0]

            x = model.apply_block(blk, x, attention)
        columns.append(model.finish(x))
    Y = np.concatenate(columns, axis=-1)  # (b, d, n)
    return Y[0] if np.ndim(X) == 2 else Y
