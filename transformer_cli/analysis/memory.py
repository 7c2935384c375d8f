"""How much memory a forward pass needs, estimated from the spec before anything is allocated.

Two figures: the model's (its weights in the compute dtype, its activations, the attention scores: what
any implementation of this model in this dtype holds) and tfm's whole pass, which also holds the float64
weights as loaded and the input as read. A command refuses, before allocating, when tfm's pass would exceed
--max-memory or the tightest real limit (see limits.py), instead of being killed by the operating system.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..components import attention_component, block_feedforward, check_one_stack
from ..components.norm import norm_kind
from ..errors import TfmError
from ..kernels import CHUNK_BYTES, chunk_size, cores
from ..spec.definition import Spec
from ..spec.stacks import decoder, encoder, encoder_spec, without_encoder
from .limits import FIX, Limit, memory_limits
from .params import count_params
from .units import UNITS, human, parse_size, scientific  # noqa: F401 - the names callers import from here

HEATMAP_BYTES = 24  # per attention weight drawn: the padded float64 copy and nanmean's temporaries (19 measured)
JSON_BYTES = 200  # per attention weight printed as JSON: a float, list slots, its text, the encoder's (147 measured)


class MemoryLimitError(TfmError):
    """The estimated memory of a command exceeds the available memory or --max-memory."""


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes held at the peak of a forward pass over a (b, d, n) input, by part.

    weights .. feedforward are the model's figure; loaded, input and output are what tfm holds beside it.
    """

    weights: int  # the model's weights in the compute dtype (stacked as the model uses them)
    activations: int  # the (b, d, n) arrays alive across a block
    attention: int  # Q, K, V, head outputs, and each worker's chunk of scores: the n^2 part
    feedforward: int  # the (b, r, n) hidden layer
    loaded: int = 0  # tfm's float64 weights as loaded, kept beside the model's copies
    input: int = 0  # the input as read (float64), beyond the model's copy in the compute dtype
    output: int = 0  # what the command keeps and shows beyond the pass (tfm attention's maps)
    output_is: str = "the maps shown"  # what `output` is, in the refusal's words
    loaded_is: str = "tfm's own copies"  # what `loaded` (and `input`) are, in the refusal's words

    @property
    def model(self) -> int:
        """The model's own peak: what a forward pass of this model in this dtype needs."""
        return self.weights + self.activations + max(self.attention, self.feedforward)

    @property
    def overhead(self) -> int:
        """What tfm's pass holds beyond the model's figure."""
        return self.loaded + self.input + self.output

    @property
    def total(self) -> int:
        """What tfm's pass allocates at its peak: the figure it refuses on."""
        return self.model + self.overhead

    def to_dict(self) -> dict[str, int]:
        parts = ("weights", "activations", "attention", "feedforward", "loaded", "input", "output")
        return {p: getattr(self, p) for p in parts} | {"model": self.model, "total": self.total}


def estimate_forward(
    spec: Spec,
    b: int,
    n: int,
    dtype: str | np.dtype = "float64",
    chunk_bytes: int = CHUNK_BYTES,
    workers: int | None = None,
) -> MemoryEstimate:
    """Peak memory of Transformer(X) for X of shape (b, d, n), in exact integers (any size).

    `workers`: threads the batch is split over (default: the cores here); each holds its own chunk of scores.
    """
    check_one_stack(spec, "memory estimates")
    s = np.dtype(dtype).itemsize
    params = count_params(spec, check=False).total
    H, m, d = spec.H, spec.m, spec.d
    c = chunk_size(H, n, n, s, chunk_bytes, spec.mask == "causal") if n else 0
    threads = max(1, min(cores() if workers is None else workers, b))
    chunks = -(-b // threads) * (-(-n // c) if c else 0)  # chunks of scores each thread computes in turn
    held = 2 if chunks > 1 else 1  # a chunk's scores are still held while the next one is computed
    chunk = H * c * n * s  # one chunk of scores
    # a mask is made (bool, float64 -inf, its cast: 9 + s bytes an entry) while the last chunk's scores are still
    # held, and kept (s bytes an entry) while the chunk's scores are computed: causal, the (c, c) square of a chunk's
    # own keys, once; with a window, each chunk's (c, keys) mask
    groups = decoder(spec).groups()  # blocks alike: a window's mask is (c, keys), the causal square (c, c)
    windowed = any(g.spec.window or g.spec.chunk for g in groups)
    area = (c * n if windowed else c * c) if spec.mask == "causal" else 0
    made, kept = area * (9 + s), area * s
    # beside them, a chunk's A V product before its division into the heads, and with groups (G < H) the copy of
    # the chunk's queries as each group's rows: (H, m, c) each
    products = (1 + (spec.kv_heads < H)) * H * m * c * s
    scores = max((held - 1) * chunk + made, held * chunk + kept) + products
    stacked = 4 * H * m * d * spec.N  # in float64 the model stacks copies of W_Q, W_K, W_V, W_O only
    # (b, d, n) arrays: the input, its columns and their split over threads (one thread: none), X, a norm's output
    # and temporary (no norm: none; RMSNorm has no temporary), a sublayer's output (or a float64 mean square between
    # blocks)
    arrays = 7 - (threads == 1) - 2 * (spec.norm == "none") - (spec.norm != "none" and not norm_kind(spec).temporary)
    return MemoryEstimate(
        weights=s * params,
        # positions are made in float64; the logits twice
        activations=arrays * b * d * n * s + 3 * d * n * 8 + 2 * (spec.V or 0) * b * n * s,
        attention=attention_component(spec).held_per_token() * b * n * s
        + threads * scores,  # Q, K, V, heads; each thread's chunks
        feedforward=max(block_feedforward(g.spec).held_per_token() for g in groups) * b * n * s,
        loaded=8 * (params if s != 8 else stacked),  # the float64 weights as loaded, beside the model's copies
        input=(8 - s) * b * d * n,  # the input is read as float64
    )


def estimate_pass(
    spec: Spec, b: int, n: int, dtype: str | np.dtype = "float64", n_src: int | None = None
) -> MemoryEstimate:
    """The pass's peak, one stack or two: estimate_forward, or for an encoder-decoder (targets of n, sources of
    n_src, default n) estimate_encoder_decoder."""
    if encoder(spec) is None:
        return estimate_forward(spec, b, n, dtype)
    return estimate_encoder_decoder(spec, b, n_src or n, n, dtype)


def estimate_encoder_decoder(
    spec: Spec, b: int, n_src: int, n_tgt: int, dtype: str | np.dtype = "float64"
) -> MemoryEstimate:
    """An encoder-decoder's pass, bounded from above: the encoder's pass and the decoder's (as one-stack models,
    each holding the shared embedding), plus the cross-attention's weights and the memory's keys and values."""
    s = np.dtype(dtype).itemsize
    encoder = estimate_forward(encoder_spec(spec), b, n_src, dtype)  # no vocabulary: E and logits are the decoder's
    decoder = estimate_forward(without_encoder(spec), b, n_tgt, dtype)
    H, G, m = spec.cross_heads, spec.cross_kv_heads, spec.cross_size
    cross = spec.N * m * (2 * H * spec.d + 2 * G * spec.source_d)  # W_Q, W_O; W_K, W_V (of d_enc) of every block
    keys = spec.N * G * m * 2 * b * n_src  # the memory's K and V in every block
    return MemoryEstimate(
        weights=encoder.weights + decoder.weights + s * cross,
        activations=encoder.activations + decoder.activations + s * keys,
        attention=max(encoder.attention, decoder.attention),
        feedforward=max(encoder.feedforward, decoder.feedforward),
        loaded=encoder.loaded + decoder.loaded + 8 * cross,
        input=encoder.input + decoder.input,
    )


def describe(estimate: MemoryEstimate) -> str:
    """The parts of an estimate in a few words: the model's weights and attention, and tfm's own copies."""
    words = f"weights {human(estimate.weights)}, attention {human(estimate.attention)}"
    if estimate.overhead:
        words += f"; {estimate.loaded_is} {human(estimate.loaded + estimate.input)}"
    if estimate.output:
        words += f", {estimate.output_is} {human(estimate.output)}"
    return words


def tightest(max_memory: str | None, option: str = "--max-memory", limits: list[Limit] | None = None) -> Limit | None:
    """The limit with the least room: --max-memory (or the `option` that gave it) in place of the available memory,
    beside the hard limits (a cgroup's, ulimit -v); None when none is known. `limits`: as read earlier (before a
    model whose weights an estimate counts was built), else read now."""
    limits = memory_limits() if limits is None else limits
    if max_memory:
        given = parse_size(max_memory, option)
        limits = [lim for lim in limits if lim.kind != "available"]
        limits.append(Limit(option, given, f"the {option} of {human(given)}", f"raise it or {FIX}"))
    return min(limits, key=lambda lim: lim.free, default=None)


def check_memory(
    estimate: MemoryEstimate,
    max_memory: str | None,
    what: str,
    option: str = "--max-memory",
    limits: list[Limit] | None = None,
) -> None:
    """Refuse before allocating when tfm's pass would exceed --max-memory or the tightest real limit (`limits`: as
    read before the weights the estimate counts were allocated; else read now).

    --max-memory replaces the available memory (a soft figure) but not the hard limits: a cgroup's limit
    and ulimit -v still apply, since past them the process is killed or every allocation fails.
    """
    limit = tightest(max_memory, option, limits)
    if limit is not None and estimate.total > limit.free:
        weights = estimate.weights + estimate.loaded
        copies = "tfm's copy of them as loaded" if estimate.loaded_is == "tfm's own copies" else estimate.loaded_is
        alone = f"the weights and {copies}" if estimate.loaded else "the weights alone"
        advice = f"{alone} need {human(weights)}" if weights > limit.free else limit.advice
        raise MemoryLimitError(
            f"{what} needs about {human(estimate.total)} ({describe(estimate)}), more than {limit.name}; {advice}"
        )


def out_of_memory(holds: str | None = None) -> str:
    """The one-line refusal for a MemoryError: which limit was reached, and what can help under it (`holds`:
    what a command without a forward pass holds, said instead of advice on batches and lengths)."""
    limits = memory_limits()
    ulimit = [lim for lim in limits if lim.kind == "ulimit"]  # the usual cause of a MemoryError on Linux
    limit = min(ulimit or limits, key=lambda lim: lim.free, default=None)
    if holds is not None:
        under = f" under {limit.name}" if limit is not None else ""
        return f"ran out of memory{under}: {holds}, and this model's need more than is left"
    if limit is None:
        return "ran out of memory; lower the batch or the sequence length"
    return f"ran out of memory (more than the estimate) under {limit.name}; {limit.advice}"
