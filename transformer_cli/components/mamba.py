"""Mamba's selective state space (Mamba-1: transformers' MambaMixer, Falcon Mamba's, Jamba's) as a block's mixer.

Of each column the block makes [x; z] = W_in h (+ b_in), I rows each. x goes through a depthwise causal convolution
of K taps and silu (as LFM2's, short_conv.py), then W_x x gives a step's low-rank part (R rows) and B, C (N each),
normalised where ssm_bcdt_norm says (Falcon Mamba's plain RMS norms, Jamba's with gains). dt = softplus(W_dt dt_low
+ b_dt) has a step per channel (I), and each channel i keeps a state s_i of N with its own decays A_i = -exp(A_log_i):

    s_t = exp(dt_t A) * s_{t-1} + dt_t x_t B_t,      y_t = s_t C_t + D x_t,      out = W_out (y * silu(z))

A prefill computes the recurrence a chunk at a time as cumulative sums, s_t = e^{c_t} s_0 + e^{a_t} sum_{u <= t}
e^{-a_u} dt_u x_u B_u with c the chunk's cumulative log decays and a = c less the first column's, the chunks cut
where a would span more than SPAN (so no exponential overflows): a few vectorised operations per chunk, never a
loop over the columns. A decoding step applies the recurrence once. Its state per sequence: the convolution's last K
columns of x and the channels' states (I x N), in the cache's type (transformers' cache holds them in the model's).
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
from .mamba2 import SILU_PER_ENTRY, SsmState, softplus
from .mixer import RecurrentMixer
from .short_conv import ConvState, ShortConv

SPAN = 30.0  # the largest log decay a prefill's chunk spans (e^30 is far from float32's overflow)


@dataclass
class SelectiveWeights:
    """One block's mixer as the pass uses it; vectors as (k, 1, 1) columns."""

    W_in: np.ndarray  # (2I, d): rows [x; z]
    b_in: np.ndarray | None
    kernel: np.ndarray  # (I, K)
    b_kernel: np.ndarray | None
    W_x: np.ndarray  # (R + 2N, I)
    W_dt: np.ndarray  # (I, R)
    b_dt: np.ndarray  # (I, 1, 1)
    A: np.ndarray  # (I, N): -exp(A_log)
    D: np.ndarray  # (I, 1, 1)
    norms: tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None] | None  # dt's, B's, C's gains (or 1)
    W_out: np.ndarray  # (d, I)
    b_out: np.ndarray | None


@ATTENTIONS.register("mamba")
class Mamba(RecurrentMixer):
    """Mamba-1's mixer: ssm_inner channels I, each a state of ssm_state N, steps of rank ssm_dt_rank R, a kernel of
    conv_kernel K (conv_bias), ssm_bias on its projections, ssm_bcdt_norm on dt's low rank part, B and C."""

    @property
    def sizes(self) -> tuple[int, int, int]:
        """(I, N, R)."""
        s = self.spec
        return s.ssm_inner or 1, s.ssm_state or 1, s.ssm_dt_rank or 1

    def tensors(self, prefix: str) -> list[Tensor]:
        inner, N, R = self.sizes
        d, K, p = self.spec.d, self.spec.conv_kernel, prefix + "mamba."
        kind = "state space"
        out = [Tensor(p + "W_in", (2 * inner, d), kind)]
        out += [Tensor(p + "b_in", (2 * inner,), kind)] if self.spec.ssm_bias else []
        out.append(Tensor(p + "kernel", (inner, 1, K), kind))
        out += [Tensor(p + "b_kernel", (inner,), kind)] if self.spec.conv_bias else []
        out += [Tensor(p + "W_x", (R + 2 * N, inner), kind), Tensor(p + "W_dt", (inner, R), kind)]
        out += [
            Tensor(p + "b_dt", (inner,), kind),
            Tensor(p + "A_log", (inner, N), kind),
            Tensor(p + "D", (inner,), kind),
        ]
        if self.spec.ssm_bcdt_norm == "affine":
            out += [Tensor(p + f"{x}_norm.gamma", (size,), kind) for x, size in (("dt", R), ("B", N), ("C", N))]
        out.append(Tensor(p + "W_out", (d, inner), kind))
        out += [Tensor(p + "b_out", (d,), kind)] if self.spec.ssm_bias else []
        return out

    def terms(self) -> list[Term]:
        inner, N, R = self.sizes
        d, K = self.spec.d, self.spec.conv_kernel
        value = 3 * inner * d + K * inner + (R + 2 * N) * inner + inner * R + inner * (N + 2)
        out = [Term("3Id + KI + (R + 2N)I + IR + I(N + 2)", value, "block")]
        if self.spec.conv_bias:
            out.append(Term("I", inner, "block"))
        if self.spec.ssm_bias:
            out.append(Term("2I + d", 2 * inner + d, "block"))
        if self.spec.ssm_bcdt_norm == "affine":
            out.append(Term("R + 2N", R + 2 * N, "block"))
        return out

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        inner, N, R = self.sizes
        d, K, tokens = self.spec.d, self.spec.conv_kernel, b * n
        projections = 3 * inner * d + (R + 2 * N) * inner + inner * R
        return {
            "mixer projections": self.spec.N * 2 * projections * tokens,
            "convolution": self.spec.N * (2 * K + SILU_PER_ENTRY) * inner * tokens,
            "state space scan": self.spec.N * inner * (6 * N + 2) * tokens,
            "gates": self.spec.N * (SILU_PER_ENTRY + 1) * inner * tokens,
        }

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        inner, N, R = self.sizes
        tokens = b * n
        projections = 3 * inner * self.spec.d + (R + 2 * N) * inner + inner * R
        return {
            "linear layers": self.spec.N * projections * tokens,
            "convolution": self.spec.N * self.spec.conv_kernel * inner * tokens,
            "state space scan": self.spec.N * 2 * inner * N * tokens,
        }

    def prepare(self, get: Callable[[str], np.ndarray]) -> SelectiveWeights:
        inner, _, _ = self.sizes
        bias = self.spec.ssm_bias
        column = lambda name: get(name).reshape(-1, 1, 1)  # noqa: E731
        norms = None
        if self.spec.ssm_bcdt_norm != "none":
            affine = self.spec.ssm_bcdt_norm == "affine"
            norms = tuple(column(f"mamba.{x}_norm.gamma") if affine else None for x in ("dt", "B", "C"))
        return SelectiveWeights(
            W_in=get("mamba.W_in"),
            b_in=column("mamba.b_in") if bias else None,
            kernel=np.ascontiguousarray(get("mamba.kernel").reshape(inner, -1)),
            b_kernel=column("mamba.b_kernel") if self.spec.conv_bias else None,
            W_x=get("mamba.W_x"),
            W_dt=get("mamba.W_dt"),
            b_dt=column("mamba.b_dt"),
            A=-np.exp(get("mamba.A_log")),
            D=column("mamba.D"),
            norms=norms,  # type: ignore[arg-type]
            W_out=get("mamba.W_out"),
            b_out=column("mamba.b_out") if bias else None,
        )

    def _norm(self, X: np.ndarray, gain: np.ndarray | None) -> np.ndarray:
        eps = self.spec.ssm_bcdt_eps or self.spec.norm_eps
        out = X / np.sqrt(np.mean(X * X, axis=0, keepdims=True) + eps)
        return out if gain is None else out * gain

    def mix(
        self,
        model: Any,
        i: int,
        w: SelectiveWeights,
        X: np.ndarray,
        start: int = 0,
        cache: SsmState | None = None,
        weights_out: list | None = None,
        stop: threading.Event | None = None,
        offset: int = 0,
        shared: dict | None = None,
    ) -> np.ndarray:
        """The sublayer without its residual: (d, b, n) -> (d, b, n)."""
        inner, N, R = self.sizes
        projected = kernels.linear(w.W_in, X)  # (2I, b, n)
        if w.b_in is not None:
            projected += w.b_in
        x, z = projected[:inner], projected[inner:]
        step = cache is not None and X.shape[-1] == 1
        x = ShortConv.through(w.kernel, x, None if cache is None else cache.conv)
        if w.b_kernel is not None:
            x += w.b_kernel
        x = kernels.ACTIVATIONS["silu"](x)
        low = kernels.linear(w.W_x, x)  # (R + 2N, b, n)
        dt_low, B, C = low[:R], low[R : R + N], low[R + N :]
        if w.norms is not None:
            dt_low, B, C = (self._norm(part, gain) for part, gain in zip((dt_low, B, C), w.norms, strict=True))
        dt = softplus(kernels.linear(w.W_dt, dt_low) + w.b_dt)  # (I, b, n)
        if step:
            S = cache.S  # type: ignore[union-attr]
            new = (
                np.exp(dt[..., 0].T[:, :, None] * w.A) * S
                + (dt[..., 0] * x[..., 0]).T[:, :, None] * B[..., 0].T[:, None]
            )
            if cache.keep:  # type: ignore[union-attr]
                S[...] = new
            y = np.einsum("bin,nb->ib", new, C[..., 0])[..., None]
        else:
            y, final = self.scan(x, B, C, dt, w.A)
            if cache is not None:
                cache.S[...] = final
        y += w.D * x
        out = kernels.linear(w.W_out, y * kernels.ACTIVATIONS["silu"](z))
        if w.b_out is not None:
            out += w.b_out
        return out

    @staticmethod
    def scan(x, B, C, dt, A) -> tuple[np.ndarray, np.ndarray]:
        """The recurrence from a zero state over x, dt (I, b, n), B, C (N, b, n), A (I, N): y (I, b, n) without the D
        term, and the final state (b, I, N); in chunks whose log decays span at most SPAN."""
        inner, b, n = x.shape
        S = np.zeros((b, inner, A.shape[1]), dtype=x.dtype)
        y = np.empty_like(x)
        steepest = (dt.max(axis=(0, 1)) * -A.min()).astype(np.float64)  # (n,): the fastest decay at each column
        first = 0
        while first < n:  # (a chunk's decays after its first column span at most SPAN)
            spans = np.cumsum(steepest[first + 1 :])
            last = first + 1 + int(np.searchsorted(spans, SPAN, side="right"))
            cols = slice(first, last)
            logs = dt[..., cols].transpose(1, 0, 2)[:, :, None, :] * A[None, :, :, None]  # (b, I, N, Q)
            c = np.cumsum(logs, axis=-1)
            after = c - logs[..., :1]  # the decay since the chunk's first column, within [-SPAN, 0]
            dtx = (dt[..., cols] * x[..., cols]).transpose(1, 0, 2)[:, :, None, :]
            pushed = dtx * B[..., cols].transpose(1, 0, 2)[:, None]  # (b, I, N, Q)
            states = np.exp(c) * S[..., None] + np.exp(after) * np.cumsum(np.exp(-after) * pushed, axis=-1)
            y[..., cols] = np.einsum("binq,bnq->ibq", states, C[..., cols].transpose(1, 0, 2))
            S = states[..., -1]
            first = last
        return y, S

    def cache(self, b: int, n: int, dtype: np.dtype) -> SsmState:
        inner, N, _ = self.sizes
        return SsmState(ConvState(np.zeros((b, inner, self.spec.conv_kernel), dtype)), np.zeros((b, inner, N), dtype))

    def state_bytes(self, size: int) -> int:
        """Bytes a decoder keeps per sequence and block: K columns of x and the channels' states (I x N)."""
        inner, N, _ = self.sizes
        return inner * (self.spec.conv_kernel + N) * size

    def ggml_cache(self) -> GgmlCache | None:
        """llama.cpp's (float32): K - 1 columns of x (R), the channels' states (S)."""
        inner, N, _ = self.sizes
        return GgmlCache(r=(self.spec.conv_kernel - 1) * inner, s=N * inner)

    def held_per_token(self) -> int:
        inner, N, R = self.sizes
        return 4 * inner + R + 2 * N

    def saved_bytes(
        self, keys: int, s: int, fused: bool, needed: tuple[bool, bool, bool] = (True,) * 3, frozen: bool = False
    ) -> int:
        """Bytes one token's training pass keeps: [x; z], the convolved x, its low-rank part, dt and y."""
        inner, N, R = self.sizes
        return (5 * inner + R + 2 * N) * s

    def transient_bytes(self, b: int, n: int, keys: int, s: int, fused: bool) -> int:
        """Bytes a prefill holds at the mixer's peak beside the stream: the norm's output, [x; z], x convolved, dt,
        y; a chunk's states (b I N per column, a few dozen columns)."""
        inner, N, _ = self.sizes
        return b * n * (self.spec.d + 5 * inner) * s + 4 * b * inner * N * min(n, 32) * s

    def breaks_equivariance(self) -> str | None:
        return "a causal state space recurrence"


__all__ = ["Mamba", "SelectiveWeights"]
