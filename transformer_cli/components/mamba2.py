"""Mamba-2's selective state space (SSD) as a block's mixer, in place of attention (transformers' Mamba2Mixer).

Of each column the block makes [z; xBC; dt] = W_in x (+ b_in): a gate z of I = H_s P rows, the convolved part xBC
(I + 2 G_s N_s rows) and a step size per head (H_s). xBC goes through a depthwise causal convolution of K taps (as
LFM2's, short_conv.py) and silu, then splits into the heads' inputs x (H_s heads of P), and B, C (G_s groups of N_s,
each shared by H_s / G_s heads). With dt_t = softplus(dt_t + dt_bias) and A = -exp(A_log), each head h keeps a
state S (P x N_s):

    S_t = exp(dt_t A_h) S_{t-1} + dt_t x_t B_t^T,      y_t = S_t C_t + D_h x_t

then y times silu(z) goes through an RMSNorm per group of I / G_s rows (ssm_norm: or y before the gate, or no
norm) and W_out. The pass computes it the chunked
way (Mamba-2's SSD): within a chunk of Q columns as a masked (Q, Q) product per head, between chunks through the
state, so a prefill is a few matrix products per chunk, never a loop over the columns; a decoding step applies the
recurrence once. The mixer is causal, tells positions apart (its decay and convolution), and a decoder keeps a fixed
state per sequence: the last K columns of xBC and each head's S (float32 in transformers' cache whatever the model's
type, as in the plan; tfm's own decoder holds it in the pass's type).
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
from .mixer import RecurrentMixer
from .short_conv import ConvState, ShortConv

CHUNK = 64  # columns a chunk of the prefill's scan holds (its (Q, Q) products per head)
SILU_PER_ENTRY = 4
STATE_BYTES = 4  # the heads' states' element: float32, as transformers' cache holds them whatever the model's type


@dataclass
class SsmWeights:
    """One block's mixer as the pass uses it; vectors as (k, 1, 1) columns, per-head numbers as (H_s,)."""

    W_in: np.ndarray  # (I + conv_dim + H_s, d): rows [z; xBC; dt]
    b_in: np.ndarray | None
    kernel: np.ndarray  # (conv_dim, K)
    b_kernel: np.ndarray | None  # (conv_dim, 1, 1)
    dt_bias: np.ndarray  # (H_s,)
    A: np.ndarray  # (H_s,): -exp(A_log)
    D: np.ndarray  # (H_s,)
    gamma: np.ndarray | None  # (I, 1, 1): the gated norm's gain (ssm_norm: none, no norm)
    W_out: np.ndarray  # (d, I)
    b_out: np.ndarray | None


@dataclass
class SsmState:
    """A block's decoding state: the convolution's last K columns of xBC and each head's state S, (b, H_s, P, N_s)."""

    conv: ConvState
    S: np.ndarray
    _keep: bool = True

    @property
    def keep(self) -> bool:
        return self._keep

    @keep.setter
    def keep(self, value: bool) -> None:  # (the stale-cache fault: neither part stores the step)
        self._keep = self.conv.keep = value


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + e^x), as torch's: x itself past 20."""
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


@ATTENTIONS.register("mamba2")
class Mamba2(RecurrentMixer):
    """Mamba-2's mixer: ssm_heads H_s of ssm_head_dim P, ssm_groups G_s of B and C of ssm_state N_s, a kernel of
    conv_kernel K (conv_bias), biases on its projections with ssm_bias."""

    @property
    def sizes(self) -> tuple[int, int, int, int, int]:
        """(H_s, P, N_s, G_s, I)."""
        s = self.spec
        H, P = s.ssm_heads or 1, s.ssm_head_dim or 1
        return H, P, s.ssm_state or 1, s.ssm_groups, H * P

    @property
    def conv_dim(self) -> int:
        _, _, N, G, inner = self.sizes
        return inner + 2 * G * N

    @property
    def in_rows(self) -> int:
        return self.sizes[4] + self.conv_dim + self.sizes[0]

    def tensors(self, prefix: str) -> list[Tensor]:
        H, _, _, _, inner = self.sizes
        d, K, p = self.spec.d, self.spec.conv_kernel, prefix + "mamba."
        out = [Tensor(p + "W_in", (self.in_rows, d), "state space")]
        out += [Tensor(p + "b_in", (self.in_rows,), "state space")] if self.spec.ssm_bias else []
        out.append(Tensor(p + "kernel", (self.conv_dim, 1, K), "state space"))
        out += [Tensor(p + "b_kernel", (self.conv_dim,), "state space")] if self.spec.conv_bias else []
        out += [Tensor(p + name, (H,), "state space") for name in ("dt_bias", "A_log", "D")]
        out += [Tensor(p + "norm.gamma", (inner,), "state space")] if self.spec.ssm_norm != "none" else []
        out.append(Tensor(p + "W_out", (d, inner), "state space"))
        out += [Tensor(p + "b_out", (d,), "state space")] if self.spec.ssm_bias else []
        return out

    def terms(self) -> list[Term]:
        H, _, _, _, inner = self.sizes
        d, K = self.spec.d, self.spec.conv_kernel
        gain = inner if self.spec.ssm_norm != "none" else 0
        value = (self.in_rows + inner) * d + K * self.conv_dim + 3 * H + gain
        out = [Term("(2I + c + H_s) d + K c + 3H_s" + (" + I" if gain else ""), value, "block")]
        if self.spec.conv_bias:
            out.append(Term("c", self.conv_dim, "block"))
        if self.spec.ssm_bias:
            out.append(Term("I + c + H_s + d", self.in_rows + d, "block"))
        return out

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H, P, N, _, inner = self.sizes
        d, K, tokens = self.spec.d, self.spec.conv_kernel, b * n
        scan = H * P * N * 6  # the state's decay, x B^T, its sum, S C: per head and column, recurrently
        return {
            "mixer projections": self.spec.N * 2 * (self.in_rows + inner) * d * tokens,
            "convolution": self.spec.N * (2 * K + SILU_PER_ENTRY) * self.conv_dim * tokens,
            "state space scan": self.spec.N * (scan + 2 * H * P) * tokens,
            "gates": self.spec.N * (SILU_PER_ENTRY + 1 + 4) * inner * tokens,  # silu(z) * y and its norm
        }

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H, P, N, _, inner = self.sizes
        d, K, tokens = self.spec.d, self.spec.conv_kernel, b * n
        return {
            "linear layers": self.spec.N * (self.in_rows + inner) * d * tokens,
            "convolution": self.spec.N * K * self.conv_dim * tokens,
            "state space scan": self.spec.N * 2 * H * P * N * tokens,
        }

    def prepare(self, get: Callable[[str], np.ndarray]) -> SsmWeights:
        """The pass's weights; with ssm_scales, W_in's and b_in's rows of z, x, B, C and dt times theirs."""
        bias = self.spec.ssm_bias
        column = lambda name: get(name).reshape(-1, 1, 1)  # noqa: E731
        W_in, b_in = get("mamba.W_in"), column("mamba.b_in") if bias else None
        if self.spec.ssm_scales is not None:
            _, _, N, G, inner = self.sizes
            counts = (inner, inner, G * N, G * N, self.sizes[0])
            rows = np.repeat(np.asarray(self.spec.ssm_scales, dtype=np.float64), counts).astype(W_in.dtype)
            W_in = W_in * rows[:, None]
            b_in = None if b_in is None else b_in * rows[:, None, None]
        return SsmWeights(
            W_in=W_in,
            b_in=b_in,
            kernel=np.ascontiguousarray(get("mamba.kernel").reshape(self.conv_dim, -1)),
            b_kernel=column("mamba.b_kernel") if self.spec.conv_bias else None,
            dt_bias=get("mamba.dt_bias"),
            A=-np.exp(get("mamba.A_log")),
            D=get("mamba.D"),
            gamma=column("mamba.norm.gamma") if self.spec.ssm_norm != "none" else None,
            W_out=get("mamba.W_out"),
            b_out=column("mamba.b_out") if bias else None,
        )

    def mix(
        self,
        model: Any,
        i: int,
        w: SsmWeights,
        X: np.ndarray,
        start: int = 0,
        cache: SsmState | None = None,
        weights_out: list | None = None,
        stop: threading.Event | None = None,
        offset: int = 0,
        shared: dict | None = None,
    ) -> np.ndarray:
        """The sublayer without its residual: (d, b, n) -> (d, b, n). A prefill (or a pass without a cache) scans
        its columns chunk by chunk from a zero state; a decoding step advances the cached state by one column."""
        H, P, N, G, inner = self.sizes
        _, b, n = X.shape
        projected = kernels.linear(w.W_in, X)  # (I + conv_dim + H_s, b, n)
        if w.b_in is not None:
            projected += w.b_in
        z, xBC, dt = projected[:inner], projected[inner : inner + self.conv_dim], projected[inner + self.conv_dim :]
        step = cache is not None and n == 1
        mixed = ShortConv.through(w.kernel, xBC, None if cache is None else cache.conv)
        if w.b_kernel is not None:
            mixed += w.b_kernel
        mixed = kernels.ACTIVATIONS["silu"](mixed)
        x = mixed[:inner].reshape(H, P, b, n)
        B = mixed[inner : inner + G * N].reshape(G, N, b, n)
        C = mixed[inner + G * N :].reshape(G, N, b, n)
        dt = softplus(dt + w.dt_bias[:, None, None])  # (H_s, b, n)
        if self.spec.ssm_dt_min is not None:  # (Nemotron-H's)
            dt = np.maximum(dt, self.spec.ssm_dt_min)
        if step:
            y = self._step(cache.S, x[..., 0], B[..., 0], C[..., 0], dt[..., 0], w.A, cache.keep)  # type: ignore[union-attr]
            y = y[..., None]
        else:
            y, final = self.scan(x, B, C, dt, w.A)
            if cache is not None:
                cache.S[...] = final if cache.keep else 0.0
        y += w.D[:, None, None, None] * x
        gate, y = kernels.ACTIVATIONS["silu"](z), y.reshape(inner, b, n)
        if self.spec.ssm_norm == "gated":
            y = self.gated_norm(y * gate, w.gamma)
        elif self.spec.ssm_norm == "before_gate":  # (Falcon-H1's norm_before_gate)
            y = self.gated_norm(y, w.gamma) * gate
        else:
            y = y * gate
        out = kernels.linear(w.W_out, y)
        if w.b_out is not None:
            out += w.b_out
        return out

    def gated_norm(self, Y: np.ndarray, gamma: np.ndarray | None) -> np.ndarray:
        """RMSNorm of each group of I / G_s rows of Y (I, b, n), times the gain."""
        G = self.spec.ssm_groups
        grouped = Y.reshape(G, -1, *Y.shape[1:])
        eps = self.spec.linear_norm_eps or self.spec.norm_eps  # (Zamba2's: 1e-5, whatever its blocks' norms)
        scale = 1.0 / np.sqrt(np.mean(grouped * grouped, axis=1, keepdims=True) + eps)
        assert gamma is not None
        return (grouped * scale).reshape(Y.shape) * gamma

    def _heads(self, M: np.ndarray) -> np.ndarray:
        """B or C of G_s groups (G_s, N, ...) as the H_s heads see them (H_s, N, ...)."""
        H, G = self.sizes[0], self.spec.ssm_groups
        return np.repeat(M, H // G, axis=0)

    def _step(self, S, x, B, C, dt, A, keep: bool) -> np.ndarray:
        """One column: S (b, H, P, N) advanced by x (H, P, b), B, C (G, N, b), dt (H, b); -> y (H, P, b)."""
        decay = np.exp(dt * A[:, None]).T  # (b, H)
        Bh, Ch = self._heads(B), self._heads(C)  # (H, N, b)
        new = S * decay[:, :, None, None] + np.einsum("hb,hpb,hnb->bhpn", dt, x, Bh)
        if keep:
            S[...] = new
        return np.einsum("bhpn,hnb->hpb", new, Ch)

    def scan(self, x, B, C, dt, A, chunk: int = CHUNK) -> tuple[np.ndarray, np.ndarray]:
        """The chunked scan from a zero state: x (H, P, b, n), B and C (G, N, b, n), dt (H, b, n) -> y (H, P, b, n)
        without the D term, and the final state (b, H, P, N)."""
        H, P, b, n = x.shape
        N = B.shape[1]
        Bh, Ch = self._heads(B), self._heads(C)  # (H, N, b, n)
        S = np.zeros((b, H, P, N), dtype=x.dtype)
        y = np.empty_like(x)
        for first in range(0, n, chunk):
            cols = slice(first, min(first + chunk, n))
            a = (dt[..., cols] * A[:, None, None]).transpose(1, 0, 2)  # (b, H, Q): log decays
            cum = np.cumsum(a, axis=-1)
            xs = (x[..., cols] * dt[:, None, :, cols]).transpose(2, 0, 3, 1)  # (b, H, Q, P): dt x
            Bs, Cs = Bh[..., cols].transpose(2, 0, 3, 1), Ch[..., cols].transpose(2, 0, 3, 1)  # (b, H, Q, N)
            gap = cum[..., :, None] - cum[..., None, :]  # (b, H, l, s): the decay from s to l
            Q = gap.shape[-1]
            L = np.exp(np.where(np.tril(np.ones((Q, Q), dtype=bool)), gap, -np.inf))
            scores = np.matmul(Cs, Bs.swapaxes(-1, -2))  # (b, H, l, s): C_l . B_s
            scores *= L
            inside = np.matmul(scores, xs)  # (b, H, Q, P)
            inside += np.matmul(Cs, S.swapaxes(-1, -2)) * np.exp(cum)[..., None]  # what the earlier chunks left
            y[..., cols] = inside.transpose(1, 3, 0, 2)
            last = cum[..., -1:]
            weights = np.exp(last - cum)[..., None] * xs  # (b, H, Q, P)
            S = S * np.exp(last)[..., None] + np.matmul(weights.swapaxes(-1, -2), Bs)
        return y, S

    # -- decoding: a fixed state per sequence ---------------------------------------------------------------

    def cache(self, b: int, n: int, dtype: np.dtype) -> SsmState:
        H, P, N, _, _ = self.sizes
        conv = ConvState(np.zeros((b, self.conv_dim, self.spec.conv_kernel), dtype))
        return SsmState(conv, np.zeros((b, H, P, N), dtype))

    def state_bytes(self, size: int) -> int:
        """Bytes a decoder keeps per sequence and block: K columns of xBC in `size`-byte elements, and the heads'
        states (H_s P N_s) in float32 (transformers' cache keeps them so whatever the model's type)."""
        H, P, N, _, _ = self.sizes
        return self.conv_dim * self.spec.conv_kernel * size + H * P * N * STATE_BYTES

    def ggml_cache(self) -> GgmlCache | None:
        """llama.cpp's (float32): K - 1 columns of xBC (R), the heads' states (S)."""
        H, P, N, _, _ = self.sizes
        return GgmlCache(r=(self.spec.conv_kernel - 1) * self.conv_dim, s=H * P * N)

    # -- memory of a pass ------------------------------------------------------------------------------------

    def held_per_token(self) -> int:
        """Entries the pass holds per token besides the stream: the projection, the convolved part, y, the gate."""
        return 2 * self.in_rows + 2 * self.sizes[4]

    def saved_bytes(
        self, keys: int, s: int, fused: bool, needed: tuple[bool, bool, bool] = (True,) * 3, frozen: bool = False
    ) -> int:
        """Bytes one token's training pass keeps: the projection, the convolved part and y."""
        return (self.in_rows + self.conv_dim + self.sizes[4]) * s

    def transient_bytes(self, b: int, n: int, keys: int, s: int, fused: bool) -> int:
        """Bytes a prefill holds at the mixer's peak beside the stream: the norm's output, the projection, the
        convolved part, y and its gated norm; a chunk's (Q, Q) products per head."""
        chunk = min(n, CHUNK)
        return (
            b * n * (self.spec.d + self.in_rows + self.conv_dim + 2 * self.sizes[4]) * s
            + 3 * b * self.sizes[0] * chunk * chunk * s
        )

    # -- theory ---------------------------------------------------------------------------------------------

    def breaks_equivariance(self) -> str | None:
        return "a causal state space recurrence"


__all__ = ["Mamba2", "SsmState", "SsmWeights"]
