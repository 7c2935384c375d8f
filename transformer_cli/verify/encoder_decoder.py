"""The encoder-decoder's properties (seed 001), each with a control that must fail.

- memory order: permuting the columns of the encoder's output (the memory) leaves the decoder's output unchanged,
  whatever positions either stack has: cross-attention adds no position to the memory. Control: absolute
  positions added to the memory, which permuting it then moves against its content.
- source order: the whole output is invariant to permuting the source exactly when the encoder has no
  positions (its blocks are then permutation-equivariant and the memory's order does not matter). Control:
  absolute positions added to the source.
- source reach: every target column depends on every source column (cross-attention reads all of them).
- and, through the one-stack checks on the decoder reading a fixed source: causality (target column t depends
  on target columns <= t only) and decoding (one target column at a time, the self-attention's cache growing and
  the cross-attention's keys and values made once from the memory, equals the parallel pass).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..analysis.limits import memory_limits
from ..analysis.memory import MemoryEstimate, check_memory, estimate_encoder_decoder
from ..components.encoder import encoder_run_spec
from ..io.weights import init_weights
from ..kernels import sinusoidal_positions
from ..model.decoding import decode
from ..model.encoder_decoder import EncoderDecoder
from ..model.transformer import Transformer
from ..spec.choices import LEARNED
from .common import CONTROL_FACTOR, CheckResult, Setup, rel_err, resolve_expect, within
from .equivariance import breaking_features, permutations

TRIALS = 6  # permutations of the memory and of the source, besides the identity


class Decoder:
    """The decoder as a one-input model over a fixed source, for the one-stack checks: target columns (d, n) or
    (b, d, n) -> its output, every sequence of the batch reading the same source's encoding."""

    def __init__(self, model: EncoderDecoder, source: np.ndarray):
        self.model, self.spec, self.dtype = model, model.spec, model.dtype
        self.memory = model.encode(source)  # (d, n_src)

    def _memory(self, X: np.ndarray) -> np.ndarray:
        batched = X.ndim == (2 if np.issubdtype(X.dtype, np.integer) else 3)
        return np.broadcast_to(self.memory, (X.shape[0], *self.memory.shape)) if batched else self.memory

    def forward(self, X: np.ndarray, **options) -> np.ndarray:
        X = np.asarray(X)
        return self.model.decoder.forward(X, memory=self._memory(X), **options)

    __call__ = forward

    def decode(self, X: np.ndarray, **options) -> np.ndarray:
        X = np.asarray(X)
        return decode(self.model.decoder, X, memory=self._memory(X), **options)

    def attention_weights(self, X: np.ndarray) -> list[np.ndarray]:
        found: list = []
        self.forward(X, weights_out=found)
        return found


@dataclass
class EncoderDecoderSetup(Setup):
    """A Setup whose model is the decoder over one seeded source; `pair` is the whole encoder-decoder."""

    # always given (make_encoder_decoder_setup); defaults only because they follow Setup's defaulted fields
    pair: EncoderDecoder = None  # type: ignore[assignment]
    source: np.ndarray = None  # type: ignore[assignment]

    def estimate(self, batch: int, dtype: np.dtype, n: int | None = None) -> MemoryEstimate:
        n = self.n if n is None else n
        return estimate_encoder_decoder(self.spec, batch, n, n, dtype)


def make_encoder_decoder_setup(
    spec, weights, seed: int, dtype: str, n: int | None, tol: float | None, max_memory: str | None = None
) -> EncoderDecoderSetup:
    """The encoder-decoder (seeded weights unless given), a seeded source, and the decoder reading it."""
    n = n or (min(16, spec.max_len) if spec.positional in LEARNED else 16)
    limits = memory_limits()  # before the model is built (its weights are in the checks' estimates)
    check_memory(estimate_encoder_decoder(spec, 1, n, n, dtype), max_memory, "this model", limits=limits)
    weights = weights if weights is not None else init_weights(spec, seed)
    pair = EncoderDecoder(spec, weights, np.dtype(dtype))
    rng = np.random.default_rng([seed, 1])
    source = rng.standard_normal((spec.source_d, n))  # (the encoder's width)
    reference = None
    if np.dtype(dtype) != np.float64 and tol is None:  # the float64 twin that measures float32's rounding
        reference = Decoder(EncoderDecoder(spec, weights, np.float64), source)
    decoder = Decoder(pair, source)
    model, twin = cast(Transformer, decoder), cast("Transformer | None", reference)  # (a Decoder runs as one)
    return EncoderDecoderSetup(spec, model, rng, n, tol, max_memory, twin, limits=limits, pair=pair, source=source)


def encoder_setup(setup: EncoderDecoderSetup) -> Setup:
    """The encoder alone as a one-stack setup, for seed property (a) on it."""
    reference = None if setup.reference is None else setup.reference.model.encoder  # type: ignore[attr-defined]
    return Setup(
        encoder_run_spec(setup.spec),
        setup.pair.encoder,
        setup.rng,
        setup.n,
        setup.tol,
        setup.max_memory,
        reference,
        limits=setup.limits,
    )


def _tolerance(setup: EncoderDecoderSetup, run, inputs: np.ndarray, Y: np.ndarray) -> float:
    """As Setup.tolerance: at least 4 x the rounding noise of `run` on `inputs` nudged by one rounding step."""
    if setup.tol is not None:
        return setup.tol
    eps = float(np.finfo(setup.model.dtype).eps)
    noise = rel_err(Y, run(inputs * (1.0 + eps * setup.rng.uniform(-1.0, 1.0, inputs.shape))), Y)
    return max(setup.base_tol, 4 * noise) if math.isfinite(noise) else setup.base_tol


def _order_check(
    setup: EncoderDecoderSetup, name: str, title: str, run, inputs: np.ndarray, predicted: bool, why: str
) -> CheckResult:
    """run(inputs permuted) against run(inputs), over distinct permutations, and the same with absolute
    positions added to the inputs, which must break it by 1000 x tol."""
    n = inputs.shape[-1]
    perms = permutations(setup.rng, n, TRIALS)
    E = sinusoidal_positions(inputs.shape[0], n)  # (the memory, the source: the encoder's width)
    Y0, Yc0 = run(inputs), run(inputs + E)
    tol = _tolerance(setup, run, inputs, Y0)
    rows: list[list[Any]] = []
    control = 0.0
    for kind, p in perms[1:]:
        err = rel_err(run(inputs[:, p]), Y0, Y0)
        control = max(control, rel_err(run(inputs[:, p] + E), Yc0, Yc0))
        rows.append([kind, err, tol, "holds" if within(err, tol) else "breaks"])
    holds = all(row[-1] == "holds" for row in rows)
    observed: bool | None = holds
    reason = why
    if holds and not rows:
        observed, reason = None, "n = 1: the only permutation is the identity"
    elif holds and not control >= CONTROL_FACTOR * tol:
        observed, reason = None, f"the positional control moved the output by only {control:.3g} (< 1000 x tol)"
    worst = max((row[1] for row in rows), default=0.0)
    return CheckResult(
        name=name,
        title=title,
        expected=resolve_expect("theory", predicted),
        predicted=predicted,
        observed=observed,
        observation=f"worst rel error {worst:.3g} vs tol {tol:.3g}, {len(rows)} permutations; control {control:.3g}",
        reason=reason,
        columns=["permutation", "rel error", "tol", "property"],
        rows=rows,
        summary={"n": n, "worst_error": worst, "tolerance": tol, "control_error": control},
    )


def order_need(setup: EncoderDecoderSetup) -> MemoryEstimate:
    """The order and reach checks: passes over one source and target at a time, beside a few inputs and outputs."""
    return setup.need(1, held=6 * setup.column_bytes + 3 * setup.output_bytes, noise=1)


def check_memory_order(setup: EncoderDecoderSetup) -> CheckResult:
    setup.afford("memory order", order_need(setup))
    T = setup.gaussian(setup.spec.d, setup.n)
    memory = setup.model.memory  # type: ignore[attr-defined]  # the model is the Decoder above
    run = lambda M: setup.pair.decoder.forward(T, memory=M)  # noqa: E731
    return _order_check(
        setup,
        "memory order",
        "cross-attention ignores the order of the encoder's output",
        run,
        np.asarray(memory, np.float64),
        True,
        "cross-attention adds no position to the memory: its keys and values are a set",
    )


def check_source_order(setup: EncoderDecoderSetup) -> CheckResult:
    setup.afford("source order", order_need(setup))
    T = setup.gaussian(setup.spec.d, setup.n)
    breakers = breaking_features(encoder_run_spec(setup.spec))
    run = lambda S: setup.pair.forward(S, T)  # noqa: E731
    why = (
        (" and ".join(breakers) + " in the encoder tell the source's positions apart")
        if breakers
        else (
            "the encoder has no positions: its output permutes with the source, and the memory's order does not matter"
        )
    )
    return _order_check(
        setup, "source order", "the output is invariant to permuting the source", run, setup.source, not breakers, why
    )


def check_source_reach(setup: EncoderDecoderSetup) -> CheckResult:
    """Changing any one source column moves every target column's output."""
    spec, n = setup.spec, setup.n
    setup.afford("source reach", order_need(setup))
    T = setup.gaussian(spec.d, n)
    S = setup.source
    Y = setup.pair.forward(S, T)
    tol = _tolerance(setup, lambda s: setup.pair.forward(s, T), S, Y)
    rows: list[list[Any]] = []
    for j in range(n):
        changed = S.copy()
        changed[:, j] = setup.gaussian(spec.source_d)
        moved = np.max(np.abs(setup.pair.forward(changed, T) - Y), axis=0) / np.max(np.abs(Y))  # per target column
        rows.append([j, float(moved.min()), tol, "reaches" if moved.min() > tol else "misses"])
    holds = all(row[-1] == "reaches" for row in rows)
    return CheckResult(
        name="source reach",
        title="every target column depends on every source column",
        expected=True,
        predicted=True,
        observed=holds,
        observation=f"least move {min(r[1] for r in rows):.3g} vs tol {tol:.3g}",
        reason="cross-attention reads every column of the memory, in every decoder block",
        columns=["source column", "least move of a target column", "tol", "property"],
        rows=rows,
        summary={"n": n, "tolerance": tol},
    )
