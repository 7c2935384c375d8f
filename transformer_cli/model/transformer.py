"""The transformer forward pass in NumPy, in the seed's column layout: one column per token.

Inside the model a batch is held as X of shape (d, b, n): the b sequences' columns side by side, so every
projection is one matrix product over all b*n columns. The model is its components, each running its own piece
(components/): the positions (added to the input, turning queries and keys, or biasing the scores), the
attention's projections, the feedforward (plain, gated or experts), the norms and the residual layout that joins
them, chosen once here. This module holds the one loop over the blocks (`run`): the forward pass, decoding's
prefill and steps (their caches are the attention components', model/decoding.py) and the attention maps all go
through it. A block's weights come from a provider asked per block (model/weights.py). kernels.attend computes
attention a chunk of queries at a time, so its extra memory grows as O(n), not O(n^2).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial

import numpy as np
from threadpoolctl import ThreadpoolController

from .. import kernels
from ..components import attention_component, block_feedforward, stream_state
from ..components.attention import KVCache, MultiHeadAttention
from ..components.cross import Cross, Memory, cross_scale, project, queries
from ..components.embedding import TokenEmbedding
from ..components.experts import Experts, shortcut
from ..components.feedforward import FeedForward
from ..components.ngram import NGramState
from ..components.norm import block_norm, norm_kind
from ..components.per_layer import PerLayerState
from ..components.positional import POSITIONALS, block_positions
from ..components.residual import Residuals
from ..errors import SpecError
from ..kernels import CHUNK_BYTES, Array, check_stop, linear
from ..spec.definition import Spec
from ..spec.stacks import decoder
from . import narrow
from .columns import Taps, from_columns, pass_taps, to_columns
from .narrow import Narrow
from .parallel import PassThreads, pass_threads, run_parts
from .weights import JustInTime, Prepared

# weights(i, kind): the list that receives block i's attention weights of `kind` ('self', 'cross'), or None
WeightsAsked = Callable[[int, str], "list | None"]

PARALLEL_MIN_SIZE = 1 << 16  # below this many activations, threads cost more than they save

_BLAS = ThreadpoolController()  # found once: limiting BLAS's threads is then a cheap call, not a library scan
# from this many queries a pass in one thread shares each attention's chunks over threads (measured here: 0.79x
# the time at 16k, 0.88x at 8k, slower below 4k; benchmarks/long_context.py)
PARALLEL_QUERIES = 8192


class Transformer:
    """Block_N o ... o Block_1 (after adding positions), for a spec and its weights, in one dtype.

    chunk_bytes bounds the attention scores held at once: queries are processed in chunks that fit it.
    workers: threads a batch is split over (default: the cores this process may use).
    keep_blocks: None prepares every block when the model is built (the fastest pass); a number prepares each block
    from `weights` when the pass reaches it and keeps that many, the most recently used (model/weights.py).
    """

    def __init__(
        self,
        spec: Spec,
        weights: Mapping[str, Array],
        dtype: type | np.dtype | str = np.float64,
        chunk_bytes: int = CHUNK_BYTES,
        workers: int | None = None,
        keep_blocks: int | None = None,
    ):
        self.spec, self.dtype = spec, np.dtype(dtype)
        self.chunk_bytes = chunk_bytes
        self.workers = kernels.cores() if workers is None else workers

        def get(name: str) -> Array:
            return np.asarray(weights[name], dtype=self.dtype)

        self.norm = block_norm(spec)
        self.positional = POSITIONALS[spec.positional](spec)
        if not spec.rel_per_block:  # (UMT5's tables are its blocks': _positions)
            self.positional.load(get, self.dtype)
        stack = decoder(spec)  # its blocks may differ per layer: block i's attention has its window, its feedforward
        layers = [stack.layer(i) for i in range(spec.N)]
        self.layers: list[tuple[MultiHeadAttention, FeedForward | Experts]] = [
            (attention_component(layer), block_feedforward(layer)) for layer in layers
        ]
        # block i's positions: the model's, or its own (another base, head size or none: block_positions)
        self.rotations = [block_positions(self.positional, layer, i, get, self.dtype) for i, layer in enumerate(layers)]
        # Gemma 4's layer scales: each block's output times its number (read at once: N numbers); its per-layer inputs
        self.layer_scales = [float(get(f"blocks.{i}.scale")[0]) for i in range(spec.N)] if spec.layer_scale else None
        self.per_layer = PerLayerState(spec, layers, get, narrow.held(weights, "per_layer.E")) if spec.ple_dim else None
        self.reads_tokens = spec.reads_ids  # (DeepSeek-V4's hashed blocks, Qwen4's n-grams: ids a last row)
        self.ngrams = NGramState(spec, layers, get, weights) if spec.ngram_blocks else None  # (Qwen4's n-grams)
        self.altup = stream_state(spec, get)  # (the residual as streams: Gemma 3n's AltUp, DeepSeek-V4's mHC)
        stored = self.layers[: spec.stored_blocks]  # the blocks whose weights the model holds (ALBERT's: a few)
        self.block_norms = [block_norm(layer) for layer in layers[: spec.stored_blocks]]  # (ModernBERT's block 0's)
        self.residuals = [Residuals(layer) for layer in layers]  # each block's layout: pre, post, parallel ...
        self.weights: JustInTime = (
            Prepared(spec, weights, self.dtype, stored, self.block_norms, stack.reads_memory)
            if keep_blocks is None
            else JustInTime(spec, weights, self.dtype, stored, self.block_norms, stack.reads_memory, keep_blocks)
        )
        self.reads_memory = stack.reads_memory  # an encoder-decoder's decoder: each block has a cross-attention
        self.embedding = TokenEmbedding(spec)  # the lookup, used with a vocabulary
        self.W_E: Array | Narrow | None = None  # the token embedding (d, V); spec.E counts experts
        self.W_head: Array | Narrow | None = None  # the head: logits = W_head Z + b_head, (V, d)
        self.b_head: Array | None = None  # (V, 1, 1)
        self.embedded: dict = {}  # token type 0 (d, 1, 1) and the embedding norm's parameters, where the spec has them
        self.W_in = self.W_out = None  # OPT-350m's projections of a narrower embedding: (d, d_e), (d_e, d)
        # blocks made just in time: the embedding and the head kept narrow too, widened in pieces (narrow.py)
        vocabulary = get if keep_blocks is None else (lambda name: narrow.held(weights, name))
        if spec.V:
            self.W_E = vocabulary("embedding.E")  # (d, V), or (d_e, V)
            if spec.embed_project:  # ELECTRA's: after the whole embedding (finish)
                self.embedded |= {"W_in": get("embedding.W_in"), "b_in": get("embedding.b_in").reshape(-1, 1, 1)}
            elif spec.embed_dim:
                self.W_in, self.W_out = get("embedding.W_in"), get("head.W_out")
            if spec.head:
                self.W_head = self.W_E.T if spec.tie_embeddings else vocabulary("head.W")
            self.b_head = get("head.b").reshape(-1, 1, 1) if spec.head_bias else None
            if spec.type_vocab:
                self.embedded["T0"] = get("embedding.T")[:, 0].reshape(-1, 1, 1)
            if spec.embed_norm:
                self.embedded["norm"] = norm_kind(spec).stacked(lambda g: get(f"embedding.norm.{g}"))
        self.transform: tuple | None = None  # ModernBERT-decoder's W_t, b_t and norm before the head
        if spec.head_transform != "none":
            b_t = get("head.b_t").reshape(-1, 1, 1) if spec.head_transform == "affine" else None
            self.transform = (get("head.W_t"), b_t, norm_kind(spec).stacked(lambda g: get(f"head.norm.{g}")))
        self.final_norm = norm_kind(spec).stacked(lambda g: get(f"final_norm.{g}")) if spec.final_norm else None

    @property
    def P(self) -> Array | None:
        """Learned positions (d, offset + max_len), or None."""
        return getattr(self.positional, "P", None)

    # -- the pieces ----------------------------------------------------------------------------------

    def qkv(self, i: int, X: Array) -> tuple[Array, Array, Array]:
        """Block i's projections of all heads at once: (d, b, n) -> Q (b, H, m, n), K and V (b, G, m, n), views."""
        return self.layers[i][0].qkv(self.weights.block(i)[0], X)

    def rotate(self, Q: Array, K: Array, start: int, key_start: int | None = None, block: int = 0) -> None:
        """Block `block`'s rotary positions, in place: Q's columns at start.., K's at key_start.. (or start)."""
        self.rotations[block].rotate(Q, K, start, start if key_start is None else key_start)

    def attend(
        self,
        Q: Array,
        K: Array,
        V: Array,
        how: kernels.Attend,
        positions: tuple[int, int] | None = None,
        block: int = 0,
    ) -> Array:
        """kernels.attend as `how` says (a layer's options: attention.py), in the model's chunks of queries, with the
        positions' bias on the scores of queries and keys that start at `positions` (first query, first key), and
        a long sequence's chunks shared over threads: -> heads (H, m, b, n_q)."""
        positional = self.rotations[block] if self.spec.rel_per_block else self.positional  # (UMT5's own tables)
        bias = how.bias if positions is None else positional.bias(*positions)
        how = replace(how, bias=bias, chunk_bytes=self.chunk_bytes)
        b, H, _, n_q = Q.shape
        step = kernels.CAUSAL_CHUNK
        threads = min(pass_threads(), -(-n_q // step))
        if threads < 2 or n_q < PARALLEL_QUERIES or how.weights_out is not None or how.scores_out is not None:
            return kernels.attend(Q, K, V, how)
        # one sequence's long attention: its chunks of queries shared over threads (interleaved, so that a causal
        # pass's longer late chunks are shared too), BLAS at one thread each, every one writing its own columns
        heads = np.empty((H, V.shape[2], b, n_q), dtype=Q.dtype)

        def run(i: int, stop_: threading.Event) -> None:
            kernels.attend(Q, K, V, replace(how, stop=stop_), out=heads, part=(i, threads))

        with _BLAS.limit(limits=1, user_api="blas"):
            run_parts(run, threads)
        return heads

    def cross_attention(
        self, cross: Cross, X: Array, memory: tuple[Array, Array], stop=None, weights_out=None
    ) -> Array:
        """The cross-attention sublayer without its residual: the decoder's columns X (d, b, n) attend to the
        memory's keys and values (each (b, H_c, m_c, n_src)) -> (d, b, n); `weights_out` gets its weights."""
        Q = queries(cross, X, self.spec.cross_heads)
        how = kernels.Attend(cross_scale(self.spec), softcap=self.spec.attn_softcap, stop=stop, weights_out=weights_out)
        heads = self.attend(Q, *memory, how)  # every key of the memory, no positions
        return project(cross, heads)

    def block(
        self,
        i: int,
        Z: Array,
        start: int = 0,
        cache: Sequence[KVCache] | None = None,
        taps: Taps | None = None,
        memory: Memory | None = None,
        weights: WeightsAsked | None = None,
        stop: threading.Event | None = None,
        offset: int = 0,
        later: list | None = None,
        ple: Array | None = None,
        shared: dict | None = None,
        tokens: Array | None = None,
    ) -> Array:
        """Block i on the columns Z (d, b, n) in the spec's residual layout, its weights asked of the provider; an
        encoder-decoder's decoder block reads the `memory` with its cross-attention, between its attention and its
        feedforward. `later` holds a routed block's experts' output for the next (routed_later), `ple` every block's
        per-layer input (N, P, b, n), `shared` the keys and values for the blocks that reuse them (kv_shared)."""
        attention_w, feedforward_w, norms, cross_w = self.weights.block(i)
        attention, feedforward = self.layers[i]
        asked = (lambda kind: None) if weights is None else partial(weights, i)
        kv = None if cache is None else cache[i]
        options: dict = dict(start=start, cache=kv, weights_out=asked("self"), stop=stop, offset=offset, shared=shared)
        mixer = partial(attention.mix, self, i, attention_w, **options)
        cross = None
        if cross_w is not None and memory is not None:  # the memory's keys, values; the sublayer reading them
            reads = partial(self.cross_attention, cross_w, memory=memory.keys(i, cross_w), stop=stop)
            cross = (partial(reads, weights_out=asked("cross")), cross_w.norm, cross_w.norm_out)
        tap = None if taps is None else partial(taps, i)
        ff = partial(feedforward.apply, feedforward_w)
        if getattr(feedforward, "reads_tokens", False):
            ff = partial(ff, tokens=tokens)
        if later is not None:
            ff = partial(shortcut, feedforward, feedforward_w, later)
        if self.ngrams is not None:  # (before anything else: Qwen4's n-gram inputs, its decoding state beside kv)
            Z = self.ngrams.add(i, Z, tokens, kv)  # type: ignore[arg-type]
        if self.altup is not None:  # (streams around the block: Gemma 3n's with its per-layer input, or mHC's)
            given = None if ple is None else (self.per_layer, ple[i])
            return self.altup.block(i, Z, mixer, ff, self._normed, norms, given)
        out = self.residuals[i].apply(Z, mixer, ff, self._normed, norms, cross, tap)
        if ple is not None:  # (Gemma 4's per-layer inputs, after the feedforward)
            self.per_layer.add(i, out, ple[i])  # type: ignore[union-attr]
        if self.layer_scales is not None:
            out *= out.dtype.type(self.layer_scales[i])
        return out

    def run(
        self,
        Z: Array,
        start: int = 0,
        cache: Sequence[KVCache] | None = None,
        taps: Taps | None = None,
        last: int | None = None,
        memory: Memory | None = None,
        weights: WeightsAsked | None = None,
        stop: threading.Event | None = None,
        offset: int = 0,
    ) -> Array:
        """The pass on (d, b, n) columns at positions start.., overwriting Z: the prologue, then blocks 0 .. `last`
        (default: every block) -> their output (d, b, n) if stopped at `last`, else finish's (d or V, b, n).

        `cache`: each block's KVCache (decoding: a prefill fills them, a step of one column reads them); `taps`
        hears each block's and sublayer's output; `weights` says where attention weights go; `memory` is an
        encoder-decoder's encoder output; `offset` shifts the queries' positions (a fault). Once `stop` is set, the
        next block or attention chunk raises Stopped.
        """
        pe = self.positional.encodings(start + offset, Z.shape[-1])  # (d, n), held as analysis/memory.py counts
        ple = tokens = None
        if self.reads_tokens:  # (DeepSeek-V4's hashed blocks choose by the ids below the columns: floor(x) mod V)
            Z, tokens = Z[:-1], np.floor(Z[-1]).astype(np.int64) % (self.spec.V or 1)
        if self.per_layer is not None:  # (Gemma 4's: the token part below the embedding's d rows)
            Z, ple = self.per_layer.split(Z)
        Z = self.prologue(Z, pe)
        Z = Z if self.altup is None else self.altup.stack(Z)  # (the streams: K d rows, Gemma 3n's; n d, mHC's)
        if taps is not None:
            taps(-1, "input", Z)
        later: list | None = [] if self.spec.routed_later else None  # (a routed block's output for the next)
        # (keys and values for the blocks sharing them; an indexer's selection for those reusing it)
        shared: dict | None = {} if self.spec.kv_shared or self.spec.mixer_layers or self.spec.latent_layers else None
        for i in range(self.spec.N if last is None else last + 1):
            check_stop(stop)
            Z = self.block(i, Z, start, cache, taps, memory, weights, stop, offset, later, ple, shared, tokens)
            if taps is not None:
                taps(i, "block", Z)
        return self.finish(Z) if last is None else Z

    def prologue(self, Z: Array, pe: Array | None) -> Array:
        """The columns Z (d, b, n) made ready for block 0, in place: their positions' encodings pe (d, n) added,
        then token type 0 and the embedding norm where the spec has them."""
        if pe is not None:
            Z += pe[:, None, :]
        return self.embedding.finish(Z, self.embedded) if self.embedded else Z

    def _normed(self, X: Array, params: tuple | None) -> Array:
        """A block's norm of X, or X where the block has none there (ModernBERT's block 0, before its attention)."""
        return X if params is None else self.norm.apply(X, params)

    def finish(self, X: Array) -> Array:
        """The final norm of pre-norm models, then the head's logits (V, b, n) if the spec has a vocabulary."""
        X = X if self.altup is None else self.altup.unstack(X)  # (the streams as one column first)
        if self.final_norm is not None:
            X = self.norm.apply(X, self.final_norm)
        if self.W_head is None:
            return X
        if self.W_out is not None:  # down to the embedding's width first
            X = linear(self.W_out, X)
        if self.transform is not None:  # ModernBERT-decoder's: norm(act(W_t X + b_t))
            W_t, b_t, norm = self.transform
            X = linear(W_t, X)
            if b_t is not None:
                X += b_t
            X = self.norm.apply(kernels.ACTIVATIONS[self.spec.activation](X), norm)
        if self.spec.head_scale == "sqrt":  # T5's tied head reads the columns scaled by d^-1/2
            X = X * self.dtype.type(self.spec.d**-0.5)
        logits = narrow.linear(self.W_head, X)
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
            Z = self.embedding.embed(self.W_E, ids, self.dtype, self.W_in)
            if self.per_layer is not None:  # (Gemma 4's per-layer inputs: their token part below the d rows)
                Z = np.concatenate([Z, self.per_layer.tokens(ids, self.dtype)])
            if self.reads_tokens:
                Z = np.concatenate([Z, ids[None].astype(self.dtype)])
            return Z, X.ndim + 1
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
        taps: Taps | None = None,
        last: int | None = None,
    ) -> Array:
        """Transformer(X) for X of shape (d, n) or (b, d, n); same shape out (logits (V, n) or (b, V, n) with a head).
        The columns sit at positions start .. start + n - 1 (0 unless a check shifts them). With a vocabulary, X may
        also be token ids (n,) or (b, n).

        `trace` receives the RMS of the activations after the positions and after each block;
        `weights_out` receives each block's attention weights (b, H, n_k, n_q); `on_block` hears the
        fraction of the pass each finished block is (for a progress bar); `taps` (run's) hears every block's and
        sublayer's output; with `last` the pass stops after that block and returns its output (d, n) or (b, d, n).
        """
        X = np.asarray(X)
        Z, ndim = self.columns(X)  # (d, b, n)
        if (memory is None) != (not self.reads_memory):
            raise SpecError(f"{self.spec.label}: an encoder-decoder's decoder reads a source's encoding, and only it")
        M = None if memory is None else to_columns(memory, self.dtype)  # (d, b, n_src)
        workers = min(self.workers, Z.shape[1])
        parts: list[Array]
        memories: list[Array | None]
        if weights_out is None and taps is None and workers > 1 and Z.size >= PARALLEL_MIN_SIZE:
            parts = [np.ascontiguousarray(part) for part in np.array_split(Z, workers, axis=1)]
            memories = [None] * workers if M is None else list(map(np.ascontiguousarray, np.array_split(M, workers, 1)))
        else:
            parts, memories = [Z], [M]
        # per part: the mean square after positions and each block, only when the trace is asked for
        squares: list = [[] if trace is not None else None for _ in parts]
        step = 1.0 / (max(self.spec.N, 1) * len(parts))
        asked = None if weights_out is None else (lambda i, kind: weights_out if kind == "self" else None)

        def run(i: int, stop: threading.Event | None = None) -> Array:
            heard = pass_taps(squares[i], on_block, step, taps)
            M_i = memories[i]
            keys = None if M_i is None else Memory(M_i, self.spec.cross_kv_heads)
            return self.run(parts[i], start, taps=heard, last=last, memory=keys, weights=asked, stop=stop)

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

    def __call__(self, X: Array) -> Array:  # (a subclass's own forward: verify's test models)
        return self.forward(X)

    def attention_weights(self, X: Array) -> list[Array]:
        """Each block's attention weights for input X: a list of N arrays (b, H, n_k, n_q)."""
        found: list[Array] = []
        self.forward(X, weights_out=found)
        return found
