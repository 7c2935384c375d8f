"""Numerical checks of the properties the seeds state, each with a control that must fail."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..analysis.memory import MemoryEstimate, check_memory, estimate_pass
from ..io.weights import Weights, init_weights, seeded_source
from ..spec.definition import Spec
from ..spec.stacks import encoder
from .causality import causality_need, check_causality
from .common import CheckResult, Setup, Verification, default_tol, make_setup, overall_exit
from .decoding import check_decoding, decoding_need
from .encoder_decoder import (
    EncoderDecoderSetup,
    check_memory_order,
    check_source_order,
    check_source_reach,
    encoder_setup,
    make_encoder_decoder_setup,
    order_need,
)
from .equivariance import breaking_features, check_equivariance, equivariance_need
from .experts import check_experts, experts_need
from .internals import check_counts, check_softmax, softmax_need
from .relative import check_relative, relative_need
from .scaling import check_scaling, scaling_need
from .softcap import check_softcap, softcap_need


def prepare(
    spec: Spec,
    load: Callable[[], tuple[Weights, str]] | None,
    seed: int,
    dtype: str,
    n: int | None,
    tol: float | None,
    max_memory: str | None = None,
    lazy: bool = False,
    checks: Sequence[str] | None = None,
) -> tuple[Setup, Weights, str]:
    """Check the memory the model needs, then load its weights (`load`: the weights and where they came from; None:
    seeded ones) and build the setup. `lazy`: `load` reads a file's headers alone (a Hugging Face folder, a GGUF
    file), so the memory is checked after it, in the first mode the weights allow (analysis/modes.py) whose
    `checks` (by name; None: all) fit."""
    if not lazy:
        check_memory(estimate_pass(spec, 1, n or 1, np.dtype(dtype)), max_memory, "this model")
    weights, source = load() if load is not None else (init_weights(spec, seed), seeded_source(seed))
    return _setup(spec, weights, seed, dtype, n, tol, max_memory, checks), weights, source


def _setup(
    spec: Spec,
    weights: Weights,
    seed: int,
    dtype: str,
    n: int | None,
    tol: float | None,
    max_memory: str | None,
    checks: Sequence[str] | None = None,
) -> Setup:
    """One stack's setup, or an encoder-decoder's own (the decoder over a seeded source)."""
    if encoder(spec) is not None:
        return make_encoder_decoder_setup(spec, weights, seed, dtype, n, tol, max_memory)

    def needs(setup: Setup) -> list[MemoryEstimate]:
        found = checks_of(setup, weights)
        return [need() for name, need, _ in found if need is not None and (checks is None or name in checks)]

    return make_setup(spec, weights, seed, dtype, n, tol, max_memory, needs)


def verify_all(
    spec: Spec,
    weights: Weights | None = None,
    seed: int = 0,
    dtype: str = "float64",
    n: int | None = None,
    tol: float | None = None,
    max_memory: str | None = None,
) -> list[CheckResult]:
    """Run every check against the theory's prediction for `spec`."""
    if weights is None:  # seeded weights, built only once the memory check has passed
        setup, weights, _ = prepare(spec, None, seed, dtype, n, tol, max_memory)
    else:
        setup = _setup(spec, weights, seed, dtype, n, tol, max_memory)
    return run_checks(setup, weights)


def run_checks(setup: Setup, weights: Weights, progress: Callable[[str], None] | None = None) -> list[CheckResult]:
    """Every check on a prepared setup, each expecting what the theory predicts; `progress` hears each name.

    Every check's peak memory is checked first: one that would not fit is refused before any check runs."""
    checks = checks_of(setup, weights)
    for name, need, _ in checks:
        if need is not None:
            setup.afford(name, need())
    return _run([(name, run) for name, _, run in checks], progress)


Need = Callable[[], MemoryEstimate] | None  # a check's peak memory, or None: it allocates nothing to speak of
Check = tuple[str, Need, Callable[[], CheckResult]]


def checks_of(setup: Setup, weights: Weights) -> list[Check]:
    """The checks a setup takes, by name, each with its peak memory and run when called."""
    if isinstance(setup, EncoderDecoderSetup):
        return encoder_decoder_checks(setup, weights)
    spec = setup.spec
    return [
        ("counts", None, lambda: check_counts(setup, weights, expect="theory")),
        ("softmax", lambda: softmax_need(setup), lambda: check_softmax(setup, expect="theory")),
        ("equivariance", lambda: equivariance_need(setup), lambda: check_equivariance(setup, expect="theory")),
        ("causality", lambda: causality_need(setup), lambda: check_causality(setup, expect="theory")),
        ("decoding", lambda: decoding_need(setup), lambda: check_decoding(setup, expect="theory")),
        ("relative", lambda: relative_need(setup), lambda: check_relative(setup, expect="theory")),
        *([("experts", lambda: experts_need(setup), lambda: check_experts(setup, expect="theory"))] if spec.E else []),
        *(
            [("softcap", lambda: softcap_need(setup), lambda: check_softcap(setup))]
            if spec.attn_softcap or spec.logit_softcap
            else []
        ),
        ("scaling", lambda: scaling_need(setup), lambda: check_scaling(setup, expect="theory")),
    ]


def encoder_decoder_checks(setup: EncoderDecoderSetup, weights: Weights) -> list[Check]:
    """An encoder-decoder's checks: both stacks' counts, the encoder's equivariance, the memory's and the
    source's order, the source's reach, and the decoder's own (over a fixed source)."""
    order = lambda: order_need(setup)  # noqa: E731
    return [
        ("counts", None, lambda: check_counts(setup, weights, expect="theory")),
        ("softmax", lambda: softmax_need(setup), lambda: check_softmax(setup, expect="theory")),
        (
            "encoder equivariance",
            lambda: equivariance_need(encoder_setup(setup)),
            lambda: _named(check_equivariance(encoder_setup(setup), expect="theory"), "encoder"),
        ),
        ("memory order", order, lambda: check_memory_order(setup)),
        ("source order", order, lambda: check_source_order(setup)),
        ("source reach", order, lambda: check_source_reach(setup)),
        ("causality", lambda: causality_need(setup), lambda: check_causality(setup, expect="theory")),
        ("decoding", lambda: decoding_need(setup), lambda: check_decoding(setup, expect="theory")),
        ("relative", lambda: relative_need(setup), lambda: check_relative(setup, expect="theory")),
    ]


def _named(result: CheckResult, stack: str) -> CheckResult:
    result.name, result.title = f"{stack} {result.name}", f"{stack}: {result.title}"
    return result


def _run(
    checks: list[tuple[str, Callable[[], CheckResult]]], progress: Callable[[str], None] | None
) -> list[CheckResult]:
    results = []
    for name, run in checks:
        if progress:
            progress(name)
        results.append(run())
    return results


__all__ = [
    "CheckResult",
    "Setup",
    "Verification",
    "breaking_features",
    "check_causality",
    "check_counts",
    "check_decoding",
    "check_equivariance",
    "check_experts",
    "check_softcap",
    "check_relative",
    "check_scaling",
    "check_softmax",
    "default_tol",
    "make_setup",
    "overall_exit",
    "run_checks",
    "prepare",
    "verify_all",
]
