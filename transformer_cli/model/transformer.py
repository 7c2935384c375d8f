"""The transformer forward pass in NumPy, in the seed's column layout: one column per token.

Inside the model a batch is held as X of shape (d, b, n): the b sequences' columns side by side, so every
projection is one matrix product over all b*n columns. The per-head weights (H, m, d) are stacked into one
(3Hm, d) projection and the output weights (H, d, m) into one (d, Hm) matrix, so no loop runs over heads.
Attention is computed for a chunk of queries at a time, so its extra memory grows as O(n), not O(n^2).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

from ..analysis.memory import CHUNK_BYTES, chunk_size
from ..components import feedforward
from ..components.embedding import embedding
from ..components.norm import block_norm, norm_kind
from ..components.positional import Rotary
from ..errors import SpecError
from ..io.weights import Weights
from ..kernels import (
    Array,
    causal_mask,
    linear,
    relative_buckets,
    rotate_,
    scaled_queries,
    sinusoidal_positions,
    softmax_rows_,
    window_mask,
)
from ..spec.definition import Spec
from .cross import Cross, cross_scale, memory_keys, project, queries, stack_cross
from .parallel import check_stop, run_parts

PARALLEL_MIN_SIZE = 1 << 16  # below this many activations, threads cost more than they save


def available_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_BLAS = ThreadpoolController()  # found once: limiting BLAS's threads is then a cheap call (~3 us, not ~200 us)


@dataclass
class Block:
    """One block's weights, stacked so that all heads go through one matmul; vectors as (k, 1, 1) columns."""

    W_qkv: Array  # ((H + 2G)m, d): rows are [W_Q^1..W_Q^H, W_K^1..W_K^G, W_V^1..W_V^G]
    b_qkv: Array | None  # ((H + 2G)m, 1, 1)
    W_O: Array  # (d, Hm): columns h*m .. (h+1)*m - 1 are W_O^h
    b_O: Array | None  # (d, 1, 1)
    W1: Array  # (r, d), or gated (2r, d): W1 over W3
    b1: Array | None  # (r, 1, 1) or (2r, 1, 1)
    W2: Array  # (d, r)
    b2: Array | None  # (d, 1, 1)
    norm1: tuple[Array, ...] | None  # the norm's parameters as (d, 1, 1) columns: gamma, beta (layernorm) or gamma
    norm2: tuple[Array, ...] | None
    router: Array | None = None  # (E, d) with experts, whose W1, b1, W2, b2 then carry a leading axis E
    qk_norm: tuple | None = None  # the query and the key heads' norm parameters, as (m, 1, 1, 1) columns


def _column(v: Array) -> Array:
    return v.reshape(-1, 1, 1)


def stack_block(spec: Spec, w: Weights, i: int, dtype: np.dtype) -> Block:
    """Gather block i's weights from the flat dict and stack the heads."""
    p = f"blocks.{i}."
    H, m, d = spec.H, spec.m, spec.d

    def get(name: str) -> Array:
        return np.asarray(w[p + name], dtype=dtype)

    W_qkv = np.concatenate([get(f"attention.{x}").reshape(-1, d) for x in ("W_Q", "W_K", "W_V")])
    W_O = np.ascontiguousarray(get("attention.W_O").transpose(1, 0, 2).reshape(d, H * m))  # (H, d, m) -> (d, Hm)
    b_qkv = b_O = None
    if spec.attention_bias:
        b_qkv = _column(np.concatenate([get(f"attention.{x}").reshape(-1) for x in ("b_Q", "b_K", "b_V")]))
    if spec.has_out_bias:
        b_O = _column(get("attention.b_O"))
    ff, norm = feedforward(spec), block_norm(spec)
    qk = None
    if spec.qk_norm:  # gains (m,) shaped to broadcast over heads moved to axis 0: (m, b, H, n)
        kind = norm_kind(spec)
        qk = tuple(tuple(a.reshape(-1, 1, 1, 1) for a in kind.stacked(lambda g, x=x: get(f"attention.{x}_norm.{g}")))
                   for x in "qk")  # fmt: skip
    return Block(W_qkv, b_qkv, W_O, b_O, **ff.prepare(get), **norm.prepare(get), qk_norm=qk)


class Transformer:
    """Block_N o ... o Block_1 (after adding positions), for a spec and its weights, in one dtype.

    chunk_bytes bounds the attention scores held at once: queries are processed in chunks that fit it.
    workers: threads a batch is split over (default: the cores this process may use).
    """

    def __init__(
        self,
        spec: Spec,
        weights: Weights,
        dtype: type | np.dtype = np.float64,
        chunk_bytes: int = CHUNK_BYTES,
        workers: int | None = None,
    ):
        self.spec = spec
        self.dtype = np.dtype(dtype)
        self.chunk_bytes = chunk_bytes
        self.workers = available_cores() if workers is None else workers
        self.blocks = [stack_block(spec, weights, i, self.dtype) for i in range(spec.N)]
        self.crosses = None  # an encoder-decoder's decoder: each block's cross-attention (model/cross.py)
        if spec.N_enc:
            self.crosses = [stack_cross(spec, weights, i, self.dtype, norm_kind(spec)) for i in range(spec.N)]
        self.P = np.asarray(weights["positional.P"], self.dtype) if spec.positional == "learned" else None
        self.ff, self.norm = feedforward(spec), block_norm(spec)
        self.qk_norm = norm_kind(spec) if spec.qk_norm else None  # made once, not on every projection
        self.embedding, self.E = embedding(spec), None
        self.W_head = self.b_head = None  # the head: logits = W_head Z + b_head, (V, d) and (V, 1, 1)
        self.embedded: dict = {}  # token type 0 (d, 1, 1) and the embedding norm's parameters, where the spec has them
        if spec.V:
            self.E = np.asarray(weights["embedding.E"], self.dtype)  # (d, V)
            if spec.head:
                self.W_head = self.E.T if spec.tie_embeddings else np.asarray(weights["head.W"], self.dtype)
            self.b_head = _column(np.asarray(weights["head.b"], self.dtype)) if spec.head_bias else None
            if spec.type_vocab:
                self.embedded["T0"] = _column(np.asarray(weights["embedding.T"], self.dtype)[:, 0])
            if spec.embed_norm:
                get = lambda g: np.asarray(weights[f"embedding.norm.{g}"], self.dtype)  # noqa: E731
                self.embedded["norm"] = self.embedding.norm.stacked(get)
        self.rope = Rotary(spec) if spec.positional == "rope" else None
        if self.rope is not None:
            self.rope.check_runnable()
        self.rel_bias = None  # T5's table (rel_buckets, H): a bias on each score by the key's distance bucket
        if spec.positional == "relative":
            self.rel_bias = np.asarray(weights["positional.rel_bias"], self.dtype)
        self._rope_tables: tuple = (None, None, None)  # (start, n), cos, sin: the last tables made
        self.final_norm = None
        if spec.norm == "pre":
            self.final_norm = self.norm.stacked(lambda g: np.asarray(weights[f"final_norm.{g}"], self.dtype))

    # -- the pieces ----------------------------------------------------------------------------------

    def positions(self, start: int, n: int) -> Array | None:
        """Positional encoding of positions start .. start+n-1: (d, n), or None without positions."""
        if self.spec.positional == "sinusoidal":
            return sinusoidal_positions(self.spec.d, start + n)[:, start:].astype(self.dtype)
        if self.spec.positional == "learned":
            offset = start + (self.spec.position_offset or 0)  # BART's table keeps its first columns unused
            return self.P[:, offset : offset + n]
        return None

    def qkv(self, blk: Block, X: Array) -> tuple[Array, Array, Array]:
        """Projections of all heads at once: (d, b, n) -> Q (b, H, m, n), K and V (b, G, m, n), views."""
        _, b, n = X.shape
        H, G, m = self.spec.H, self.spec.kv_heads, self.spec.m
        QKV = linear(blk.W_qkv, X)  # ((H + 2G)m, b, n)
        if blk.b_qkv is not None:
            QKV += blk.b_qkv
        QKV = QKV.reshape(H + 2 * G, m, b, n).transpose(2, 0, 1, 3)  # (b, H + 2G, m, n)
        if blk.qk_norm is not None:  # each query and key head normalised over its m entries, in place
            kind = self.qk_norm
            for part, params in ((QKV[:, :H], blk.qk_norm[0]), (QKV[:, H : H + G], blk.qk_norm[1])):
                part[...] = kind.apply(part.transpose(2, 0, 1, 3), params).transpose(1, 2, 0, 3)
        return QKV[:, :H], QKV[:, H : H + G], QKV[:, H + G :]

    def rotate(self, Q: Array, K: Array, start: int, key_start: int | None = None) -> None:
        """Rotary positions, in place: Q's columns at positions start.., K's at key_start.. (default: start).

        Q: (b, H, m, n_q), K: (b, heads, m, n_k). Nothing happens without rope.
        """
        if self.rope is None:
            return
        for X, first in ((Q, start), (K, start if key_start is None else key_start)):
            rotate_(X, *self._rotary_tables(first, X.shape[-1]), self.spec.rope_pairing)

    def _rotary_tables(self, start: int, n: int) -> tuple[Array, Array]:
        """cos, sin for positions start .. start+n-1, kept for the next call (every block asks for the same)."""
        key, cos, sin = self._rope_tables
        if key != (start, n):
            cos, sin = self.rope.tables(start, n, self.dtype)
            self._rope_tables = ((start, n), cos, sin)  # one assignment: threads see old or new, never a mix
        return cos, sin

    def attend(
        self,
        Q: Array,
        K: Array,
        V: Array,
        causal: bool,
        weights_out: list | None = None,
        scores_out: list | None = None,
        stop: threading.Event | None = None,
        window: int | None = None,
        scale: float | None = None,
        positions: tuple[int, int] | None = None,
    ) -> Array:
        """Each head's V Softmax(scale K^T Q), a chunk of queries at a time: -> heads (H, m, b, n_q).

        Q: (b, H, m, n_q); K, V: (b, G, m, n_k), key/value head g serving query heads g H/G .. (g + 1) H/G - 1
        (one product per group, never repeated). With `causal`, query q sees keys 0..q only (and the keys
        after a chunk's last query are never touched); with a `window` w too, only keys q - w + 1 .. q (and the
        keys before a chunk's first window are never touched). `weights_out` receives the weights (b, H, n_k, n_q);
        `scores_out` the scaled scores before any mask, (b, H, n_q, n_k) (the scaling check reads them).
        Once `stop` is set, the next chunk raises Stopped. With relative positions, `positions` are those of the
        first query and the first key (the scores get the table's bias for each key-minus-query distance).
        """
        b, H, m, n_q = Q.shape
        G, n_k = K.shape[1], K.shape[-1]
        group = (G, H // G)  # query heads as (key/value head, query head within its group)
        heads = np.empty((H, m, b, n_q), dtype=self.dtype)
        into = heads.transpose(2, 0, 1, 3)  # (b, H, m, n_q) view
        A = np.zeros((b, H, n_q, n_k), dtype=self.dtype) if weights_out is not None else None
        S = np.zeros((b, H, n_q, n_k), dtype=self.dtype) if scores_out is not None else None
        Q = scaled_queries(Q, self.spec.score_scale if scale is None else scale)
        step = chunk_size(H, n_q, n_k, self.dtype.itemsize, self.chunk_bytes, causal)
        # causal without a window: a chunk's queries see every key before the chunk, so only the square of the
        # chunk's own keys is masked, and that square is the same for every chunk: made once, added to c^2 scores
        own = causal_mask(0, step, step).astype(self.dtype) if causal and not window else None
        for q0 in range(0, n_q, step):
            q1 = min(q0 + step, n_q)
            k1 = q1 if causal else n_k  # keys after the chunk's last query are all masked
            k0 = max(0, q0 - window + 1) if causal and window else 0  # and those before its first window
            mask = None  # the same for every sequence of the batch: a window's mask and the relative bias
            if causal and window:
                mask = window_mask(q0, q1, k0, k1, window).astype(self.dtype)
            if positions is not None and self.rel_bias is not None:
                bias = self.relative_bias(positions[0] + q0, q1 - q0, positions[1] + k0, k1 - k0)
                mask = bias if mask is None else bias + mask
            c, k = q1 - q0, k1 - k0
            for i in range(b):  # one sequence at a time: its scores stay in cache, and memory stays O(n)
                check_stop(stop)
                # each key/value head's query heads as one block of rows ((H/G) c, m), so a group's scores are one
                # product with its keys and its outputs one product with its values, never a product per head
                # (with groups this copies the chunk's queries; with G = H it is a view)
                rows = Q[i, ..., q0:q1].reshape(*group, m, c).swapaxes(-1, -2).reshape(G, -1, m)
                P = np.matmul(rows, K[i, ..., k0:k1]).reshape(H, c, k)  # (H, c, k) scores, queries as rows
                if S is not None:
                    S[i, :, q0:q1, k0:k1] = P
                if mask is not None:
                    P += mask
                if own is not None:
                    P[..., q0:q1] += own[:c, :c]
                sums = softmax_rows_(P, normalise=False)  # exp(scores - max) and their sums (H, c, 1)
                out = np.matmul(V[i, ..., k0:k1], P.reshape(G, -1, k).swapaxes(-1, -2))  # (G, m, (H/G) c)
                # divided by the sums on the way into the heads: the (m, c) outputs, not the (c, k) weights
                np.divide(out.reshape(G, m, group[1], c).swapaxes(1, 2), sums.reshape(*group, 1, c),
                          out=into[i, ..., q0:q1].reshape(*group, m, c))  # fmt: skip
                if A is not None:  # the weights themselves, when asked for (the outputs are the same either way)
                    np.divide(P, sums, out=A[i, :, q0:q1, k0:k1])
        if weights_out is not None:
            weights_out.append(A.swapaxes(-1, -2))
        if scores_out is not None:
            scores_out.append(S)
        return heads

    def relative_bias(self, first_query: int, queries: int, first_key: int, keys: int) -> Array:
        """The relative position bias of those queries and keys: (H, queries, keys), table[bucket(s - t), h]."""
        lags = np.arange(first_key, first_key + keys)[None, :] - np.arange(first_query, first_query + queries)[:, None]
        s = self.spec
        buckets = relative_buckets(lags, s.rel_buckets, s.rel_max_distance, bidirectional=s.mask != "causal")
        return np.ascontiguousarray(self.rel_bias[buckets].transpose(2, 0, 1))

    def project(self, blk: Block, heads: Array) -> Array:
        """sum_h W_O^h heads_h (+ b_O): (H, m, b, n) -> (d, b, n)."""
        H, m, b, n = heads.shape
        out = linear(blk.W_O, heads.reshape(H * m, b, n))
        if blk.b_O is not None:
            out += blk.b_O
        return out

    def self_attention(
        self,
        blk: Block,
        X: Array,
        weights_out: list | None = None,
        stop: threading.Event | None = None,
        start: int = 0,
        kv_out: list | None = None,
    ) -> Array:
        """The attention sublayer without its residual: (d, b, n) -> (d, b, n); columns at positions start..;
        `kv_out` (unless None) receives the keys and values, (b, G, m, n) each, rotated."""
        Q, K, V = self.qkv(blk, X)
        self.rotate(Q, K, start)
        if kv_out is not None:
            kv_out.append((K, V))
        causal = self.spec.mask == "causal"
        heads = self.attend(Q, K, V, causal, weights_out=weights_out, stop=stop, window=self.spec.window,
                            positions=(start, start))  # fmt: skip
        return self.project(blk, heads)

    def cross_attention(
        self, cross: Cross, X: Array, memory: tuple[Array, Array], stop=None, weights_out=None
    ) -> Array:  # type: ignore[no-untyped-def]
        """The cross-attention sublayer without its residual: the decoder's columns X (d, b, n) attend to the
        memory's keys and values (each (b, H_c, m_c, n_src)) -> (d, b, n); `weights_out` gets its weights."""
        Q = queries(cross, X, self.spec.cross_heads)
        heads = self.attend(Q, *memory, causal=False, stop=stop, scale=cross_scale(self.spec), weights_out=weights_out)
        return project(cross, heads)

    def feedforward(self, blk: Block, X: Array) -> Array:
        """The feedforward sublayer without its residual (the spec's kind: plain or gated): (d, b, n) -> (d, b, n)."""
        return self.ff.apply(blk, X)

    def apply_block(
        self,
        blk: Block,
        X: Array,
        attention: Callable[[Array], Array],
        cross: tuple[Callable[[Array], Array], tuple | None] | None = None,
    ) -> Array:
        """One block around an attention sublayer (no residual inside it), with the spec's norm placement; an
        encoder-decoder's decoder block has `cross`, the cross-attention sublayer and its norm's parameters,
        between the attention and the feedforward."""
        norm = self.norm.apply
        if self.spec.parallel:  # X + Attn(N1(X)) + FF(N2(X)): both sublayers read the block's input
            first = norm(X, blk.norm1)
            second = first if blk.norm2 is None else norm(X, blk.norm2)
            return _residual(X, _residual(self.feedforward(blk, second), attention(first)))
        if self.spec.norm == "post":
            X = norm(_residual(X, attention(X)), blk.norm1)
            if cross is not None:
                X = norm(_residual(X, cross[0](X)), cross[1])
            return norm(_residual(X, self.feedforward(blk, X)), blk.norm2)
        if self.spec.norm == "pre":
            X = _residual(X, attention(norm(X, blk.norm1)))
            if cross is not None:
                X = _residual(X, cross[0](norm(X, cross[1])))
            return _residual(X, self.feedforward(blk, norm(X, blk.norm2)))
        X = _residual(X, attention(X))
        if cross is not None:
            X = _residual(X, cross[0](X))
        return _residual(X, self.feedforward(blk, X))

    def finish(self, X: Array) -> Array:
        """The final norm of pre-norm models, then the head's logits (V, b, n) if the spec has a vocabulary."""
        if self.final_norm is not None:
            X = self.norm.apply(X, self.final_norm)
        if self.W_head is None:
            return X
        if self.spec.head_scale == "sqrt":  # T5's tied head reads the columns scaled by d^-1/2
            X = X * self.dtype.type(self.spec.d**-0.5)
        logits = linear(self.W_head, X)
        if self.b_head is not None:
            logits += self.b_head
        return logits

    def columns(self, X: Array) -> tuple[Array, int]:
        """The pass's input as (d, b, n) columns, and the rank of its output.

        Integer token ids (n,) or (b, n) are embedded (a model with a vocabulary); real columns (d, n) or
        (b, d, n) are taken as they are (for a model with a vocabulary: as the embedding's output).
        """
        if np.issubdtype(X.dtype, np.integer):
            ids = X[None] if X.ndim == 1 else X  # (b, n)
            return self.embedding.embed(self.E, ids, self.dtype), X.ndim + 1
        return to_columns(X, self.dtype), X.ndim

    # -- the whole pass ------------------------------------------------------------------------------

    def forward(
        self,
        X: Array,
        trace: list | None = None,
        weights_out: list | None = None,
        on_block: Callable[[float], None] | None = None,
        start: int = 0,
        memory: Array | None = None,
    ) -> Array:
        """Transformer(X) for X of shape (d, n) or (b, d, n); same shape out (logits (V, n) or (b, V, n) with a head).

        The columns sit at positions start .. start + n - 1 (0 unless a check shifts them).

        With a vocabulary, X may also be token ids (n,) or (b, n).

        `trace` receives the RMS of the activations after the positions and after each block;
        `weights_out` receives each block's attention weights (b, H, n_k, n_q); `on_block` hears the
        fraction of the pass each finished block is (for a progress bar).
        """
        X = np.asarray(X)
        Z, ndim = self.columns(X)  # (d, b, n)
        if (memory is None) != (self.crosses is None):
            raise SpecError(f"{self.spec.label}: an encoder-decoder's decoder reads a source's encoding, and only it")
        M = None if memory is None else to_columns(memory, self.dtype)  # (d, b, n_src)
        workers = min(self.workers, Z.shape[1])
        if weights_out is None and workers > 1 and Z.size >= PARALLEL_MIN_SIZE:
            parts = [np.ascontiguousarray(part) for part in np.array_split(Z, workers, axis=1)]
            memories = [None] * workers if M is None else list(map(np.ascontiguousarray, np.array_split(M, workers, 1)))
        else:
            parts, memories = [Z], [M]
        # per part: the mean square after positions and each block, only when the trace is asked for
        squares: list = [[] if trace is not None else None for _ in parts]
        step = 1.0 / (max(self.spec.N, 1) * len(parts))

        def run(i: int, stop: threading.Event | None = None) -> Array:
            return self._forward_columns(parts[i], squares[i], weights_out, on_block, step, stop, start, memories[i])

        if len(parts) == 1:
            Z = run(0)  # in the calling thread, which a signal interrupts directly
        else:  # the batch over threads, BLAS at one thread each: NumPy's elementwise work then uses every core
            with _BLAS.limit(limits=1, user_api="blas"):
                Z = np.concatenate(run_parts(run, len(parts)), axis=1)
        if trace is not None:
            sizes = [part.size for part in parts]
            trace.extend(float(np.sqrt(np.average(ms, weights=sizes))) for ms in zip(*squares, strict=True))
        return from_columns(Z, ndim)

    def _forward_columns(
        self,
        Z: Array,
        squares: list[float] | None,
        weights_out: list | None = None,
        on_block: Callable[[float], None] | None = None,
        step: float = 0.0,
        stop: threading.Event | None = None,
        start: int = 0,
        memory: Array | None = None,
        kv_out: list | None = None,
    ) -> Array:
        """The whole pass on (d, b, n) columns at positions start.., overwriting Z; `squares` (unless None) gets the
        mean square after each stage; `kv_out` (unless None) each block's keys and values. An encoder-decoder's
        decoder reads the encoder's output `memory` (d, b, n_src).

        Once `stop` is set, the next block or attention chunk raises Stopped.
        """
        pe = self.positions(start, Z.shape[-1])
        if pe is not None:
            Z += pe[:, None, :]
        if self.embedded:
            Z = self.embedding.finish(Z, self.embedded)
        if squares is not None:
            squares.append(_mean_square(Z))
        for i, blk in enumerate(self.blocks):
            check_stop(stop)
            cross = None
            if memory is not None:  # the memory's keys and values, then the sublayer that reads them
                c = self.crosses[i]
                keys = memory_keys(c, memory, self.spec.cross_heads)
                cross = (lambda U, c=c, keys=keys: self.cross_attention(c, U, keys, stop), c.norm)
            attention = lambda U, blk=blk: self.self_attention(blk, U, weights_out, stop, start, kv_out)  # noqa: E731
            Z = self.apply_block(blk, Z, attention, cross)
            if squares is not None:
                squares.append(_mean_square(Z))
            if on_block is not None:
                on_block(step)
        return self.finish(Z)

    def __call__(self, X: Array) -> Array:
        return self.forward(X)

    def columns_forward(self, Z: Array, kv_out: list | None = None, memory: Array | None = None) -> Array:
        """The pass on embedded (d, b, n) columns at positions 0.., in this thread -> (d or V, b, n); `kv_out`
        receives each block's keys and values (b, G, m, n), rotated: the prefill of decoding."""
        return self._forward_columns(Z.copy(), None, memory=memory, kv_out=kv_out)

    def attention_weights(self, X: Array) -> list[Array]:
        """Each block's attention weights for input X: a list of N arrays (b, H, n_k, n_q)."""
        found: list[Array] = []
        self.forward(X, weights_out=found)
        return found


def to_columns(X: Array, dtype: np.dtype) -> Array:
    """(d, n) or (b, d, n) -> a new contiguous (d, b, n) array in `dtype`."""
    X3 = X[None] if X.ndim == 2 else X
    return np.array(X3.transpose(1, 0, 2), dtype=dtype, order="C", copy=True)  # never a view of the input


def from_columns(Z: Array, ndim: int) -> Array:
    """(k, b, n) -> (k, n) for a 2-d result, else a contiguous (b, k, n) (k: d, or V for logits)."""
    return Z[:, 0, :] if ndim == 2 else np.ascontiguousarray(Z.transpose(1, 0, 2))


def _residual(X: Array, out: Array) -> Array:
    """X + out, written into the sublayer's fresh output array."""
    out += X
    return out


def _mean_square(X: Array) -> float:
    return float(np.mean(np.square(X, dtype=np.float64)))
