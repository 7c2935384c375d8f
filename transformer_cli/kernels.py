"""The seed's building blocks as pure functions on arrays, in the column layout (one column per token).

Shapes are on each signature line. Functions whose names end in `_` overwrite their input.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .errors import overflow
from .position_tables import (  # (re-exported: kernels.sinusoidal_positions, ...)
    alibi_slopes as alibi_slopes,
)
from .position_tables import (
    fairseq_positions as fairseq_positions,
)
from .position_tables import (
    relative_buckets as relative_buckets,
)
from .position_tables import (
    sinusoidal_positions as sinusoidal_positions,
)

Array = np.ndarray

CHUNK_BYTES = 64 << 20  # default budget for one chunk of attention scores (per worker thread)
# queries per chunk of a causal pass: (c + 1) / 2c of the n^2 scores are computed with c chunks (the time it saves:
# docs/performance.md)
CAUSAL_CHUNK = 128


def chunk_size(H: int, n_q: int, n_k: int, itemsize: int, chunk_bytes: int, causal: bool = False) -> int:
    """How many queries of one sequence fit in a chunk of scores (H, chunk, n_k) within chunk_bytes (>= 1); at
    most CAUSAL_CHUNK with a causal mask, whose chunks skip the keys after their last query."""
    size = max(1, min(n_q, chunk_bytes // max(H * n_k * itemsize, 1)))
    return min(size, CAUSAL_CHUNK) if causal else size


def cores() -> int:
    """Cores this process may run on: the threads a batched forward pass uses."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class Stopped(Exception):
    """A worker abandoned its part of the batch: the pass is stopping (Ctrl-C, SIGTERM, or another part failed)."""


def check_stop(stop: threading.Event | None) -> None:
    """Raise Stopped once `stop` is set: a worker calls this between steps of its part."""
    if stop is not None and stop.is_set():
        raise Stopped


def softmax_columns(S: Array) -> Array:
    """The seed's Softmax: softmax of each column (over axis -2, the keys), stable; -inf gives exact zeros."""
    A = S - S.max(axis=-2, keepdims=True)  # (..., n_k, n_q)
    np.exp(A, out=A)
    A /= A.sum(axis=-2, keepdims=True)
    return A


def softmax_rows_(P: Array, normalise: bool = True) -> Array:
    """The same softmax on the transposed scores (..., n_q, n_k), over the last axis, in place; returns the row
    sums (..., n_q, 1) of the exponentials. normalise=False leaves the division to the caller: dividing A V's
    (m, n_q) output by the sums costs n_k/m times less than dividing the (n_q, n_k) weights, same result."""
    P -= P.max(axis=-1, keepdims=True)
    np.exp(P, out=P)
    sums = P.sum(axis=-1, keepdims=True)
    if normalise:
        P /= sums
    return sums


def layer_norm(X: Array, gamma: Array | float, beta: Array | float, eps: float) -> Array:
    """Normalise each column over its d entries (axis 0): (d, b, n) -> (d, b, n); gamma, beta are (d, 1, 1)."""
    mean = X.mean(axis=0)
    centred = X - mean
    var = np.mean(np.square(centred), axis=0)
    if np.isinf(var).any():  # x / sqrt(inf) would be a silent 0; the (b, n) variances are cheap to look at
        raise overflow(X.dtype, "a norm's variance")
    centred *= 1.0 / np.sqrt(var + eps)
    centred *= gamma
    centred += beta
    return centred


def rms_norm(X: Array, gamma: Array | float, eps: float) -> Array:
    """x / sqrt(mean(x^2) + eps) * gamma over the d entries of each column (axis 0): (d, b, n) -> (d, b, n)."""
    mean_square = np.einsum("i...,i...->...", X, X)  # the sum of squares in one pass, no (d, b, n) temporary
    mean_square *= 1.0 / X.shape[0]
    if np.isinf(mean_square).any():  # x / sqrt(inf) would be a silent 0; the (b, n) sums are cheap to look at
        raise overflow(X.dtype, "a norm's mean square")
    out = X * (1.0 / np.sqrt(mean_square + eps))
    out *= gamma
    return out


def relu_(X: Array) -> Array:
    return np.maximum(X, 0, out=X)


def relu2_(X: Array) -> Array:
    """ReLU squared, max(x, 0)^2, overwriting X (Nemotron's and Arcee's `relu2`)."""
    np.maximum(X, 0, out=X)
    X *= X
    return X


def gelu_(X: Array, root: float = math.sqrt(2.0 / math.pi)) -> Array:
    """GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), overwriting X (`root`: sqrt(2/pi))."""
    inner = X * X
    inner *= 0.044715
    inner += 1.0
    inner *= X
    inner *= root  # a Python float keeps X's dtype
    np.tanh(inner, out=inner)
    inner += 1.0
    X *= inner
    X *= 0.5
    return X


_erf = np.frompyfunc(math.erf, 1, 1)  # the C library's erf, element by element: exact, if slower than a ufunc


def gelu_exact_(X: Array) -> Array:
    """GELU, erf form: x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), overwriting X (BERT, GPT-NeoX, Falcon)."""
    inner = np.asarray(_erf(X * (1.0 / math.sqrt(2.0)))).astype(X.dtype)
    inner += 1.0
    X *= inner
    X *= 0.5
    return X


def silu_(X: Array) -> Array:
    """SiLU (swish): x * sigmoid(x) = x / (1 + exp(-x)), overwriting X (exp(-x) = inf gives the exact 0)."""
    denominator = np.negative(X)
    np.exp(denominator, out=denominator)
    denominator += 1.0
    X /= denominator
    return X


def gelu_bloom_(X: Array) -> Array:
    """BLOOM's GELU: the tanh form with sqrt(2/pi) written 0.79788456 (its code's constant), overwriting X."""
    return gelu_(X, 0.79788456)


ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "relu": relu_,
    "gelu": gelu_,
    "gelu_exact": gelu_exact_,
    "silu": silu_,
    "gelu_bloom": gelu_bloom_,
    "relu2": relu2_,
}


def xielu(X: Array, a_p: float, a_n: float, beta: float = 0.5, eps: float = -1e-6) -> Array:
    """xIELU (Apertus): a_p x^2 + beta x for x > 0, else (expm1(min(x, eps)) - x) a_n + beta x."""
    positive = a_p * X * X + beta * X
    negative = (np.expm1(np.minimum(X, eps)) - X) * a_n + beta * X
    return np.where(X > 0, positive, negative).astype(X.dtype, copy=False)


def rotate_(X: Array, cos: Array, sin: Array, pairing: str) -> Array:
    """Rotary positions, overwriting X: (..., m, n) with cos, sin (rot/2, n), one angle per pair and column.

    Each pair (x, y) of X's first rot rows turns to (x cos - y sin, y cos + x sin); the rows past rot stay.
    half: row j pairs with j + rot/2 (LLaMA, GPT-NeoX: rotate_half); interleaved: 2j with 2j + 1 (GPT-J);
    half_reversed: half's pairs turned the other way, by -angle (NanoChat's rotate_half, cat(x2, -x1));
    proportional: row j < rot/2 with j + m/2, the rest stay (Gemma 4's rotate_half over the whole head).
    """
    half = cos.shape[0]
    if pairing == "half_reversed":
        sin, pairing = -sin, "half"
    if pairing == "half":
        x, y = X[..., :half, :], X[..., half : 2 * half, :]
    elif pairing == "proportional":
        m2 = X.shape[-2] // 2
        x, y = X[..., :half, :], X[..., m2 : m2 + half, :]
    else:
        x, y = X[..., 0 : 2 * half : 2, :], X[..., 1 : 2 * half : 2, :]
    x_sin = x * sin  # x before it is overwritten: y's update needs it
    x *= cos
    x -= y * sin
    y *= cos
    y += x_sin
    return X


def causal_mask(q0: int, q1: int, n_k: int) -> Array:
    """Additive mask (q1 - q0, n_k) for queries q0..q1-1: -inf where key k comes after query q, else 0."""
    later = np.arange(n_k)[None, :] > np.arange(q0, q1)[:, None]
    return np.where(later, -np.inf, 0.0)


def window_mask(q0: int, q1: int, k0: int, k1: int, w: int, causal: bool = True) -> Array:
    """Additive mask (q1 - q0, k1 - k0) for queries q0..q1-1 and keys k0..k1-1: 0 where q - w < k <= q (causal;
    unmasked: |q - k| < w, ModernBERT's), else -inf."""
    lag = np.arange(q0, q1)[:, None] - np.arange(k0, k1)[None, :]  # q - k
    seen = (lag >= 0) & (lag < w) if causal else np.abs(lag) < w
    return np.where(seen, 0.0, -np.inf)


def chunk_mask(q0: int, q1: int, k0: int, k1: int, C: int) -> Array:
    """Additive mask (q1 - q0, k1 - k0) for queries q0..q1-1 and keys k0..k1-1 (absolute positions): 0 where
    k <= q in q's chunk of C (C floor(q / C) <= k), else -inf (Llama 4's chunked attention)."""
    q, k = np.arange(q0, q1)[:, None], np.arange(k0, k1)[None, :]
    return np.where((k <= q) & (k // C == q // C), 0.0, -np.inf)


def scaled_queries(Q: Array, scale: float) -> Array:
    """scale * Q, new, in Q's dtype (Q itself for a scale of 1): scaling the (m, n) queries once costs n/m times
    less than scaling the (n, n) scores, and gives the same scaled scores."""
    return Q * Q.dtype.type(scale) if scale != 1.0 else Q


def soft_cap_(X: Array, cap: float) -> Array:
    """cap tanh(X / cap), overwriting X: every entry then lies in (-cap, cap) (Gemma 2's scores and logits)."""
    X *= 1.0 / cap
    np.tanh(X, out=X)
    X *= cap
    return X


WIDEN_PART = 1 << 22  # elements below which widening stays in one thread


def bfloat16_to_float32(bits: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """bfloat16's bits (uint16) as the float32 they are the top half of, exactly, in one pass into one new array
    (widening first and shifting after wrote two arrays of 4 bytes an element: 10x slower here), laid out in memory
    as `bits` is (a transposed matrix stays one: the products that read it then sum in the same order); or into
    `out`, a float32 array of their shape. A large array's rows are shared over the cores (the shift releases the
    GIL: 1.6x on 2 cores from a memory-mapped file, whose pages fault in on both)."""
    wide = np.empty_like(bits, dtype=np.uint32) if out is None else out.view(np.uint32)
    bits = bits.astype(np.uint16, copy=False)
    parts = min(cores(), bits.size // WIDEN_PART, bits.shape[0] if bits.ndim else 1)
    if parts < 2:
        np.left_shift(bits, np.uint32(16), out=wide)
        return wide.view(np.float32)
    edges = np.linspace(0, bits.shape[0], parts + 1).astype(int)
    rows = [slice(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    list(_widening().map(lambda part: np.left_shift(bits[part], np.uint32(16), out=wide[part]), rows))
    return wide.view(np.float32)


@functools.cache
def _widening() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max(cores(), 1), thread_name_prefix="tfm-widen")


def linear(W: Array, X: Array) -> Array:
    """W X for X of shape (d, b, n): one matrix product over all b*n columns -> (rows of W, b, n)."""
    d, b, n = X.shape
    return np.matmul(W, X.reshape(d, b * n)).reshape(W.shape[0], b, n)


Bias = Callable[[int, int, int, int], "Array | None"]  # (first query, queries, first key, keys) -> (H, q, k) or None


@dataclass(frozen=True, eq=False)
class Attend:
    """How an attention runs, besides its arrays (`attend`'s options; a layer's are made once, a call's changes
    replace them).

    The scores are scaled by `scale`. With `causal`, query q sees keys 0..q only (and the keys after a chunk's last
    query are never touched); with a `window` w too, only keys q - w + 1 .. q (and the keys before a chunk's first
    window are never touched); a `window` without `causal`: keys q - w + 1 .. q + w - 1 (ModernBERT's).
    `bias(q0, c, k0, k)` adds a position bias (H, c, k) to the scores of queries q0.. and keys k0.. (relative
    positions); `content(i, q0, c, k0, k)` adds sequence i's own (DeBERTa's, from its queries and keys). With
    `softcap` c, each scaled score s becomes c tanh(s / c) before the mask (Gemma 2). With `sinks`
    (H,), head h's softmax has one more logit, sinks[h], beside the keys' scores, whose weight is dropped: a query's
    weights then sum to less than 1 (gpt-oss). `chunk_bytes` bounds the scores held at once. Once `stop` is set,
    the next chunk raises Stopped. `weights_out` receives the weights (b, H, n_k, n_q); `scores_out` the scaled
    scores before any mask, (b, H, n_q, n_k) (the scaling check reads them). The last `tail` keys are not positions:
    every chunk reads them after its band of the others, `content` masking them (DeepSeek-V4's pooled entries).
    """

    scale: float = 1.0
    causal: bool = False
    window: int | None = None
    chunk: int | None = None  # Llama 4's chunked attention: query t sees keys C floor(t / C) .. t (causal)
    first: int = 0  # the absolute position of query and key 0 (the chunks' boundaries are absolute)
    bias: Bias | None = None
    content: Callable[[int, int, int, int, int], Array] | None = None  # (sequence, q0, c, k0, k) -> (H, c, k)
    softcap: float | None = None
    sinks: Array | None = None
    chunk_bytes: int = CHUNK_BYTES
    stop: threading.Event | None = None
    weights_out: list | None = None
    scores_out: list | None = None
    tail: int = 0


def attend(
    Q: Array, K: Array, V: Array, how: Attend, out: Array | None = None, part: tuple[int, int] = (0, 1)
) -> Array:
    """Each head's V Softmax(scale K^T Q), a chunk of queries at a time, as `how` says: -> heads (H, m_v, b, n_q).

    Q: (b, H, m, n_q); K: (b, G, m, n_k), V: (b, G, m_v, n_k) (m_v = m but in latent attention), key/value head g
    serving query heads g H/G .. (g + 1) H/G - 1 (one product per group, never repeated).

    `out` and `part` (i, parts): write into `out` (H, m_v, b, n_q) the chunks i, i + parts, ... only, so that
    `parts` threads share one call's chunks (the model runs them; weights_out and scores_out are not shared).
    """
    scale, causal, window, bias, softcap, sinks = how.scale, how.causal, how.window, how.bias, how.softcap, how.sinks
    stop, weights_out, scores_out = how.stop, how.weights_out, how.scores_out
    b, H, m, n_q = Q.shape
    G, n_k, m_v = K.shape[1], K.shape[-1], V.shape[2]
    tail = slice(n_k - how.tail, n_k)  # (keys every chunk reads after its band: empty but with a tail)
    dtype = Q.dtype
    group = (G, H // G)  # query heads as (key/value head, query head within its group)
    heads = np.empty((H, m_v, b, n_q), dtype=dtype) if out is None else out
    into = heads.transpose(2, 0, 1, 3)  # (b, H, m, n_q) view
    A = np.zeros((b, H, n_q, n_k), dtype=dtype) if weights_out is not None else None
    S = np.zeros((b, H, n_q, n_k), dtype=dtype) if scores_out is not None else None
    Q = scaled_queries(Q, scale)
    sink = None if sinks is None else np.asarray(sinks, dtype=dtype).reshape(H, 1, 1)
    step = chunk_size(H, n_q, n_k, dtype.itemsize, how.chunk_bytes, causal or bool(window))  # (bands: chunks)
    # causal without a window: a chunk's queries see every key before the chunk, so only the square of the
    # chunk's own keys is masked, and that square is the same for every chunk: made once, added to c^2 scores
    chunk = how.chunk if causal else None
    own = causal_mask(0, step, step).astype(dtype) if causal and not window and not chunk else None
    for q0 in range(part[0] * step, n_q, part[1] * step):
        q1 = min(q0 + step, n_q)
        k1 = q1 if causal else n_k - how.tail  # keys after the chunk's last query are all masked
        k0 = max(0, q0 - window + 1) if window else 0  # and those before its first window
        if window and not causal:  # and, unmasked, those after its last query's window
            k1 = min(n_k, q1 + window - 1)
        if chunk:  # and those before its first query's attention chunk
            k0 = max(0, (how.first + q0) // chunk * chunk - how.first)
        mask = None  # the same for every sequence of the batch: a window's mask and the position bias
        if window:
            mask = window_mask(q0, q1, k0, k1, window, causal).astype(dtype)
        elif chunk:
            mask = chunk_mask(q0 + how.first, q1 + how.first, k0 + how.first, k1 + how.first, chunk).astype(dtype)
        extra = None if bias is None else bias(q0, q1 - q0, k0, k1 - k0)
        if extra is not None:
            mask = extra if mask is None else extra + mask
        c, k = q1 - q0, k1 - k0
        if mask is not None and how.tail:  # (the tail's: content's)
            mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, how.tail)])
        for i in range(b):  # one sequence at a time: its scores stay in cache, and memory stays O(n)
            check_stop(stop)
            # each key/value head's query heads as one block of rows ((H/G) c, m), so a group's scores are one
            # product with its keys and its outputs one product with its values, never a product per head
            # (with groups this copies the chunk's queries; with G = H it is a view)
            rows = Q[i, ..., q0:q1].reshape(*group, m, c).swapaxes(-1, -2).reshape(G, -1, m)
            keys = K[i, ..., k0:k1] if not how.tail else np.concatenate([K[i, ..., k0:k1], K[i, ..., tail]], -1)
            P = np.matmul(rows, keys).reshape(H, c, k + how.tail)  # (H, c, k) scores, queries as rows
            if S is not None:
                S[i, :, q0:q1, k0:k1], S[i, :, q0:q1, tail] = P[..., :k], P[..., k:]
            if softcap is not None:
                soft_cap_(P, softcap)
            if how.content is not None:  # a bias of this sequence's own queries and keys (DeBERTa's), scaled
                P += how.content(i, q0, c, k0, k)
            if mask is not None:
                P += mask
            if own is not None:
                P[..., q0:q1] += own[:c, :c]
            if sink is None:
                sums = softmax_rows_(P, normalise=False)  # exp(scores - max) and their sums (H, c, 1)
            else:  # the sink's logit in the max and in the sum, not among the weights
                top = np.maximum(P.max(axis=-1, keepdims=True), sink)
                P -= top
                np.exp(P, out=P)
                sums = P.sum(axis=-1, keepdims=True) + np.exp(sink - top)
            values = (
                V[i, ..., k0:k1]
                if not how.tail
                else keys
                if V is K
                else np.concatenate([V[i, ..., k0:k1], V[i, ..., tail]], -1)
            )
            outputs = np.matmul(values, P.reshape(G, -1, k + how.tail).swapaxes(-1, -2))  # (G, m, (H/G) c)
            # divided by the sums on the way into the heads: the (m, c) outputs, not the (c, k) weights
            np.divide(
                outputs.reshape(G, m_v, group[1], c).swapaxes(1, 2),
                sums.reshape(*group, 1, c),
                out=into[i, ..., q0:q1].reshape(*group, m_v, c),
            )
            if A is not None:  # the weights themselves, when asked for (the outputs are the same either way)
                A[i, :, q0:q1, k0:k1], A[i, :, q0:q1, tail] = P[..., :k] / sums, P[..., k:] / sums
    if weights_out is not None and A is not None:
        weights_out.append(A.swapaxes(-1, -2))
    if scores_out is not None:
        scores_out.append(S)
    return heads
