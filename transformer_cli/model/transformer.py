"""The transformer forward pass in NumPy, in the seed's column layout: one column per token.

Inside the model a batch is held as X of shape (d, b, n): the b sequences' columns side by side, so every
projection is one matrix product over all b*n columns. The model is its components, each running its own piece
(components/): the positions (added to the input, turning queries and keys, or biasing the scores), the
attention's projections, the feedforward (plain, gated or experts), the norms and the residual layout that joins
them, chosen once here. This module only walks the blocks; kernels.attend computes attention a chunk of queries
at a time, so its extra memory grows as O(n), not O(n^2).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from .. import kernels
from ..components import attention_component, block_feedforward
from ..components.base import Component
from ..components.cross import Cross, cross_scale, memory_keys, project, queries, stack_cross
from ..components.embedding import TokenEmbedding
from ..components.norm import block_norm, norm_kind
from ..components.positional import POSITIONALS, Positions
from ..components.residual import Residuals
from ..errors import SpecError
from ..kernels import CHUNK_BYTES, Array, check_stop, linear
from ..spec.definition import Spec
from ..spec.stacks import decoder
from .parallel import PassThreads, pass_threads, run_parts

PARALLEL_MIN_SIZE = 1 << 16  # below this many activations, threads cost more than they save

_BLAS = ThreadpoolController()  # found once: limiting BLAS's threads is then a cheap call, not a library scan
# from this many queries a pass in one thread shares each attention's chunks over threads (measured here: 0.79x
# the time at 16k, 0.88x at 8k, slower below 4k; benchmarks/long_context.py)
PARALLEL_QUERIES = 8192


@dataclass
class Block:
    """One block's weights, as its components prepared them; vectors as (k, 1, 1) columns."""

    W_qkv: Array | None  # ((H + 2G)m, d): rows are [W_Q^1..W_Q^H, W_K^1..W_K^G, W_V^1..W_V^G] (None: latent)
    b_qkv: Array | None  # ((H + 2G)m, 1, 1)
    W_O: Array  # (d, Hm): columns h*m .. (h+1)*m - 1 are W_O^h (latent attention: (d, H v_m))
    b_O: Array | None  # (d, 1, 1)
    W1: Array  # (r, d), or gated (2r, d): W1 over W3
    b1: Array | None  # (r, 1, 1) or (2r, 1, 1)
    W2: Array  # (d, r)
    b2: Array | None  # (d, 1, 1)
    norm1: tuple[Array, ...] | None  # the norm's parameters as (d, 1, 1) columns: gamma, beta (layernorm) or gamma
    norm2: tuple[Array, ...] | None
    norm1_out: tuple[Array, ...] | None  # the sandwich layout's norms of the sublayers' outputs, else None
    norm2_out: tuple[Array, ...] | None
    router: Any = None  # the experts' Router (W_r (E, d)), whose W1, b1, W2, b2 then carry a leading axis E
    shared: object | None = None  # a shared expert's weights (W1, b1, W2, b2, gate), with shared_r
    qk_norm: tuple | None = None  # the query and the key heads' norm parameters, as (m, 1, 1, 1) columns
    ff: Component | None = None  # the block's feedforward (dense, or routed to experts), which runs it
    window: int | None = None  # the block's sliding window, or None: it sees every earlier key
    positions: Positions | None = None  # the block's own rotary positions (Gemma 3's local base), or None: the model's
    latent: object | None = None  # latent attention's projections (components/latent.py), else None
    sinks: Array | None = None  # (H,): each head's sink logit (gpt-oss), else None


class Transformer:
    """Block_N o ... o Block_1 (after adding positions), for a spec and its weights, in one dtype.

    chunk_bytes bounds the attention scores held at once: queries are processed in chunks that fit it.
    workers: threads a batch is split over (default: the cores this process may use).
    """

    def __init__(
        self,
        spec: Spec,
        weights: Mapping[str, Array],
        dtype: type | np.dtype | str = np.float64,
        chunk_bytes: int = CHUNK_BYTES,
        workers: int | None = None,
    ):
        self.spec = spec
        self.dtype = np.dtype(dtype)
        self.chunk_bytes = chunk_bytes
        self.workers = kernels.cores() if workers is None else workers

        def get(name: str) -> Array:
            return np.asarray(weights[name], dtype=self.dtype)

        self.attention, self.norm = attention_component(spec), block_norm(spec)
        self.residuals = Residuals(spec)  # the block's layout: pre, post, parallel or none
        stack = decoder(spec)  # its blocks may differ per layer: each has its own window and feedforward
        self.blocks = [self._block(stack.layer(i), _prefixed(get, f"blocks.{i}.")) for i in range(spec.N)]
        self.crosses = None  # an encoder-decoder's decoder: each block's cross-attention (components/cross.py)
        if stack.reads_memory:
            self.crosses = [stack_cross(spec, weights, i, self.dtype, norm_kind(spec)) for i in range(spec.N)]
        self.positional = POSITIONALS[spec.positional](spec)
        self.positional.load(get, self.dtype)
        self.embedding = TokenEmbedding(spec)  # the lookup, used with a vocabulary
        self.W_E: Array | None = None  # the token embedding (d, V); spec.E counts experts
        self.W_head = self.b_head = None  # the head: logits = W_head Z + b_head, (V, d) and (V, 1, 1)
        self.embedded: dict = {}  # token type 0 (d, 1, 1) and the embedding norm's parameters, where the spec has them
        self.W_in = self.W_out = None  # OPT-350m's projections of a narrower embedding: (d, d_e), (d_e, d)
        if spec.V:
            self.W_E = get("embedding.E")  # (d, V), or (d_e, V)
            if spec.embed_dim:
                self.W_in, self.W_out = get("embedding.W_in"), get("head.W_out")
            if spec.head:
                self.W_head = self.W_E.T if spec.tie_embeddings else get("head.W")
            self.b_head = get("head.b").reshape(-1, 1, 1) if spec.head_bias else None
            if spec.type_vocab:
                self.embedded["T0"] = get("embedding.T")[:, 0].reshape(-1, 1, 1)
            if spec.embed_norm:
                self.embedded["norm"] = norm_kind(spec).stacked(lambda g: get(f"embedding.norm.{g}"))
        self.final_norm = None
        if spec.final_norm:
            self.final_norm = norm_kind(spec).stacked(lambda g: get(f"final_norm.{g}"))

    def _block(self, layer: Spec, get: Callable[[str], Array]) -> Block:
        """One block's weights from its components' `prepare` (the heads stacked for one product); `layer`: the
        block's own spec (stacks.py), which gives its feedforward and its window."""
        ff = block_feedforward(layer)
        weights = self.attention.prepare(get) | ff.prepare(get) | self.norm.prepare(get)
        positions = None
        if (layer.rope_theta, layer.rope_scaling) != (self.spec.rope_theta, self.spec.rope_scaling):
            positions = POSITIONALS[layer.positional](layer)
            positions.load(get, self.dtype)
        return Block(**weights, ff=ff, window=layer.window, positions=positions)

    @property
    def P(self) -> Array | None:
        """Learned positions (d, offset + max_len), or None."""
        return getattr(self.positional, "P", None)

    # -- the pieces ----------------------------------------------------------------------------------

    def positions(self, start: int, n: int) -> Array | None:
        """Positional encoding of positions start .. start+n-1: (d, n), or None without added positions."""
        return self.positional.encodings(start, n)

    def qkv(self, blk: Block, X: Array) -> tuple[Array, Array, Array]:
        """Projections of all heads at once: (d, b, n) -> Q (b, H, m, n), K and V (b, G, m, n), views."""
        return self.attention.qkv(blk, X)

    def rotate(self, Q: Array, K: Array, start: int, key_start: int | None = None, blk: Block | None = None) -> None:
        """Rotary positions, in place: Q's columns at positions start.., K's at key_start.. (default: start); by
        block `blk`'s own positions where it has them."""
        positions = blk.positions if blk is not None and blk.positions is not None else self.positional
        positions.rotate(Q, K, start, start if key_start is None else key_start)

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
        sinks: Array | None = None,
    ) -> Array:
        """kernels.attend with the spec's scale, and the positions' bias on the scores of queries and keys that
        start at `positions` (first query, first key), and a block's attention sinks: -> heads (H, m, b, n_q)."""
        bias = None if positions is None else self.positional.bias(*positions)
        scale = self.spec.score_scale if scale is None else scale
        softcap = self.spec.attn_softcap
        b, H, _, n_q = Q.shape
        step = kernels.CAUSAL_CHUNK
        threads = min(pass_threads(), -(-n_q // step))
        if threads < 2 or n_q < PARALLEL_QUERIES or weights_out is not None or scores_out is not None:
            return kernels.attend(Q, K, V, scale, causal, window, bias, self.chunk_bytes, stop, weights_out,
                                  scores_out, softcap, sinks)  # fmt: skip
        # one sequence's long attention: its chunks of queries shared over threads (interleaved, so that a causal
        # pass's longer late chunks are shared too), BLAS at one thread each, every one writing its own columns
        heads = np.empty((H, V.shape[2], b, n_q), dtype=Q.dtype)

        def run(i: int, stop_: threading.Event) -> None:
            kernels.attend(Q, K, V, scale, causal, window, bias, self.chunk_bytes, stop_, None, None, softcap, sinks,
                           out=heads, part=(i, threads))  # fmt: skip

        with _BLAS.limit(limits=1, user_api="blas"):
            run_parts(run, threads)
        return heads

    def project(self, blk: Block, heads: Array) -> Array:
        """sum_h W_O^h heads_h (+ b_O): (H, m, b, n) -> (d, b, n)."""
        return self.attention.project(blk, heads)

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
        self.rotate(Q, K, start, blk=blk)
        if kv_out is not None:  # what a decoder's cache keeps (latent attention: its latents and rotary keys)
            kv_out.append(self.attention.cache_entries(blk, X, K, V))
        causal = self.spec.mask == "causal"
        heads = self.attend(Q, K, V, causal, weights_out=weights_out, stop=stop, window=blk.window,
                            positions=(start, start), sinks=blk.sinks)  # fmt: skip
        return self.project(blk, heads)

    def cross_attention(
        self, cross: Cross, X: Array, memory: tuple[Array, Array], stop=None, weights_out=None
    ) -> Array:
        """The cross-attention sublayer without its residual: the decoder's columns X (d, b, n) attend to the
        memory's keys and values (each (b, H_c, m_c, n_src)) -> (d, b, n); `weights_out` gets its weights."""
        Q = queries(cross, X, self.spec.cross_heads)
        heads = self.attend(Q, *memory, causal=False, stop=stop, scale=cross_scale(self.spec), weights_out=weights_out)
        return project(cross, heads)

    def feedforward(self, blk: Block, X: Array) -> Array:
        """The feedforward sublayer without its residual (the spec's kind: plain or gated): (d, b, n) -> (d, b, n)."""
        return blk.ff.apply(blk, X)  # type: ignore[union-attr]

    def apply_block(
        self,
        blk: Block,
        X: Array,
        attention: Callable[[Array], Array],
        cross: tuple[Callable[[Array], Array], tuple | None] | None = None,
    ) -> Array:
        """One block around an attention sublayer (no residual inside it), in the spec's residual layout; an
        encoder-decoder's decoder block has `cross`, the cross-attention sublayer and its norm's parameters,
        between the attention and the feedforward."""
        sublayer = lambda U: self.feedforward(blk, U)  # noqa: E731
        norms = (blk.norm1, blk.norm2, blk.norm1_out, blk.norm2_out)
        return self.residuals.apply(X, attention, sublayer, self.norm.apply, norms, cross)

    def finish(self, X: Array) -> Array:
        """The final norm of pre-norm models, then the head's logits (V, b, n) if the spec has a vocabulary."""
        if self.final_norm is not None:
            X = self.norm.apply(X, self.final_norm)
        if self.W_head is None:
            return X
        if self.W_out is not None:  # down to the embedding's width first
            X = linear(self.W_out, X)
        if self.spec.head_scale == "sqrt":  # T5's tied head reads the columns scaled by d^-1/2
            X = X * self.dtype.type(self.spec.d**-0.5)
        logits = linear(self.W_head, X)
        if self.b_head is not None:
            logits += self.b_head
        if self.spec.logit_scale != 1.0:  # Cohere's logit_scale, Granite's 1 / logits_scaling
            logits *= self.dtype.type(self.spec.logit_scale)
        if self.spec.logit_softcap is not None:
            kernels.soft_cap_(logits, self.spec.logit_softcap)
        return logits

    def columns(self, X: Array) -> tuple[Array, int]:
        """The pass's input as (d, b, n) columns, and the rank of its output.

        Integer token ids (n,) or (b, n) are embedded (a model with a vocabulary); real columns (d, n) or
        (b, d, n) are taken as they are (for a model with a vocabulary: as the embedding's output).
        """
        if np.issubdtype(X.dtype, np.integer):
            if self.W_E is None:
                raise SpecError(f"{self.spec.label}: token ids need a vocabulary (V); give real columns (d, n)")
            ids = X[None] if X.ndim == 1 else X  # (b, n)
            return self.embedding.embed(self.W_E, ids, self.dtype, self.W_in), X.ndim + 1
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
        parts: list[Array]
        memories: list[Array | None]
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
            with PassThreads(self.workers):  # (its long attentions then share their chunks over the cores)
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
        pe = self.positions(start, Z.shape[-1])  # (held for the pass, as analysis/memory.py counts it)
        if pe is not None:
            Z += pe[:, None, :]
        if self.embedded:  # token type 0 and the embedding norm
            Z = self.embedding.finish(Z, self.embedded)
        if squares is not None:
            squares.append(_mean_square(Z))
        for i, blk in enumerate(self.blocks):
            check_stop(stop)
            cross = None
            if memory is not None and self.crosses is not None:  # the memory's keys, values; the sublayer reading them
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
        with PassThreads(self.workers):
            return self._forward_columns(Z.copy(), None, memory=memory, kv_out=kv_out)

    def attention_weights(self, X: Array) -> list[Array]:
        """Each block's attention weights for input X: a list of N arrays (b, H, n_k, n_q)."""
        found: list[Array] = []
        self.forward(X, weights_out=found)
        return found


def _prefixed(get: Callable[[str], Array], prefix: str) -> Callable[[str], Array]:
    """A block's getter: its tensors' names without the block's prefix."""
    return lambda name: get(prefix + name)


def to_columns(X: Array, dtype: np.dtype) -> Array:
    """(d, n) or (b, d, n) -> a new contiguous (d, b, n) array in `dtype`."""
    X3 = X[None] if X.ndim == 2 else X
    return np.array(X3.transpose(1, 0, 2), dtype=dtype, order="C", copy=True)  # never a view of the input


def from_columns(Z: Array, ndim: int) -> Array:
    """(k, b, n) -> (k, n) for a 2-d result, else a contiguous (b, k, n) (k: d, or V for logits)."""
    return Z[:, 0, :] if ndim == 2 else np.ascontiguousarray(Z.transpose(1, 0, 2))


def _mean_square(X: Array) -> float:
    return float(np.mean(np.square(X, dtype=np.float64)))
