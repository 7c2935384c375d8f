"""The transformer forward pass in NumPy, in the seed's column layout: X is (d, n), one column per token.

Internally every array carries a batch axis: X is (b, d, n). All heads are computed by one matmul each:
the per-head weights (H, m, d) are stacked into one (3Hm, d) projection and the output weights (H, d, m)
into one (d, Hm) matrix.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .spec import Spec
from .weights import Weights

Array = np.ndarray


def softmax_columns(S: Array) -> Array:
    """Softmax of each column (over axis -2, the keys), stable; -inf entries become exact zeros."""
    A = S - S.max(axis=-2, keepdims=True)  # (..., n_k, n_q)
    np.exp(A, out=A)
    A /= A.sum(axis=-2, keepdims=True)
    return A


def layer_norm(X: Array, gamma: Array, beta: Array, eps: float) -> Array:
    """Normalise each column over its d entries: (b, d, n) -> (b, d, n); gamma, beta are (d, 1)."""
    mean = X.mean(axis=-2, keepdims=True)
    var = X.var(axis=-2, keepdims=True)
    return (X - mean) / np.sqrt(var + eps) * gamma + beta


def relu(X: Array) -> Array:
    return np.maximum(X, 0)


def gelu(X: Array) -> Array:
    """GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return 0.5 * X * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (X + 0.044715 * X**3)))  # Python floats keep X's dtype


ACTIVATIONS: dict[str, Callable[[Array], Array]] = {"relu": relu, "gelu": gelu}


def sinusoidal_positions(d: int, n: int) -> Array:
    """PE[2i, t] = sin(t / 10000^(2i/d)), PE[2i+1, t] = cos(t / 10000^(2i/d)): (d, n); odd d ends on a sine."""
    rows = np.arange(d)
    freq = 10000.0 ** (-(2 * (rows // 2)) / d)  # (d,)
    angle = freq[:, None] * np.arange(n)[None, :]  # (d, n)
    return np.where(rows[:, None] % 2 == 0, np.sin(angle), np.cos(angle))


def causal_mask(n_k: int, n_q: int, offset: int = 0) -> Array:
    """Additive mask (n_k, n_q): -inf where key k comes after query q (k > q + offset), else 0."""
    later = np.arange(n_k)[:, None] > np.arange(n_q)[None, :] + offset
    return np.where(later, -np.inf, 0.0)


def scores(Q: Array, K: Array, scale: float) -> Array:
    """Attention scores scale * K^T Q: (b, H, m, n_q), (b, H, m, n_k) -> (b, H, n_k, n_q)."""
    S = np.matmul(K.swapaxes(-1, -2), Q)
    if scale != 1.0:
        S *= scale
    return S


@dataclass
class Block:
    """One block's weights, stacked so that all heads go through one matmul."""

    W_qkv: Array  # (3Hm, d): rows are [W_Q^1..W_Q^H, W_K^1.., W_V^1..]
    b_qkv: Array | None  # (3Hm, 1)
    W_O: Array  # (d, Hm): columns h*m .. (h+1)*m - 1 are W_O^h
    b_O: Array | None  # (d, 1)
    W1: Array  # (r, d)
    b1: Array  # (r, 1)
    W2: Array  # (d, r)
    b2: Array  # (d, 1)
    norm1: tuple[Array, Array] | None  # gamma, beta as (d, 1)
    norm2: tuple[Array, Array] | None


def _column(v: Array) -> Array:
    return v.reshape(-1, 1)


def stack_block(spec: Spec, w: Weights, i: int, dtype: np.dtype) -> Block:
    """Gather block i's weights from the flat dict and stack the heads."""
    p = f"blocks.{i}."
    H, m, d = spec.H, spec.m, spec.d
    get = lambda name: np.asarray(w[p + name], dtype=dtype)  # noqa: E731
    W_qkv = np.concatenate([get(f"attention.{x}").reshape(H * m, d) for x in ("W_Q", "W_K", "W_V")])
    W_O = get("attention.W_O").transpose(1, 0, 2).reshape(d, H * m)  # (H, d, m) -> (d, H, m) -> (d, Hm)
    b_qkv = b_O = None
    if spec.attention_bias:
        b_qkv = np.concatenate([get(f"attention.{x}").reshape(H * m) for x in ("b_Q", "b_K", "b_V")])[:, None]
        b_O = _column(get("attention.b_O"))
    norms = [None, None]
    if spec.norm != "none":
        norms = [(_column(get(f"{ln}.gamma")), _column(get(f"{ln}.beta"))) for ln in ("norm1", "norm2")]
    return Block(
        W_qkv, b_qkv, W_O, b_O,
        get("ff.W1"), _column(get("ff.b1")), get("ff.W2"), _column(get("ff.b2")),
        norms[0], norms[1],
    )  # fmt: skip


class Transformer:
    """Block_N o ... o Block_1 (after adding positions), for a spec and its weights, in one dtype."""

    def __init__(self, spec: Spec, weights: Weights, dtype: type | np.dtype = np.float64):
        self.spec = spec
        self.dtype = np.dtype(dtype)
        self.blocks = [stack_block(spec, weights, i, self.dtype) for i in range(spec.N)]
        self.P = np.asarray(weights["positional.P"], self.dtype) if spec.positional == "learned" else None
        self.final_norm = None
        if spec.norm == "pre":
            self.final_norm = tuple(
                _column(np.asarray(weights[f"final_norm.{g}"], self.dtype)) for g in ("gamma", "beta")
            )

    # -- the pieces ----------------------------------------------------------------------------------

    def positions(self, start: int, n: int) -> Array | None:
        """Positional encoding of positions start .. start+n-1: (d, n), or None without positions."""
        if self.spec.positional == "sinusoidal":
            return sinusoidal_positions(self.spec.d, start + n)[:, start:].astype(self.dtype)
        if self.spec.positional == "learned":
            return self.P[:, start : start + n]
        return None

    def qkv(self, blk: Block, X: Array) -> tuple[Array, Array, Array]:
        """Projections of all heads at once: (b, d, n) -> Q, K, V each (b, H, m, n)."""
        b, _, n = X.shape
        QKV = np.matmul(blk.W_qkv, X)  # (b, 3Hm, n)
        if blk.b_qkv is not None:
            QKV += blk.b_qkv
        QKV = QKV.reshape(b, 3, self.spec.H, self.spec.m, n)
        return QKV[:, 0], QKV[:, 1], QKV[:, 2]

    def attend(self, blk: Block, Q: Array, K: Array, V: Array, mask: Array | None) -> tuple[Array, Array]:
        """sum_h W_O^h V_h Softmax(scale K_h^T Q_h): returns the output (b, d, n_q) and weights (b, H, n_k, n_q)."""
        S = scores(Q, K, self.spec.score_scale)
        if mask is not None:
            S += mask
        A = softmax_columns(S)
        heads = np.matmul(V, A)  # (b, H, m, n_q)
        b, H, m, n_q = heads.shape
        out = np.matmul(blk.W_O, heads.reshape(b, H * m, n_q))  # (b, d, n_q)
        if blk.b_O is not None:
            out += blk.b_O
        return out, A

    def feedforward(self, blk: Block, X: Array) -> Array:
        """W2 act(W1 X + b1 1^T) + b2 1^T, without the residual: (b, d, n) -> (b, d, n)."""
        hidden = ACTIVATIONS[self.spec.activation](np.matmul(blk.W1, X) + blk.b1)  # (b, r, n)
        return np.matmul(blk.W2, hidden) + blk.b2

    def apply_block(self, blk: Block, X: Array, attention: Callable[[Array], Array]) -> Array:
        """One block around an attention sublayer (no residual inside it), with the spec's norm placement."""
        eps = self.spec.norm_eps
        if self.spec.norm == "post":
            X = layer_norm(X + attention(X), *blk.norm1, eps)
            return layer_norm(X + self.feedforward(blk, X), *blk.norm2, eps)
        if self.spec.norm == "pre":
            X = X + attention(layer_norm(X, *blk.norm1, eps))
            return X + self.feedforward(blk, layer_norm(X, *blk.norm2, eps))
        X = X + attention(X)
        return X + self.feedforward(blk, X)

    def finish(self, X: Array) -> Array:
        """The final layer norm of pre-norm models; identity otherwise."""
        if self.final_norm is None:
            return X
        return layer_norm(X, *self.final_norm, self.spec.norm_eps)

    # -- the whole pass ------------------------------------------------------------------------------

    def forward(self, X: Array, trace: list | None = None, weights_out: list | None = None) -> Array:
        """Transformer(X) for X of shape (d, n) or (b, d, n); same shape out.

        `trace` receives the RMS of the activations after the positions and after each block;
        `weights_out` receives each block's attention weights (b, H, n_k, n_q).
        """
        X3 = np.asarray(X, dtype=self.dtype)
        X3 = X3[None] if X3.ndim == 2 else X3  # (b, d, n)
        n = X3.shape[-1]
        pe = self.positions(0, n)
        X3 = X3 + pe if pe is not None else X3.copy()
        mask = causal_mask(n, n).astype(self.dtype) if self.spec.mask == "causal" else None
        if trace is not None:
            trace.append(_rms(X3))
        for blk in self.blocks:

            def attention(Z: Array, blk: Block = blk) -> Array:
                out, A = self.attend(blk, *self.qkv(blk, Z), mask)
                if weights_out is not None:
                    weights_out.append(A)
                return out

            X3 = self.apply_block(blk, X3, attention)
            if trace is not None:
                trace.append(_rms(X3))
        X3 = self.finish(X3)
        return X3[0] if np.ndim(X) == 2 else X3

    def __call__(self, X: Array) -> Array:
        return self.forward(X)

    def attention_weights(self, X: Array) -> list[Array]:
        """Each block's attention weights for input X: a list of N arrays (b, H, n_k, n_q)."""
        found: list[Array] = []
        self.forward(X, weights_out=found)
        return found


def _rms(X: Array) -> float:
    return float(np.sqrt(np.mean(np.square(X, dtype=np.float64))))
