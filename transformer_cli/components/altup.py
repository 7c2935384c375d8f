"""Gemma 3n's block: AltUp's K streams around a sandwich block, and Laurel's low-rank residual (spec/altup_keys.py).

The pass carries K streams of d rows, S_0 .. S_{K-1} (K d rows in all). Before block 0, S_0 is the embedded
column x and S_j its projection W_in_j x brought to x's root mean square. Each block, with a the active stream:

    route(y)  = tanh(W_router (RMSNorm(y) / d))                            (K,) per token
    predict   P_i = S_i + sum_j C_ij S_j,   C = W_predict route(S_a)       (a K x K mix per token)
    x         = N1(P_a)
    laurel    = x + N_L(W_right W_left x)                                  (Laurel, rank R)
    A         = (P_a + N1o(Attn(x)) + laurel) / sqrt(2)                    (without Laurel: P_a + N1o(Attn(x)))
    O         = A + N2o(FF(N2(A)))                                         (the sandwich's feedforward)
    correct   S_i = P_i + (1 + W_correct route(O))_i (O - P_a)             (every stream, by the innovation)

and with per-layer inputs (ple_dim) the block then adds the per-layer input's output of S_a * scale (altup.scale,
altup_correct_scale) to the streams 1 .. K-1 (stream 0 never, whatever a is: transformers' indices). After the last
block the head reads the mean of S_0 and each W_out_j S_j brought to S_0's root mean square. Everything is per
token: causality, equivariance and decoding are the sublayers' (the streams are K d rows of each column).
"""

from __future__ import annotations

import math

import numpy as np

from .. import kernels
from .base import Component, Pairs, Tensor, Term
from .norm import RMS_PER_ENTRY, norm_kind

KIND = "altup"
FLOOR = 1e-5  # the least mean square a projected stream is divided by (transformers' clamp)
TANH_PER_ENTRY = 9  # as gelu's tanh form


class AltUp(Component):
    """A block's part: the active stream's scale (d,), the correction (K, K) and prediction (K^2, K) coefficients'
    projections, the router (K, d) and its norm (d,)."""

    def tensors(self, prefix: str) -> list[Tensor]:
        K, d, p = self.spec.altup or 0, self.spec.d, prefix + "altup."
        gains = [Tensor(p + f"router_norm.{g}", (d,), KIND) for g in norm_kind(self.spec).params]
        return [
            Tensor(p + "scale", (d,), KIND),
            Tensor(p + "W_correct", (K, K), KIND),
            Tensor(p + "W_predict", (K * K, K), KIND),
            Tensor(p + "W_router", (K, d), KIND),
            *gains,
        ]

    def terms(self) -> list[Term]:
        K, d = self.spec.altup or 0, self.spec.d
        return [Term("2d + K^2 + K^3 + Kd (altup)", 2 * d + K * K + K**3 + K * d, "block")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        """Two routings (the norm, the router's product, /d and tanh), the coefficients' products, the K x K mix,
        and the correction of K streams."""
        K, d = self.spec.altup or 0, self.spec.d
        route = RMS_PER_ENTRY * d + d + 2 * K * d + TANH_PER_ENTRY * K
        per_token = 2 * route + 2 * K**3 + 2 * K * K + 2 * K * K * d + 3 * K * d + 2 * d
        return {"altup": self.spec.N * per_token * b * n}


class AltUpStreams(Component):
    """The model's part: the K - 1 projections making the streams from the embedded column (W_in) and back before
    the head (W_out), each (d, d), stacked (K - 1, d, d)."""

    where = "input"

    def tensors(self, prefix: str) -> list[Tensor]:
        K, d = self.spec.altup or 0, self.spec.d
        return [Tensor(f"altup.W_{x}", (K - 1, d, d), KIND) for x in ("in", "out")] if K > 1 else []

    def terms(self) -> list[Term]:
        K, d = self.spec.altup or 0, self.spec.d
        return [Term("2 (K - 1) d^2", 2 * (K - 1) * d * d, "model")] if K > 1 else []

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        K, d = self.spec.altup or 0, self.spec.d
        matched = 2 * (K - 1) * (2 * d * d + 3 * d) + 2 * 2 * d  # products, mean squares and scales; targets
        return {"altup": (matched + K * d) * b * n}  # (and the streams' mean)


class Laurel(Component):
    """A block's low-rank residual: W_left (R, d), W_right (d, R) and the norm of their product (d,)."""

    def tensors(self, prefix: str) -> list[Tensor]:
        R, d, p = self.spec.laurel_rank or 0, self.spec.d, prefix + "laurel."
        gains = [Tensor(p + f"norm.{g}", (d,), "laurel") for g in norm_kind(self.spec).params]
        return [Tensor(p + "W_left", (R, d), "laurel"), Tensor(p + "W_right", (d, R), "laurel"), *gains]

    def terms(self) -> list[Term]:
        R, d = self.spec.laurel_rank or 0, self.spec.d
        return [Term("2dR + d (laurel)", 2 * d * R + d, "block")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        R, d = self.spec.laurel_rank or 0, self.spec.d
        return {"laurel": self.spec.N * (4 * d * R + RMS_PER_ENTRY * d + 3 * d) * b * n}


def altup_parts(spec) -> list[Component]:
    """A block's Gemma 3n parts (none without altup)."""
    return ([AltUp(spec)] if spec.altup else []) + ([Laurel(spec)] if spec.laurel_rank else [])


def matched(Y: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Y (d, b, n) brought to the root mean square `target` (b, n) of each column, in place."""
    square = np.maximum(np.einsum("i...,i...->...", Y, Y) * (1.0 / Y.shape[0]), FLOOR)
    Y *= target / np.sqrt(square)
    return Y


def _rms(X: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("i...,i...->...", X, X) * (1.0 / X.shape[0]))


class AltUpState:
    """A model's streams ready for the pass: its projections and each block's coefficients, router and Laurel."""

    def __init__(self, spec, get) -> None:
        self.spec, self.K, self.a, self.norm = spec, spec.altup, spec.altup_active, norm_kind(spec)
        self.W_in = get("altup.W_in") if self.K > 1 else np.empty((0,))  # (K - 1, d, d)
        self.W_out = get("altup.W_out") if self.K > 1 else np.empty((0,))
        self.blocks = [self._prepare(lambda name, i=i: get(f"blocks.{i}.{name}")) for i in range(spec.N)]

    def _prepare(self, get) -> dict:
        out = {key: get(f"altup.W_{key}") for key in ("correct", "predict", "router")}
        out |= {"scale": get("altup.scale").reshape(-1, 1, 1)}
        out["router_norm"] = self.norm.stacked(lambda g: get(f"altup.router_norm.{g}"))
        if self.spec.laurel_rank:
            out["laurel"] = (get("laurel.W_left"), get("laurel.W_right"))
            out["laurel_norm"] = self.norm.stacked(lambda g: get(f"laurel.norm.{g}"))
        return out

    def stack(self, X: np.ndarray) -> np.ndarray:
        """The embedded columns X (d, b, n) as the K streams, (K d, b, n)."""
        d = X.shape[0]
        S = np.empty((self.K, *X.shape), dtype=X.dtype)
        S[0] = X
        target = _rms(X)
        for j in range(1, self.K):
            S[j] = matched(kernels.linear(self.W_in[j - 1], X), target)
        return S.reshape(self.K * d, *X.shape[1:])

    def unstack(self, Z: np.ndarray) -> np.ndarray:
        """The streams (K d, b, n) as the columns the final norm reads: their mean, each brought to S_0's RMS."""
        S = Z.reshape(self.K, -1, *Z.shape[1:])
        target, out = _rms(S[0]), S[0].copy()
        for j in range(1, self.K):
            out += matched(kernels.linear(self.W_out[j - 1], S[j]), target)
        out *= out.dtype.type(1.0 / self.K)
        return out

    def _route(self, w: dict, Y: np.ndarray) -> np.ndarray:
        """tanh(W_router (RMSNorm(Y) / d)): (K, b, n)."""
        normed = self.norm.apply(Y, w["router_norm"]) * Y.dtype.type(1.0 / Y.shape[0])
        return np.tanh(kernels.linear(w["router"], normed))

    def block(self, i: int, Z: np.ndarray, attention, feedforward, normed, norms: tuple, per_layer) -> np.ndarray:
        """Block i on the streams Z (K d, b, n): predict, the sublayers on the active stream, correct, and the
        per-layer input (`per_layer`: (the model's PerLayerState, this block's input), or None)."""
        K, a, w = self.K, self.a, self.blocks[i]
        S = Z.reshape(K, -1, *Z.shape[1:])
        C = kernels.linear(w["predict"], self._route(w, S[a])).reshape(K, K, *Z.shape[1:])
        P = S + np.einsum("ijbn,jdbn->idbn", C, S)
        active = P[a]
        x = normed(active, norms[0])
        joined = active + normed(attention(x), norms[2])
        if "laurel" in w:  # (without it, the plain sandwich's sum)
            W_left, W_right = w["laurel"]
            joined += x
            joined += self.norm.apply(kernels.linear(W_right, kernels.linear(W_left, x)), w["laurel_norm"])
            joined /= math.sqrt(2.0)
        out = joined + normed(feedforward(normed(joined, norms[1])), norms[3])
        weights = kernels.linear(w["correct"], self._route(w, out))
        weights += 1.0
        P += weights[:, None] * (out - active)  # (active: P[a] before its own correction)
        if per_layer is not None:
            state, ple = per_layer
            x = P[a] * w["scale"] if self.spec.altup_correct_scale else P[a].copy()
            state.add(i, x, ple, into=P[1:])
        return P.reshape(Z.shape)


__all__ = ["AltUp", "AltUpState", "AltUpStreams", "Laurel", "altup_parts"]
