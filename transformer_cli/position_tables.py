"""The positions' fixed tables, made in float64: the sinusoids added to the columns (Vaswani's, fairseq's), ALiBi's
slopes, T5's relative buckets. kernels.py re-exports them (kernels.sinusoidal_positions, ...)."""

from __future__ import annotations

import math

import numpy as np

Array = np.ndarray


def sinusoidal_positions(d: int, n: int) -> Array:
    """PE[2i, t] = sin(t / 10000^(2i/d)), PE[2i+1, t] = cos(t / 10000^(2i/d)): (d, n); odd d ends on a sine."""
    rows = np.arange(d)
    freq = 10000.0 ** (-(2 * (rows // 2)) / d)  # (d,)
    angle = freq[:, None] * np.arange(n)[None, :]  # (d, n)
    return np.where(rows[:, None] % 2 == 0, np.sin(angle), np.cos(angle))


def fairseq_positions(d: int, n: int) -> Array:
    """fairseq's (tensor2tensor's) table, as M2M-100 and NLLB add it: the first d/2 rows sin(t f_k), the next d/2
    cos(t f_k), f_k = 10000^(-k / (d/2 - 1)); a zero row last for odd d: (d, n)."""
    half = d // 2
    freq = np.exp(np.arange(half) * -(np.log(10000.0) / (half - 1)))
    angle = freq[:, None] * np.arange(n)[None, :]  # (half, n)
    return np.concatenate([np.sin(angle), np.cos(angle), np.zeros((d - 2 * half, n))])


def alibi_slopes(H: int) -> Array:
    """ALiBi's per-head slopes (Press et al. 2022, as BLOOM computes them): for H a power of two, 2^(-8h/H) for
    h = 1 .. H; otherwise those of the largest power of two below H, then every other slope of twice as many
    heads. In float64: (H,)."""
    top = 2 ** math.floor(math.log2(H))
    slopes = [2.0 ** (-8.0 * h / top) for h in range(1, top + 1)]
    extra = [2.0 ** (-8.0 * h / (2 * top)) for h in range(1, 2 * min(top, H - top), 2)]
    return np.array(slopes + extra, dtype=np.float64)


def relative_buckets(lags: Array, buckets: int, max_distance: int, bidirectional: bool) -> Array:
    """T5's bucket of each key-minus-query distance (any integer array) -> bucket indices, same shape.

    Unmasked (an encoder): half the buckets for keys after the query, half for keys before. Within a half, the
    first half of its buckets are exact distances 0, 1, ...; the rest grow logarithmically up to max_distance
    (farther keys share the last). Causal: only keys before the query count, later ones fall in bucket 0. The
    logarithm is taken in float32, as T5 (mesh-tensorflow and transformers) computes it, so that distances on a
    bucket boundary fall where they do there.
    """
    lags = np.asarray(lags, dtype=np.int64)
    out = np.zeros(lags.shape, dtype=np.int64)
    if bidirectional:
        buckets //= 2
        out += (lags > 0) * buckets
        distance = np.abs(lags)
    else:
        distance = np.maximum(-lags, 0)
    exact = buckets // 2
    far = np.maximum(distance, exact).astype(np.float32)  # the logarithmic buckets (the others are exact)
    ratio = np.log(far / np.float32(exact)) / np.float32(math.log(max_distance / exact))
    large = np.minimum(exact + (ratio * np.float32(buckets - exact)).astype(np.int64), buckets - 1)
    return out + np.where(distance < exact, distance, large)


__all__ = ["alibi_slopes", "fairseq_positions", "relative_buckets", "sinusoidal_positions"]
