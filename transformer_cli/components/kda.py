"""Kimi Delta Attention (Kimi-Linear's KimiDeltaAttention): Gated DeltaNet (deltanet.py) whose decay is a channel's
own, not a head's.

Of each column x the block makes q, k, v of H = linear_v_heads heads of D = linear_v_dim (= the key heads'), each
through its own depthwise causal convolution of K taps and silu; q and k made unit length (q times D^-1/2); per
head a write strength beta = sigmoid(W_b x); per channel a decay g = -exp(A_log_h) softplus(W_fb W_fa x + dt_bias)
(or, with linear_decay_bound B, GLM-5-Next's g = -B sigmoid(exp(A_log_h) (W_fb W_fa x + dt_bias)))
(a low-rank projection of rank D); and a gate W_gb W_ga x. Each head keeps a state S (D x D):

    S <- Diag(exp(g_t)) S;   S <- S + k_t (beta_t (v_t - S^T k_t))^T;   o_t = S^T q_t

then o is normalised per head (one gain of D shared by the heads) times sigmoid(gate), and W_out makes the column.
The prefill runs the chunked form: within a chunk the decays between columns are a (Q, Q, D) array, the writes'
corrections one triangular solve, between chunks the state carries over; a decoding step applies the recurrence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import kernels
from ..spec.choices import ATTENTIONS
from .base import Pairs, Tensor, Term
from .deltanet import CHUNK, L2_EPS, GatedDeltaNet
from .mamba2 import SILU_PER_ENTRY, SsmState, softplus
from .short_conv import ShortConv

DECAY_BLOCK = 16  # the columns of a chunk whose decays per channel `decayed` makes at once


@dataclass
class KdaWeights:
    W_in: np.ndarray  # (3 H D + D + H + D, d): rows [q; k; v; the decay's low rank; b; the gate's low rank]
    kernel: np.ndarray  # (3 H D, K)
    W_fb: np.ndarray  # (H D, D)
    dt_bias: np.ndarray  # (H D, 1, 1)
    A: np.ndarray  # (H,): -exp(A_log)
    W_gb: np.ndarray  # (H D, D)
    gamma: np.ndarray  # (D, 1, 1)
    W_out: np.ndarray  # (d, H D)


@ATTENTIONS.register("kda")
class KimiDeltaAttention(GatedDeltaNet):
    """Kimi Delta Attention: linear_v_heads H of linear_v_dim D (the key heads the same), a kernel of conv_kernel K."""

    def tensors(self, prefix: str) -> list[Tensor]:
        _, _, H, D = self.sizes
        d, K, p, kind = self.spec.d, self.spec.conv_kernel, prefix + "kda.", "linear attention"
        rows = (("W_q", H * D), ("W_k", H * D), ("W_v", H * D), ("W_fa", D), ("W_b", H), ("W_ga", D))
        out = [Tensor(p + name, (n, d), kind) for name, n in rows]
        out += [Tensor(p + f"{x}.kernel", (H * D, 1, K), kind) for x in "qkv"] + [Tensor(p + "W_fb", (H * D, D), kind)]
        out += [Tensor(p + "dt_bias", (H * D,), kind), Tensor(p + "A_log", (H,), kind)]
        out += [Tensor(p + "W_gb", (H * D, D), kind), Tensor(p + "norm.gamma", (D,), kind)]
        return out + [Tensor(p + "W_out", (d, H * D), kind)]

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        """Gated DeltaNet's (nk, dk, nv, dv): H heads of D for queries and keys as for values (its cache, its
        state's bytes and its convolution's width are then Gated DeltaNet's)."""
        H, D = self.spec.linear_v_heads or 1, self.spec.linear_v_dim or 1
        return H, D, H, D

    def terms(self) -> list[Term]:
        _, _, H, D = self.sizes
        d, K = self.spec.d, self.spec.conv_kernel
        value = (4 * H * D + 2 * D + H) * d + 2 * H * D * D + 3 * K * H * D + H * D + H + D
        return [Term("(4 H D + 2 D + H) d + 2 H D^2 + 3 K H D + H D + H + D", value, "block")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        _, _, H, D = self.sizes
        d, K, tokens, N = self.spec.d, self.spec.conv_kernel, b * n, self.spec.N
        return {
            "mixer projections": N * 2 * ((4 * H * D + 2 * D + H) * d + 2 * H * D * D) * tokens,
            "convolution": N * (2 * K + SILU_PER_ENTRY) * self.conv_dim * tokens,
            "delta rule": N * H * D * D * 8 * tokens,  # decay, S^T k, the update, S^T q
            "gates": N * (SILU_PER_ENTRY + 5) * H * D * tokens,
        }

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        _, _, H, D = self.sizes
        tokens, N = b * n, self.spec.N
        return {
            "linear layers": N * ((4 * H * D + 2 * D + H) * self.spec.d + 2 * H * D * D) * tokens,
            "convolution": N * self.spec.conv_kernel * self.conv_dim * tokens,
            "delta rule": N * 3 * H * D * D * tokens,
        }

    def prepare(self, get: Callable[[str], np.ndarray]) -> KdaWeights:  # type: ignore[override]
        names = ("W_q", "W_k", "W_v", "W_fa", "W_b", "W_ga")
        return KdaWeights(
            W_in=np.concatenate([get(f"kda.{name}") for name in names]),
            kernel=np.concatenate([get(f"kda.{x}.kernel").reshape(-1, self.spec.conv_kernel) for x in "qkv"]),
            W_fb=get("kda.W_fb"),
            dt_bias=get("kda.dt_bias").reshape(-1, 1, 1),
            A=-np.exp(get("kda.A_log").reshape(-1)),
            W_gb=get("kda.W_gb"),
            gamma=get("kda.norm.gamma").reshape(-1, 1, 1),
            W_out=get("kda.W_out"),
        )

    def mix(  # type: ignore[override]
        self,
        model: Any,
        i: int,
        w: KdaWeights,
        X: np.ndarray,
        start: int = 0,
        cache: SsmState | None = None,
        **options: Any,
    ) -> np.ndarray:
        """The sublayer without its residual: (d, b, n) -> (d, b, n)."""
        _, _, H, D = self.sizes
        _, b, n = X.shape
        projected = kernels.linear(w.W_in, X)
        c = self.conv_dim
        qkv, low, rest = projected[:c], projected[c : c + D], projected[c + D :]
        beta = 1.0 / (1.0 + np.exp(-rest[:H]))  # (H, b, n)
        f = (kernels.linear(w.W_fb, low) + w.dt_bias).reshape(H, D, b, n)
        if self.spec.linear_decay_bound is None:
            g = softplus(f) * w.A[:, None, None, None]
        else:  # (GLM-5-Next's: -B sigmoid(exp(A_log) f), so that no decay passes e^-B)
            g = -self.spec.linear_decay_bound / (1.0 + np.exp(w.A[:, None, None, None] * f))
        gate = kernels.linear(w.W_gb, rest[H:]).reshape(H, D, b, n)
        mixed = kernels.ACTIVATIONS["silu"](ShortConv.through(w.kernel, qkv, None if cache is None else cache.conv))
        q, k, v = (mixed[j * H * D : (j + 1) * H * D].reshape(H, D, b, n).transpose(2, 0, 3, 1) for j in range(3))
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + L2_EPS) * D**-0.5  # (b, H, n, D)
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + L2_EPS)
        beta, g = beta.transpose(1, 0, 2), g.transpose(2, 0, 3, 1)  # (b, H, n), (b, H, n, D)
        if cache is not None and n == 1:
            o = self._step(cache.S, q[:, :, 0], k[:, :, 0], v[:, :, 0], beta[..., 0], g[:, :, 0], cache.keep)
            o = o[:, :, None]
        else:
            o, final = self.chunked(q, k, v, beta, g)
            if cache is not None:
                cache.S[...] = final
        o = o.transpose(1, 3, 0, 2)  # (H, D, b, n)
        normed = o / np.sqrt(np.mean(o * o, axis=1, keepdims=True) + self.spec.norm_eps) * w.gamma
        gated = normed / (1.0 + np.exp(-gate))
        return kernels.linear(w.W_out, gated.reshape(H * D, b, n))

    @staticmethod
    def _step(S, q, k, v, beta, g, keep: bool) -> np.ndarray:
        """One column: S (b, H, D, D); q, k, v (b, H, D), beta (b, H), g (b, H, D) -> o (b, H, D)."""
        new = S * np.exp(g)[..., :, None]
        memory = np.einsum("bhkv,bhk->bhv", new, k)
        new = new + k[..., :, None] * ((v - memory) * beta[..., None])[..., None, :]
        if keep:
            S[...] = new
        return np.einsum("bhkv,bhk->bhv", new, q)

    @staticmethod
    def chunked(q, k, v, beta, g, chunk: int = CHUNK) -> tuple[np.ndarray, np.ndarray]:
        """The delta rule from a zero state over q, k, v (b, H, n, D), beta (b, H, n), g (b, H, n, D), a chunk of Q
        columns at a time: -> o (b, H, n, D) and the final state (b, H, D, D)."""
        b, h, n, dk = k.shape
        S = np.zeros((b, h, dk, v.shape[-1]), dtype=v.dtype)
        o = np.empty_like(v)
        for first in range(0, n, chunk):
            cols = slice(first, min(first + chunk, n))
            qc, kc, vc, bc, gc = q[:, :, cols], k[:, :, cols], v[:, :, cols], beta[:, :, cols], g[:, :, cols]
            Q = kc.shape[2]
            cum = np.cumsum(gc, axis=2)  # (b, h, Q, D)
            kb, vb = kc * bc[..., None], vc * bc[..., None]
            A = decayed(kb, kc, cum) * np.tri(Q, k=-1)
            T = np.linalg.solve(np.eye(Q) + A, np.broadcast_to(np.eye(Q), A.shape))
            fresh = np.matmul(T, vb) - np.matmul(np.matmul(T, kb * np.exp(cum)), S)
            scores = decayed(qc, kc, cum)  # (the diagonal's decay: 1)
            o[:, :, cols] = np.matmul(qc * np.exp(cum), S) + np.matmul(scores, fresh)
            last = cum[:, :, -1:]  # (b, h, 1, D)
            S = S * np.exp(last).swapaxes(-1, -2) + np.matmul((kc * np.exp(last - cum)).swapaxes(-1, -2), fresh)
        return o, S

    def transient_bytes(self, b: int, n: int, keys: int, s: int, fused: bool) -> int:
        """Gated DeltaNet's, and a block's decays per channel (16, 16, D) a head beside a chunk's two (Q, Q)
        matrices (`decayed`)."""
        _, _, H, D = self.sizes
        chunk, block = min(n, CHUNK), min(n, DECAY_BLOCK)
        return super().transient_bytes(b, n, keys, s, fused) + b * H * (block * block * D + 2 * chunk * chunk) * s


def decayed(X: np.ndarray, K: np.ndarray, cum: np.ndarray, block: int = DECAY_BLOCK) -> np.ndarray:
    """M[t, j] = sum_d exp(cum[t, d] - cum[j, d]) X[t, d] K[j, d] for j <= t (0 above), of (b, h, Q, D) arrays:
    the decay from each column j to each later t, per channel. Blocks of `block` columns: between two blocks a
    product of matrices, each side decayed to the end of the earlier block (both factors at most 1: no overflow);
    within a block the (block, block, D) decays themselves."""
    b, h, Q, D = X.shape
    M = np.zeros((b, h, Q, Q), dtype=X.dtype)
    lower = np.tril(np.ones((block, block), dtype=bool))[..., None]
    for i0 in range(0, Q, block):
        rows = slice(i0, min(i0 + block, Q))
        c_i = cum[:, :, rows]
        n_i = c_i.shape[2]
        gaps = c_i[:, :, :, None, :] - c_i[:, :, None, :, :]  # (b, h, t, j, D) within the block
        decay = np.exp(np.where(lower[:n_i, :n_i], gaps, -np.inf))
        M[:, :, rows, rows] = np.einsum("bhtjd,bhtd,bhjd->bhtj", decay, X[:, :, rows], K[:, :, rows], optimize=True)
        for j0 in range(0, i0, block):
            cols = slice(j0, j0 + block)
            end = cum[:, :, j0 + block - 1 : j0 + block]  # (b, h, 1, D): the earlier block's last column
            left = X[:, :, rows] * np.exp(c_i - end)
            right = K[:, :, cols] * np.exp(end - cum[:, :, cols])
            M[:, :, rows, cols] = np.matmul(left, right.swapaxes(-1, -2))
    return M


__all__ = ["KimiDeltaAttention"]
