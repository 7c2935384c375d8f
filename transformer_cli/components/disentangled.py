"""DeBERTa's disentangled attention (positional: disentangled): besides content to content, each score gets
content to position and position to content, from one table R (d, 2k) of relative positions that the blocks share,
normalised once, and projected by each block's own W_Q and W_K (with their biases: DeBERTa-v3's share_att_key):

    score(q, s) = scale (Q_q . K_s + Q_q . Kr_idx(q, s) + K_s . Qr_idx(q, s)),  idx = clamp(bucket(q - s) + k)

with scale = 1 / sqrt(m f), f one plus the position terms (`rel_terms`: c2p, p2c or both). The buckets are
DeBERTa's: exact below k / 2 either way, logarithmic up to rel_max_distance (computed in float32 as transformers
computes them, so the integer buckets agree). It depends on q - s only: relative, and it tells positions apart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..spec.choices import POSITIONALS
from .base import Pairs, Tensor, Term
from .norm import norm_kind
from .positional import Positions


def buckets(lags: np.ndarray, k: int, farthest: int) -> np.ndarray:
    """make_log_bucket_position of q - s (int64): lags within k / 2 as they are, farther ones
    sign * (ceil(log(|lag| / mid) / log((farthest - 1) / mid) (mid - 1)) + mid), in float32."""
    mid = k // 2
    sign = np.sign(lags)
    near = (lags < mid) & (lags > -mid)
    far = np.where(near, mid - 1, np.abs(lags)).astype(np.float32)
    ratio = np.log(np.float32((farthest - 1) / mid))
    logged = np.ceil(np.log(far / np.float32(mid)) / ratio * np.float32(mid - 1)) + np.float32(mid)
    return np.where(far <= mid, lags.astype(np.float32), logged * sign).astype(np.int64)


@POSITIONALS.register("disentangled")
class Disentangled(Positions):
    where = "input"

    def __init__(self, spec):
        super().__init__(spec)
        self.norm = norm_kind(spec)
        self.terms_ = {"both": ("c2p", "p2c"), "c2p": ("c2p",), "p2c": ("p2c",)}[spec.rel_terms]

    def tensors(self, prefix: str) -> list[Tensor]:
        d, k = self.spec.d, self.spec.rel_buckets
        norms = [Tensor(prefix + f"positional.norm.{g}", (d,), "positional") for g in self.norm.params]
        return [Tensor(prefix + "positional.R", (d, 2 * k), "positional"), *norms]

    def terms(self) -> list[Term]:
        d, k = self.spec.d, self.spec.rel_buckets
        return [
            Term("2 buckets d", 2 * k * d, "model"),
            Term(f"{len(self.norm.params)}d", len(self.norm.params) * d, "model"),
        ]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        """Per block: R through W_Q or W_K (2k columns), its products with every query or key, one add a score."""
        H, m, d, k, t = self.spec.H, self.spec.m, self.spec.d, self.spec.rel_buckets, len(self.terms_)
        per_block = t * (2 * H * m * d * 2 * k + 2 * H * m * 2 * k * b * n + H * pairs.count)
        return {"relative position bias": self.spec.N * per_block}

    def saved_bytes(self, n: int, s: int, frozen: bool = False) -> int:
        return 8 * n * n  # the (n, n) int64 indices of the gathers

    def breaks_equivariance(self) -> str | None:
        return "disentangled relative positions"

    def relative_positions(self) -> str | None:
        return "the disentangled scores depend on q - s only"

    def load(self, get: Callable[[str], np.ndarray], dtype: np.dtype) -> None:
        super().load(get, dtype)
        params = self.norm.stacked(lambda g: get(f"positional.norm.{g}"))
        self.R = self.norm.apply(np.asarray(get("positional.R"), dtype=dtype)[:, None, :], params)  # (d, 1, 2k)

    def index(self, first_query: int, queries: int, first_key: int, keys: int) -> np.ndarray:
        """Each (query, key)'s row of the table: clamp(bucket(q - s) + k, 0, 2k - 1), (queries, keys)."""
        lags = np.arange(first_query, first_query + queries)[:, None] - np.arange(first_key, first_key + keys)[None]
        k = self.spec.rel_buckets
        return np.clip(buckets(lags, k, self.spec.rel_max_distance) + k, 0, 2 * k - 1)

    def content_bias(self, attention: Any, w: Any, Q: np.ndarray, K: np.ndarray, first: int, first_key: int):
        """The position terms of one block's scores, scaled, for kernels.attend's chunks: (i, q0, c, k0, k) ->
        (H, c, k). Q (b, H, m, n_q), K (b, H, m, n_k) as the block projected them."""
        Qr, Kr, _ = attention.qkv(w, self.R)  # (1, H, m, 2k): the table through the block's W_Q, W_K, biases
        scale = Q.dtype.type(self.spec.score_scale)
        C = np.einsum("bhmq,hms->bhqs", Q, Kr[0]) * scale if "c2p" in self.terms_ else None
        P = np.einsum("bhmk,hms->bhks", K, Qr[0]) * scale if "p2c" in self.terms_ else None
        rows = self.index(first, Q.shape[-1], first_key, K.shape[-1])

        def bias(i: int, q0: int, c: int, k0: int, k: int) -> np.ndarray:
            at = rows[q0 : q0 + c, k0 : k0 + k]
            out = np.zeros((Q.shape[1], c, k), dtype=Q.dtype)
            if C is not None:
                out += np.take_along_axis(C[i, :, q0 : q0 + c], at[None], axis=-1)
            if P is not None:
                out += np.take_along_axis(P[i, :, k0 : k0 + k], at.T[None], axis=-1).transpose(0, 2, 1)
            return out

        return bias


__all__ = ["Disentangled", "buckets"]
