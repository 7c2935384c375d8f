"""Cross-attention, the encoder-decoder's third sublayer: queries from the decoder's columns, keys and values
from the encoder's output (the memory), no mask and no positions.

With H_c = cross_H heads of size m_c = cross_m: Q = W_Q X + b_Q (H_c m_c rows), K = W_K M + b_K and
V = W_V M + b_V for the memory M (d, b, n_src), each head's V Softmax(scale K^T Q), and W_O over the heads.
The keys and values depend on the memory alone, so a decoder computes them once per source (and a decoding
loop keeps them: the cross-attention's cache).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..kernels import Array, linear
from ..spec.definition import Spec


@dataclass
class Cross:
    """One decoder block's cross-attention weights, stacked like the self-attention's; vectors as (k, 1, 1)."""

    W_q: Array  # (H_c m_c, d)
    b_q: Array | None
    W_kv: Array  # (2 G_c m_c, d_enc): W_K over W_V
    b_kv: Array | None
    W_O: Array  # (d, H_c m_c)
    b_O: Array | None
    norm: tuple[Array, ...] | None  # the cross norm's parameters as (d, 1, 1) columns
    norm_out: tuple[Array, ...] | None = None  # the sandwich's norm of its output (cross_norm_out)


def stack_cross(spec: Spec, w, i: int, dtype: np.dtype, norm) -> Cross:
    """Gather block i's cross-attention weights (blocks.{i}.cross.*, blocks.{i}.cross_norm.*)."""
    p, d = f"blocks.{i}.", spec.d
    H, G, m = spec.cross_heads, spec.cross_kv_heads, spec.cross_size

    def get(name: str) -> Array:
        return np.asarray(w[p + name], dtype=dtype)

    W_q = np.ascontiguousarray(get("cross.W_Q").reshape(H * m, d))
    W_kv = np.concatenate([get(f"cross.{x}").reshape(G * m, spec.source_d) for x in ("W_K", "W_V")])
    W_O = np.ascontiguousarray(get("cross.W_O").transpose(1, 0, 2).reshape(d, H * m))  # (H, d, m) -> (d, Hm)
    b_q = b_kv = b_O = None
    if spec.has_cross_bias:
        b_q = get("cross.b_Q").reshape(-1, 1, 1)
        b_kv = np.concatenate([get(f"cross.{x}").reshape(-1) for x in ("b_K", "b_V")]).reshape(-1, 1, 1)
        b_O = get("cross.b_O").reshape(-1, 1, 1)
    params = None if spec.norm == "none" else norm.stacked(lambda g: get(f"cross_norm.{g}"))
    out = norm.stacked(lambda g: get(f"cross_norm_out.{g}")) if spec.norm == "sandwich" else None
    return Cross(W_q, b_q, W_kv, b_kv, W_O, b_O, params, out)


def cross_scale(spec: Spec) -> float:
    """The score scale of cross-attention: the spec's, with 1/sqrt(m) taken over the cross heads' size."""
    return 1.0 / math.sqrt(spec.cross_size) if spec.scale == "sqrt" else spec.score_scale


def memory_keys(cross: Cross, M: Array, H: int) -> tuple[Array, Array]:
    """K and V of the memory M (d_enc, b, n_src): each (b, G_c, m_c, n_src) for H = G_c, views of one product."""
    _, b, n = M.shape
    KV = linear(cross.W_kv, M)
    if cross.b_kv is not None:
        KV += cross.b_kv
    KV = KV.reshape(2, H, -1, b, n).transpose(0, 3, 1, 2, 4)  # (2, b, H, m, n)
    return KV[0], KV[1]


def queries(cross: Cross, X: Array, H: int) -> Array:
    """Q of the decoder's columns X (d, b, n): (b, H_c, m_c, n)."""
    _, b, n = X.shape
    Q = linear(cross.W_q, X)
    if cross.b_q is not None:
        Q += cross.b_q
    return Q.reshape(H, -1, b, n).transpose(2, 0, 1, 3)


def project(cross: Cross, heads: Array) -> Array:
    """sum_h W_O^h heads_h (+ b_O): (H_c, m_c, b, n) -> (d, b, n)."""
    H, m, b, n = heads.shape
    out = linear(cross.W_O, heads.reshape(H * m, b, n))
    if cross.b_O is not None:
        out += cross.b_O
    return out


class Memory:
    """The encoder's output M (d_enc, b, n_src) a decoder's cross-attention reads, and each block's keys and values
    of it (memory_keys: `heads` the key/value heads G_c), made when the block first asks: kept with `keep` (a
    decoder's steps read them again, the cross-attention's cache), else made by each pass and dropped after its
    block."""

    def __init__(self, M: Array, heads: int, keep: bool = False):
        self.M, self.heads, self.keep = M, heads, keep
        self.found: dict[int, tuple[Array, Array]] = {}

    def keys(self, i: int, cross: Cross) -> tuple[Array, Array]:
        """Block i's keys and values of the memory, each (b, G_c, m_c, n_src)."""
        if i in self.found:
            return self.found[i]
        keys = memory_keys(cross, self.M, self.heads)
        if self.keep:
            self.found[i] = keys
        return keys
