"""A short causal convolution as a block's token mixer (LFM2's `Lfm2ShortConv`), in place of attention.

Of each column x the block makes three of d rows, B, C and u: [B; C; u] = W_in x (+ b_in). The gated columns B * u
go through a depthwise causal convolution of kernel L, each row of column t mixed with the same row of the L - 1
columns before it (zeros before the first), then gated again by C: y_t = W_out (C_t * conv(B * u)_t) (+ b_out).

Column t reads columns t - L + 1 .. t only: the mixer is causal, it tells positions apart (a permutation of the
columns changes what each one reads), and a decoder keeps a fixed state per sequence, the last L gated columns,
whatever the context (transformers' cache holds L of them, the newest included; so does tfm's).
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

GATES_PER_ENTRY = 2  # B * u and C * conv: one multiply each


@dataclass
class ConvWeights:
    """One block's convolution as the pass uses it; vectors as (k, 1, 1) columns."""

    W_in: np.ndarray  # (3d, d): rows [B; C; u]
    b_in: np.ndarray | None  # (3d, 1, 1)
    kernel: np.ndarray  # (d, L): tap L - 1 reads the column itself, tap L - 1 - j the column j back
    b_kernel: np.ndarray | None  # (d, 1, 1)
    W_out: np.ndarray  # (d, d)
    b_out: np.ndarray | None  # (d, 1, 1)


@dataclass
class ConvState:
    """A block's decoding state: the last L gated columns of each sequence, (b, d, L), the newest last. With
    keep False a step reads its column but does not store it (the stale-cache fault)."""

    window: np.ndarray
    keep: bool = True
    filled: int = 0

    def fill(self, u: np.ndarray) -> None:
        """A prefill's gated columns (d, b, p): the latest L of them (zeros before the first)."""
        L, p = self.window.shape[-1], u.shape[-1]
        self.window[...] = 0
        latest = min(L, p)
        self.window[..., L - latest :] = u[..., p - latest :].transpose(1, 0, 2)
        self.filled = p if self.keep else 0

    def step(self, u: np.ndarray) -> np.ndarray:
        """One step's gated column (d, b, 1): the window it reads, (b, d, L), the column in its last place."""
        read = np.concatenate([self.window[..., 1:], u.transpose(1, 0, 2)], axis=-1)
        if self.keep:
            self.window[...] = read
            self.filled += 1
        return read


@ATTENTIONS.register("short_conv")
class ShortConv(RecurrentMixer):
    """LFM2's short convolution: W_in (3d, d), a kernel of L taps per row, W_out (d, d); biases with conv_bias."""

    def tensors(self, prefix: str) -> list[Tensor]:
        d, L = self.spec.d, self.spec.conv_kernel
        p = prefix + "conv."
        out = [
            Tensor(p + "W_in", (3 * d, d), "short convolution"),
            Tensor(p + "kernel", (d, 1, L), "short convolution"),
            Tensor(p + "W_out", (d, d), "short convolution"),
        ]
        if self.spec.conv_bias:
            out += [Tensor(p + name, (rows,), "short convolution") for name, rows in self.biases]
        return out

    @property
    def biases(self) -> tuple[tuple[str, int], ...]:
        d = self.spec.d
        return (("b_in", 3 * d), ("b_kernel", d), ("b_out", d))

    def terms(self) -> list[Term]:
        d, L = self.spec.d, self.spec.conv_kernel
        out = [Term("4d^2 + Ld", 4 * d * d + L * d, "block")]
        if self.spec.conv_bias:
            out.append(Term("5d", 5 * d, "block"))
        return out

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        d, L, N, bias = self.spec.d, self.spec.conv_kernel, self.spec.N, int(self.spec.conv_bias)
        tokens = b * n
        return {
            "mixer projections": N * (2 * 4 * d * d + bias * 4 * d) * tokens,
            "convolution": N * (2 * L * d + bias * d) * tokens,
            "gates": N * GATES_PER_ENTRY * d * tokens,
        }

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        d, L, N = self.spec.d, self.spec.conv_kernel, self.spec.N
        return {"linear layers": N * 4 * d * d * b * n, "convolution": N * L * d * b * n}

    def prepare(self, get: Callable[[str], np.ndarray]) -> ConvWeights:
        d, L = self.spec.d, self.spec.conv_kernel
        biases = [get(f"conv.{name}").reshape(-1, 1, 1) if self.spec.conv_bias else None for name, _ in self.biases]
        kernel = np.ascontiguousarray(get("conv.kernel").reshape(d, L))
        return ConvWeights(get("conv.W_in"), biases[0], kernel, biases[1], get("conv.W_out"), biases[2])

    def mix(
        self,
        model: Any,
        i: int,
        w: ConvWeights,
        X: np.ndarray,
        start: int = 0,
        cache: ConvState | None = None,
        weights_out: list | None = None,
        stop: threading.Event | None = None,
        offset: int = 0,
        shared: dict | None = None,
    ) -> np.ndarray:
        """The sublayer without its residual: (d, b, n) -> (d, b, n). Without a cache, or with an empty one (a
        prefill, which then holds the latest L gated columns), the columns convolve with each other; one column
        with a cache (a decoding step) convolves with the L - 1 the cache holds. Positions play no part."""
        d = self.spec.d
        projected = kernels.linear(w.W_in, X)  # (3d, b, n)
        if w.b_in is not None:
            projected += w.b_in
        B, C, u = projected[:d], projected[d : 2 * d], projected[2 * d :]
        u = B * u
        mixed = self.through(w.kernel, u, cache)
        if w.b_kernel is not None:
            mixed += w.b_kernel
        out = kernels.linear(w.W_out, C * mixed)
        if w.b_out is not None:
            out += w.b_out
        return out

    @staticmethod
    def through(kernel: np.ndarray, u: np.ndarray, state: ConvState | None) -> np.ndarray:
        """The columns u (c, b, n) convolved causally (the mixers' shared step): one column with a decoder's state
        reads the state's window; a prefill's columns each other, the state then holding the latest of them."""
        if state is not None and u.shape[-1] == 1:
            return np.einsum("bcl,cl->cb", state.step(u), kernel)[..., None]
        if state is not None:
            state.fill(u)
        return ShortConv.convolve(kernel, u)

    @staticmethod
    def convolve(kernel: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The causal depthwise convolution of the columns u (d, b, n): tap L - 1 - j reads the column j back."""
        L = kernel.shape[1]
        out = u * kernel[:, L - 1, None, None]
        for j in range(1, min(L, u.shape[-1] + 1)):
            out[..., j:] += u[..., :-j] * kernel[:, L - 1 - j, None, None]
        return out

    # -- decoding: a fixed state per sequence, nothing per token ------------------------------------------------

    def cache(self, b: int, n: int, dtype: np.dtype) -> ConvState:
        return ConvState(np.zeros((b, self.spec.d, self.spec.conv_kernel), dtype))

    def state_bytes(self, size: int) -> int:
        """Bytes a decoder keeps per sequence and block whatever the context, in `size`-byte elements: L columns
        of d."""
        return self.spec.d * self.spec.conv_kernel * size

    def ggml_cache(self) -> GgmlCache | None:
        """llama.cpp's (float32): L - 1 columns of d (R)."""
        return GgmlCache(r=(self.spec.conv_kernel - 1) * self.spec.d)

    # -- memory of a pass --------------------------------------------------------------------------------------

    def held_per_token(self) -> int:
        """Entries the pass holds per token besides the stream: [B; C; u] (3d), the convolution's output (d)."""
        return 4 * self.spec.d

    def saved_bytes(
        self, keys: int, s: int, fused: bool, needed: tuple[bool, bool, bool] = (True,) * 3, frozen: bool = False
    ) -> int:
        """Bytes one token's training pass keeps for the backward pass besides the output projection's input:
        [B; C; u] and the gated columns B * u."""
        return 4 * self.spec.d * s

    def transient_bytes(self, b: int, n: int, keys: int, s: int, fused: bool) -> int:
        """Bytes a prefill holds at the mixer's peak beside the stream: the norm's output, [B; C; u], the
        convolution's output."""
        return b * n * 5 * self.spec.d * s

    # -- theory ------------------------------------------------------------------------------------------------

    def breaks_equivariance(self) -> str | None:
        return "causal convolution" if self.spec.conv_kernel > 1 else None

    def reach(self) -> int | None:
        """Each block reads L - 1 columns back: N blocks N (L - 1)."""
        return self.spec.N * (self.spec.conv_kernel - 1)


__all__ = ["ConvState", "ConvWeights", "ShortConv"]
