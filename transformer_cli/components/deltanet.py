"""Gated DeltaNet, a linear attention with a delta rule, as a block's mixer (Qwen3-Next's and Qwen3.5's
Qwen3NextGatedDeltaNet).

Of each column the block makes queries and keys of nk heads of dk, values and a gate z of nv heads of dv, and per
value head a write strength b and a decay a. [q; k; v] go through a depthwise causal convolution of K taps and silu;
q and k are normalised to unit length per head (x / sqrt(|x|^2 + 1e-6)), q times dk^-1/2; each key head serves
nv / nk value heads. With beta = sigmoid(b) and g = -exp(A_log) softplus(a + dt_bias), each value head keeps a state
S (dk x dv):

    S <- exp(g_t) S;   S <- S + k_t (beta_t (v_t - S^T k_t))^T;   o_t = S^T q_t

then o times silu(z) is normalised per head (a gain of dv) and W_out makes the column. A prefill runs the chunked
form (transformers' torch_chunk_gated_delta_rule): within a chunk of Q columns the delta rule's corrections are one
triangular solve, between chunks the state carries over: a few products per chunk, never a loop over the columns.
A decoding step applies the recurrence once. Its state per sequence: the convolution's last K columns of [q; k; v]
and each value head's S (float32 in transformers' cache whatever the model's type, as in the plan).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import kernels
from ..spec.choices import ATTENTIONS
from .base import GgmlCache, Pairs, Tensor, Term
from .mamba2 import SILU_PER_ENTRY, STATE_BYTES, SsmState, softplus
from .mixer import RecurrentMixer
from .short_conv import ConvState, ShortConv

CHUNK = 64
L2_EPS = 1e-6  # transformers' l2norm of the queries and keys


@dataclass
class DeltaWeights:
    W_in: np.ndarray  # (2 nk dk + 2 nv dv + 2 nv, d): rows [q; k; v; z; b; a]
    kernel: np.ndarray  # (conv_dim, K)
    A: np.ndarray  # (nv,): -exp(A_log)
    dt_bias: np.ndarray  # (nv,)
    gamma: np.ndarray  # (dv, 1, 1)
    W_out: np.ndarray  # (d, nv dv)


@ATTENTIONS.register("deltanet")
class GatedDeltaNet(RecurrentMixer):
    """Gated DeltaNet: linear_k_heads nk of linear_k_dim dk, linear_v_heads nv of linear_v_dim dv, a kernel of
    conv_kernel K."""

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        """(nk, dk, nv, dv)."""
        s = self.spec
        return s.linear_k_heads or 1, s.linear_k_dim or 1, s.linear_v_heads or 1, s.linear_v_dim or 1

    @property
    def conv_dim(self) -> int:
        nk, dk, nv, dv = self.sizes
        return 2 * nk * dk + nv * dv

    def tensors(self, prefix: str) -> list[Tensor]:
        nk, dk, nv, dv = self.sizes
        d, K, p, kind = self.spec.d, self.spec.conv_kernel, prefix + "delta.", "linear attention"
        rows = (("W_q", nk * dk), ("W_k", nk * dk), ("W_v", nv * dv), ("W_z", nv * dv), ("W_b", nv), ("W_a", nv))
        out = [Tensor(p + name, (n, d), kind) for name, n in rows]
        out += [Tensor(p + "kernel", (self.conv_dim, 1, K), kind)]
        out += [Tensor(p + "A_log", (nv,), kind), Tensor(p + "dt_bias", (nv,), kind)]
        return out + [Tensor(p + "norm.gamma", (dv,), kind), Tensor(p + "W_out", (d, nv * dv), kind)]

    def terms(self) -> list[Term]:
        nk, dk, nv, dv = self.sizes
        d, K = self.spec.d, self.spec.conv_kernel
        value = (2 * nk * dk + 3 * nv * dv + 2 * nv) * d + K * self.conv_dim + 2 * nv + dv
        return [Term("(2 nk dk + 3 nv dv + 2 nv) d + K c + 2 nv + dv", value, "block")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        nk, dk, nv, dv = self.sizes
        d, K, tokens = self.spec.d, self.spec.conv_kernel, b * n
        rows = 2 * nk * dk + 3 * nv * dv + 2 * nv
        return {
            "mixer projections": self.spec.N * 2 * rows * d * tokens,
            "convolution": self.spec.N * (2 * K + SILU_PER_ENTRY) * self.conv_dim * tokens,
            "delta rule": self.spec.N * nv * dk * dv * 8 * tokens,  # decay, S^T k, the update, S^T q
            "gates": self.spec.N * (SILU_PER_ENTRY + 5) * nv * dv * tokens,
        }

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        nk, dk, nv, dv = self.sizes
        tokens = b * n
        rows = 2 * nk * dk + 3 * nv * dv + 2 * nv
        return {
            "linear layers": self.spec.N * rows * self.spec.d * tokens,
            "convolution": self.spec.N * self.spec.conv_kernel * self.conv_dim * tokens,
            "delta rule": self.spec.N * 3 * nv * dk * dv * tokens,
        }

    def prepare(self, get: Callable[[str], np.ndarray]) -> DeltaWeights:
        names = ("W_q", "W_k", "W_v", "W_z", "W_b", "W_a")
        return DeltaWeights(
            W_in=np.concatenate([get(f"delta.{name}") for name in names]),
            kernel=np.ascontiguousarray(get("delta.kernel").reshape(self.conv_dim, -1)),
            A=-np.exp(get("delta.A_log")),
            dt_bias=get("delta.dt_bias"),
            gamma=get("delta.norm.gamma").reshape(-1, 1, 1),
            W_out=get("delta.W_out"),
        )

    def mix(
        self,
        model: Any,
        i: int,
        w: DeltaWeights,
        X: np.ndarray,
        start: int = 0,
        cache: SsmState | None = None,
        weights_out: list | None = None,
        stop: threading.Event | None = None,
        offset: int = 0,
        shared: dict | None = None,
    ) -> np.ndarray:
        """The sublayer without its residual: (d, b, n) -> (d, b, n)."""
        nk, dk, nv, dv = self.sizes
        _, b, n = X.shape
        projected = kernels.linear(w.W_in, X)
        c = self.conv_dim
        qkv, z = projected[:c], projected[c : c + nv * dv]
        beta = 1.0 / (1.0 + np.exp(-projected[c + nv * dv : c + nv * dv + nv]))  # (nv, b, n)
        if self.spec.linear_beta_scale != 1.0:  # (OLMo-Hybrid's allow_neg_eigval: beta up to 2)
            beta *= self.spec.linear_beta_scale
        g = w.A[:, None, None] * softplus(projected[c + nv * dv + nv :] + w.dt_bias[:, None, None])
        step = cache is not None and n == 1
        mixed = ShortConv.through(w.kernel, qkv, None if cache is None else cache.conv)
        mixed = kernels.ACTIVATIONS["silu"](mixed)
        q = self._heads(mixed[: nk * dk], nk, dk, nv)  # (b, nv, n, dk)
        k = self._heads(mixed[nk * dk : 2 * nk * dk], nk, dk, nv)
        v = mixed[2 * nk * dk :].reshape(nv, dv, b, n).transpose(2, 0, 3, 1)  # (b, nv, n, dv)
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + L2_EPS) * dk**-0.5
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + L2_EPS)
        beta, g = beta.transpose(1, 0, 2), g.transpose(1, 0, 2)  # (b, nv, n)
        if step:
            o = self._step(cache.S, q[:, :, 0], k[:, :, 0], v[:, :, 0], beta[..., 0], g[..., 0], cache.keep)  # type: ignore[union-attr]
            o = o[:, :, None]
        else:
            o, final = self.chunked(q, k, v, beta, g)
            if cache is not None:
                cache.S[...] = final
        o = o.transpose(1, 3, 0, 2)  # (nv, dv, b, n)
        eps = self.spec.linear_norm_eps or self.spec.norm_eps
        normed = o / np.sqrt(np.mean(o * o, axis=1, keepdims=True) + eps) * w.gamma
        z = z.reshape(nv, dv, b, n)
        gated = normed * (
            kernels.ACTIVATIONS["silu"](z) if self.spec.linear_gate_fn == "silu" else 1.0 / (1.0 + np.exp(-z))
        )
        return kernels.linear(w.W_out, gated.reshape(nv * dv, b, n))

    @staticmethod
    def _heads(X: np.ndarray, heads: int, size: int, nv: int) -> np.ndarray:
        """(heads size, b, n) rows as (b, nv, n, size): each key head repeated for its nv / heads value heads."""
        _, b, n = X.shape
        out = X.reshape(heads, size, b, n).transpose(2, 0, 3, 1)
        return np.repeat(out, nv // heads, axis=1) if nv != heads else out

    @staticmethod
    def _step(S, q, k, v, beta, g, keep: bool) -> np.ndarray:
        """One column: S (b, nv, dk, dv); q, k (b, nv, dk), v (b, nv, dv), beta, g (b, nv) -> o (b, nv, dv)."""
        new = S * np.exp(g)[..., None, None]
        memory = np.einsum("bhkv,bhk->bhv", new, k)
        new = new + k[..., :, None] * ((v - memory) * beta[..., None])[..., None, :]
        if keep:
            S[...] = new
        return np.einsum("bhkv,bhk->bhv", new, q)

    @staticmethod
    def chunked(q, k, v, beta, g, chunk: int = CHUNK) -> tuple[np.ndarray, np.ndarray]:
        """The delta rule from a zero state over q, k (b, nv, n, dk), v (b, nv, n, dv), beta, g (b, nv, n), a chunk
        of Q columns at a time: -> o (b, nv, n, dv) and the final state (b, nv, dk, dv)."""
        b, h, n, dk = k.shape
        S = np.zeros((b, h, dk, v.shape[-1]), dtype=v.dtype)
        o = np.empty_like(v)
        for first in range(0, n, chunk):
            cols = slice(first, min(first + chunk, n))
            qc, kc, vc, bc, gc = q[:, :, cols], k[:, :, cols], v[:, :, cols], beta[:, :, cols], g[:, :, cols]
            Q = kc.shape[2]
            cum = np.cumsum(gc, axis=-1)  # (b, h, Q)
            lower = np.tril(np.ones((Q, Q), dtype=bool))
            decay = np.exp(np.where(lower, cum[..., :, None] - cum[..., None, :], -np.inf))  # (b, h, Q, Q)
            kb, vb = kc * bc[..., None], vc * bc[..., None]
            # the corrections among the chunk's own writes: T = (I + strictly lower (beta k k^T decay))^-1
            A = np.matmul(kb, kc.swapaxes(-1, -2)) * decay * np.tri(Q, k=-1)  # (strictly lower)
            T = np.linalg.solve(np.eye(Q) + A, np.broadcast_to(np.eye(Q), A.shape))
            values = np.matmul(T, vb)  # (b, h, Q, dv)
            decayed_keys = np.matmul(T, kb * np.exp(cum)[..., None])  # (b, h, Q, dk)
            fresh = values - np.matmul(decayed_keys, S)  # what each write adds beyond the carried state
            scores = np.matmul(qc, kc.swapaxes(-1, -2)) * decay  # (b, h, Q, Q), causal with the diagonal
            o[:, :, cols] = np.matmul(qc * np.exp(cum)[..., None], S) + np.matmul(scores, fresh)
            last = cum[..., -1:]
            S = S * np.exp(last)[..., None] + np.matmul((kc * np.exp(last - cum)[..., None]).swapaxes(-1, -2), fresh)
        return o, S

    def cache(self, b: int, n: int, dtype: np.dtype) -> SsmState:
        nk, dk, nv, dv = self.sizes
        conv = ConvState(np.zeros((b, self.conv_dim, self.spec.conv_kernel), dtype))
        return SsmState(conv, np.zeros((b, nv, dk, dv), dtype))

    def state_bytes(self, size: int) -> int:
        """Bytes a decoder keeps per sequence and block: K columns of [q; k; v] in `size`-byte elements, and the
        value heads' states (nv dk dv) in float32 (transformers' cache keeps them so)."""
        nk, dk, nv, dv = self.sizes
        return self.conv_dim * self.spec.conv_kernel * size + nv * dk * dv * STATE_BYTES

    def ggml_cache(self) -> GgmlCache | None:
        """llama.cpp's (float32): K - 1 columns of [q; k; v] (R), the value heads' states (S)."""
        nk, dk, nv, dv = self.sizes
        return GgmlCache(r=(self.spec.conv_kernel - 1) * self.conv_dim, s=nv * dk * dv)

    def held_per_token(self) -> int:
        nk, dk, nv, dv = self.sizes
        return 2 * (2 * nk * dk + 3 * nv * dv) + 2 * nv * dk

    def saved_bytes(
        self, keys: int, s: int, fused: bool, needed: tuple[bool, bool, bool] = (True,) * 3, frozen: bool = False
    ) -> int:
        nk, dk, nv, dv = self.sizes
        return (2 * self.conv_dim + 2 * nv * dv + 2 * nv) * s

    def transient_bytes(self, b: int, n: int, keys: int, s: int, fused: bool) -> int:
        nk, dk, nv, dv = self.sizes
        chunk = min(n, CHUNK)
        per_token = self.spec.d + 2 * self.conv_dim + 4 * nv * dv + 2 * nv * dk
        return b * n * per_token * s + 4 * b * nv * chunk * chunk * s

    def breaks_equivariance(self) -> str | None:
        return "a causal linear attention recurrence"


__all__ = ["DeltaWeights", "GatedDeltaNet"]
