"""Hyper-connections (manifold-constrained, DeepSeek-V4's mHC; spec key hc_streams): the residual as n streams
S_0 .. S_{n-1} of d rows (n d rows a column), each the embedded column at first. Around each sublayer f (attention,
then the feedforward), from the streams' unweighted RMS-normed concatenation s (n d rows):

    pre  = sigmoid(a_0 (W s)_pre + b_pre) + eps                      (n,) per token
    post = 2 sigmoid(a_1 (W s)_post + b_post)                         (n,)
    C    = softmax over k of (a_2 (W s)_C + b_C) + eps, (n, n); its columns then rows made to sum to 1 by Sinkhorn
    y    = f(N(sum_j pre_j S_j))                                      (the sublayer on the collapsed streams)
    S_k  = post_k y + sum_j C_jk S_j

with W ((2 + n) n, n d), b ((2 + n) n) and a (3) each sublayer's own (hc_attn., hc_ff.). After the last block the
head reads sum_j pre_j S_j with pre made as above from the model's hc_head (W (n, n d), b (n), a (1)). Everything is
per token: causality, equivariance and decoding are the sublayers'.

hc_form independent (HY-V4's) has no mix: W (2n, n d), b (2n), a (2), post = s sigmoid(...) + eps with s
hc_post_scale, and S_k = post_k y + S_k. hc_head mean (GLM-5-Next's) reads the streams' plain mean.

hc_form gated (Qwen4's gated residual) norms each stream (an RMSNorm of d per stream of eps hc_eps, gain g (n d),
1 + g with norm_plus_one) into N, then

    m    = sigmoid(W_up silu(W_down N / n))                          (n d) per token, W_down (r, n d), W_up (n d, r)
    y    = f(mean_k m_k N_k)                                          (no other norm before the sublayer)
    S_k  = S_k + 2 sigmoid((W_inject N)_k / n) y                      W_inject (n, n d)

and the head reads mean_k m_k N_k of its own norm, W_down and W_up (hc_head.*): norm none, no final norm.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from .base import Component, Pairs, Tensor, Term
from .norm import RMS_PER_ENTRY

KIND = "hyper"
SIGMOID_PER_ENTRY = 4  # (exp, add, divide, and the scale)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def gated_tensors(spec, prefix: str, inject: bool = True) -> list[Tensor]:
    """The gated form's tensors of a sublayer (with its injection) or of the head: the streams' norm, the gate."""
    n, d, r = spec.hc_streams or 0, spec.d, spec.hc_rank or 0
    shapes = {"norm.gamma": (n * d,), "W_down": (r, n * d), "W_up": (n * d, r)}
    shapes |= {"W_inject": (n, n * d)} if inject else {}
    return [Tensor(prefix + name, shape, KIND) for name, shape in shapes.items()]


class HyperConnections(Component):
    """A block's part: each sublayer's projection W ((2 + n) n, n d), its biases ((2 + n) n) and its 3 scales."""

    def _rows(self) -> tuple[int, int]:
        """(the projection's rows, the scales): (2 + n) n and 3 mixed, 2n and 2 independent."""
        n = self.spec.hc_streams or 0
        return ((2 + n) * n, 3) if self.spec.hc_form == "mixed" else (2 * n, 2)

    def tensors(self, prefix: str) -> list[Tensor]:
        n, d = self.spec.hc_streams or 0, self.spec.d
        if self.spec.hc_form == "gated":
            return [t for part in ("attn", "ff") for t in gated_tensors(self.spec, f"{prefix}hc_{part}.")]
        rows, scales = self._rows()
        return [
            Tensor(f"{prefix}hc_{part}.{name}", shape, KIND)
            for part in ("attn", "ff")
            for name, shape in (("W", (rows, n * d)), ("b", (rows,)), ("scale", (scales,)))
        ]

    def terms(self) -> list[Term]:
        n, d = self.spec.hc_streams or 0, self.spec.d
        if self.spec.hc_form == "gated":
            r = self.spec.hc_rank or 0
            return [Term("2 (n d (2r + n + 1)) (hyper)", 2 * n * d * (2 * r + n + 1), "block")]
        rows, scales = self._rows()
        name = "2 ((2 + n) n (n d + 1) + 3)" if self.spec.hc_form == "mixed" else "2 (2n (n d + 1) + 2)"
        return [Term(f"{name} (hyper)", 2 * (rows * (n * d + 1) + scales), "block")]

    def flops(self, b: int, n_tokens: int, pairs: Pairs) -> dict[str, int]:
        """Per sublayer and token: the norm and projection of n d rows, the weights (sigmoids; mixed: the softmax,
        Sinkhorn's sums and divisions), the collapse (n d) and the expansion (mixed: and the mix, n d (n + 1))."""
        n, d = self.spec.hc_streams or 0, self.spec.d
        if self.spec.hc_form == "gated":  # (the norm, the gate's two products and sigmoid, the mean, the injection)
            r = self.spec.hc_rank or 0
            per = RMS_PER_ENTRY * n * d + 4 * r * n * d + SIGMOID_PER_ENTRY * n * d + 2 * n * d + 2 * n * n * d
            return {"hyper": self.spec.N * 2 * (per + 2 * n * d) * b * n_tokens}
        rows, _ = self._rows()
        mixed = self.spec.hc_form == "mixed"
        sinkhorn = 3 * n * n + 4 * n * n * self.spec.hc_sinkhorn if mixed else 0
        weights = 2 * rows + SIGMOID_PER_ENTRY * 2 * n + sinkhorn
        per = RMS_PER_ENTRY * n * d + 2 * rows * n * d + weights + 2 * n * d + 2 * n * d * (n + 1 if mixed else 1)
        return {"hyper": self.spec.N * 2 * per * b * n_tokens}


class HyperHead(Component):
    """The model's part before the final norm: the head's weights of the streams, W (n, n d), b (n), a (1)."""

    where = "output"

    def tensors(self, prefix: str) -> list[Tensor]:
        n, d = self.spec.hc_streams or 0, self.spec.d
        if self.spec.hc_form == "gated":
            return gated_tensors(self.spec, "hc_head.", inject=False)
        if self.spec.hc_head == "mean":
            return []
        return [
            Tensor("hc_head.W", (n, n * d), KIND),
            Tensor("hc_head.b", (n,), KIND),
            Tensor("hc_head.scale", (1,), KIND),
        ]

    def terms(self) -> list[Term]:
        n, d = self.spec.hc_streams or 0, self.spec.d
        if self.spec.hc_form == "gated":
            return [Term("n d (2r + 1) (hyper head)", n * d * (2 * (self.spec.hc_rank or 0) + 1), "model")]
        if self.spec.hc_head == "mean":
            return []
        return [Term("n (n d + 1) + 1 (hyper head)", n * (n * d + 1) + 1, "model")]

    def flops(self, b: int, n_tokens: int, pairs: Pairs) -> dict[str, int]:
        n, d = self.spec.hc_streams or 0, self.spec.d
        weights = 0 if self.spec.hc_head == "mean" else RMS_PER_ENTRY * n * d + 2 * n * n * d + SIGMOID_PER_ENTRY * n
        return {"hyper": (weights + 2 * n * d) * b * n_tokens}


def copied(X: np.ndarray, n: int) -> np.ndarray:
    """The embedded columns X (d, b, t) as n streams, (n d, b, t): a copy in each (every form's start)."""
    return np.ascontiguousarray(np.broadcast_to(X, (n, *X.shape))).reshape(-1, *X.shape[1:])


def hyper_parts(spec) -> list[Component]:
    """A block's hyper-connections (none without hc_streams)."""
    return [HyperConnections(spec)] if spec.hc_streams else []


class HyperState:
    """A model's hyper-connections ready for the pass: each block's two sublayers' weights and the head's."""

    def __init__(self, spec, get) -> None:
        self.spec, self.n = spec, spec.hc_streams

        def part(i: int, name: str) -> tuple:
            return tuple(get(f"blocks.{i}.hc_{name}.{x}") for x in ("W", "b", "scale"))

        self.blocks = [(part(i, "attn"), part(i, "ff")) for i in range(spec.N)]
        self.head = tuple(get(f"hc_head.{x}") for x in ("W", "b", "scale")) if spec.hc_head == "weighted" else ()

    def _mixes(self, W: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """W times the streams' unweighted RMS-normed concatenation: (rows, b, n)."""
        square = np.einsum("i...,i...->...", Z, Z) * (1.0 / Z.shape[0])
        return kernels.linear(W, Z / np.sqrt(square + self.spec.norm_eps))

    def _collapsed(self, pre: np.ndarray, S: np.ndarray) -> np.ndarray:
        return np.einsum("jbt,jdbt->dbt", pre, S)

    def _weights(self, w: tuple, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(pre (n, b, t), post (n, b, t), C (n, n, b, t), or None independent) of a sublayer from the streams Z
        (n d, b, t)."""
        W, bias, scale = w
        n, eps = self.n, self.spec.hc_eps
        mixes = self._mixes(W, Z)
        bias = bias.reshape(-1, 1, 1)
        pre = _sigmoid(mixes[:n] * scale[0] + bias[:n]) + eps
        post = self.spec.hc_post_scale * _sigmoid(mixes[n : 2 * n] * scale[1] + bias[n : 2 * n])
        if self.spec.hc_form == "independent":  # (HY-V4's: no mix, post's eps too)
            return pre, post + eps, None
        logits = (mixes[2 * n :] * scale[2] + bias[2 * n :]).reshape(n, n, *Z.shape[1:])
        C = np.exp(logits - logits.max(axis=1, keepdims=True))
        C = C / C.sum(axis=1, keepdims=True) + eps
        C /= C.sum(axis=0, keepdims=True) + eps
        for _ in range(self.spec.hc_sinkhorn - 1):
            C /= C.sum(axis=1, keepdims=True) + eps
            C /= C.sum(axis=0, keepdims=True) + eps
        return pre, post, C

    def stack(self, X: np.ndarray) -> np.ndarray:
        return copied(X, self.n)

    def unstack(self, Z: np.ndarray) -> np.ndarray:
        """The streams (n d, b, t) as the column the final norm reads: their sum weighted by the head's pre."""
        S = Z.reshape(self.n, -1, *Z.shape[1:])
        if not self.head:  # (GLM-5-Next's: their mean)
            return S.mean(axis=0)
        W, bias, scale = self.head
        pre = _sigmoid(self._mixes(W, Z) * scale[0] + bias.reshape(-1, 1, 1)) + self.spec.hc_eps
        return self._collapsed(pre, S)

    def block(self, i: int, Z: np.ndarray, attention, feedforward, normed, norms: tuple, per_layer) -> np.ndarray:
        """Block i on the streams Z (n d, b, t): each sublayer on the collapsed streams, its output expanded back
        into the streams mixed by C."""
        S = Z.reshape(self.n, -1, *Z.shape[1:])
        for w, sublayer, norm in zip(self.blocks[i], (attention, feedforward), norms[:2], strict=True):
            pre, post, C = self._weights(w, S.reshape(Z.shape))
            y = sublayer(normed(self._collapsed(pre, S), norm))
            kept = S if C is None else np.einsum("jkbt,jdbt->kdbt", C, S)  # (independent: each stream its own)
            S = np.einsum("kbt,dbt->kdbt", post, y) + kept
        return S.reshape(Z.shape)


class GatedState:
    """A model's gated residual streams (Qwen4's) ready for the pass: each sublayer's norm, gate and injection, the
    head's norm and gate (hc_form gated)."""

    def __init__(self, spec, get) -> None:
        self.spec, self.n = spec, spec.hc_streams
        names = ("norm.gamma", "W_down", "W_up")
        self.blocks = [
            tuple(tuple(get(f"blocks.{i}.hc_{part}.{x}") for x in (*names, "W_inject")) for part in ("attn", "ff"))
            for i in range(spec.N)
        ]
        self.head = tuple(get(f"hc_head.{x}") for x in names)
        self.plus_one = spec.norm_plus_one  # (Qwen4's: gains of 1 + w)

    def _mixed(self, w: tuple, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the sublayer's input mean_k m_k N_k (d, b, t), the normed streams N (n d, b, t))."""
        gamma, W_down, W_up = w[:3]
        S = Z.reshape(self.n, -1, *Z.shape[1:])
        square = np.einsum("kd...,kd...->k...", S, S) * (1.0 / S.shape[1])
        N = S / np.sqrt(square[:, None] + self.spec.hc_eps)  # (the gated form's eps: its norms')
        N = N.reshape(Z.shape) * ((1.0 + gamma) if self.plus_one else gamma).reshape(-1, 1, 1)
        hidden = kernels.linear(W_down, N) * (1.0 / self.n)
        m = _sigmoid(kernels.linear(W_up, hidden * _sigmoid(hidden)))
        return (m * N).reshape(self.n, -1, *Z.shape[1:]).mean(axis=0), N

    def stack(self, X: np.ndarray) -> np.ndarray:
        return copied(X, self.n)

    def unstack(self, Z: np.ndarray) -> np.ndarray:
        return self._mixed(self.head, Z)[0]

    def block(self, i: int, Z: np.ndarray, attention, feedforward, normed, norms: tuple, per_layer) -> np.ndarray:
        """Block i on the streams Z (n d, b, t): each sublayer on its gated mean, injected into every stream."""
        S = Z.reshape(self.n, -1, *Z.shape[1:])
        for w, sublayer in zip(self.blocks[i], (attention, feedforward), strict=True):
            x, N = self._mixed(w, S.reshape(Z.shape))
            injection = 2.0 * _sigmoid(kernels.linear(w[3], N) * (1.0 / self.n))  # (n, b, t)
            S = S + np.einsum("kbt,dbt->kdbt", injection, sublayer(x))
        return S.reshape(Z.shape)


__all__ = ["GatedState", "HyperConnections", "HyperHead", "HyperState", "hyper_parts"]
