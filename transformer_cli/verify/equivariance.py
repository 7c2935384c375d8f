"""Seed property (a): Transformer(XP) = Transformer(X)P for every permutation matrix P."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ..analysis.memory import MemoryEstimate
from ..components import components
from ..errors import TfmError
from ..kernels import sinusoidal_positions
from ..spec.definition import Spec
from .common import CONTROL_FACTOR, CheckResult, Setup, rel_err, resolve_expect, within

MAX_TRIALS = 10_000  # random permutations a check may ask for; beyond that they add time, not evidence


def breaking_features(spec: Spec) -> list[str]:
    """The spec's features that break permutation equivariance (seed 001: positions or a position-dependent mask).

    Each component says what in it tells positions apart; positions come first (they act on the input).
    """
    parts = sorted(components(spec), key=lambda c: c.where != "input")
    found = [reason for c in parts if (reason := c.breaks_equivariance()) is not None]
    return list(dict.fromkeys(found))  # (each once: groups of blocks alike say the same)


def position_breakers(spec: Spec) -> list[str]:
    """The breakers that act on the input itself (positions), which no inert attention can hide."""
    return [reason for c in components(spec) if c.where == "input" and (reason := c.breaks_equivariance())]


def derangement(rng: np.random.Generator, n: int) -> np.ndarray:
    """A uniformly random permutation of 0..n-1 with no fixed point (n >= 2)."""
    while True:
        perm = rng.permutation(n)
        if not np.any(perm == np.arange(n)):
            return perm


def permutations(rng: np.random.Generator, n: int, trials: int) -> list[tuple[str, np.ndarray]]:
    """The identity, then distinct permutations: adjacent swap, reversal, cyclic shift and `trials` random ones.

    A permutation is an index array p with XP = X[:, p]. No permutation appears twice, so a small n gives
    fewer than asked (n = 2 has a single permutation besides the identity). The random ones are
    derangements (no fixed point) when n is large enough to have plenty; otherwise drawn from all n!.
    """
    ident = np.arange(n)
    candidates = (
        [
            ("adjacent swap", np.concatenate([[1, 0], ident[2:]])),
            ("reversal", ident[::-1].copy()),
            ("cyclic shift", np.roll(ident, 1)),
        ]
        if n >= 2
        else []
    )
    perms, seen = [("identity", ident)], {tuple(ident)}
    for kind, p in candidates:
        if tuple(p) not in seen:
            perms.append((kind, p))
            seen.add(tuple(p))
    wanted = len(perms) + trials
    if math.lgamma(n + 1) <= math.log(4 * wanted):  # n! <= 4 x wanted: take them from all n! in random order
        for p in rng.permutation(np.array(list(itertools.permutations(range(n))))):
            if len(perms) >= wanted:
                break
            if tuple(p) not in seen:
                perms.append(("random", p))
                seen.add(tuple(p))
        return perms
    while len(perms) < wanted:  # n!/e derangements > 1.4 x wanted: rejection ends quickly
        p = derangement(rng, n)
        if tuple(p) not in seen:
            perms.append(("derangement", p))
            seen.add(tuple(p))
    return perms


def equivariance_need(setup: Setup, trials: int = 8) -> MemoryEstimate:
    """One pass over each permutation of the input and its control (2k + 1 sequences, drawn as a list and stacked),
    and the rounding noise of the first k."""
    k = 4 + trials  # the identity, three fixed permutations, the random ones
    batch = 2 * k + 1
    return setup.need(batch, held=2 * batch * setup.column_bytes + k * setup.n * 8, noise=k)


def check_equivariance(setup: Setup, trials: int = 8, expect: str = "holds") -> CheckResult:
    """Compare T(XP) with T(X)P over distinct permutations, with a positional control and a mixing probe."""
    spec, n = setup.spec, setup.n
    if not 0 <= trials <= MAX_TRIALS:
        raise TfmError(f"--trials: got {trials}, expected 0 .. {MAX_TRIALS:,}")
    breakers = breaking_features(spec)
    predicted = not breakers
    X = setup.gaussian(spec.input_width, n)
    setup.afford("equivariance", equivariance_need(setup, trials))  # memory first, before a permutation is built
    perms = permutations(setup.rng, n, trials)
    k = len(perms)
    E = sinusoidal_positions(spec.input_width, n)  # the control's position-dependent term
    mixed = X.copy()
    mixed[:, 0] = setup.gaussian(spec.input_width)  # one column changed: do the others move? (attention mixes columns)
    batch = np.stack([X[:, p] for _, p in perms] + [X[:, p] + E for _, p in perms] + [mixed])  # one pass
    Y = setup.model(batch)
    TX, TXc = Y[0], Y[k]  # perms[0] is the identity: T(X) and the control's T(X + E)
    tol, how = setup.tolerance(batch[:k], Y[:k])  # the rounding of the very passes compared
    mixing = rel_err(Y[-1][:, 1:], TX[:, 1:], TX) if n >= 2 else 0.0
    columns = ["permutation", "fixed", "abs error", "rel error", "tol", "moved", "property"]
    rows: list[list[Any]] = []
    moved_min, control = math.inf, 0.0
    for j, (kind, p) in enumerate(perms):
        err = rel_err(Y[j], TX[:, p], TX)
        abs_err = float(np.max(np.abs(np.asarray(Y[j], np.float64) - np.asarray(TX[:, p], np.float64))))
        trial_tol = 0.0 if kind == "identity" else tol  # the same input twice must give the same bits
        moved = rel_err(Y[j], TX, TX)
        if kind != "identity":
            moved_min = min(moved_min, moved)
            control = max(control, rel_err(Y[k + j], TXc[:, p], TXc))
        rows.append(
            [
                kind,
                int(np.sum(p == np.arange(n))),
                abs_err,
                err,
                trial_tol,
                moved,
                "holds" if within(err, trial_tol) else "breaks",
            ]
        )
    holds = all(row[-1] == "holds" for row in rows)
    observed: bool | None = holds
    reason = _theory(breakers)
    if holds and n < 2:
        observed, reason = None, "n = 1: the only permutation is the identity, so nothing was tested"
    elif holds and not control >= CONTROL_FACTOR * tol:
        observed = None
        reason = f"the positional control broke equivariance by only {control:.3g} (< {CONTROL_FACTOR} x tol)"
    elif holds and not moved_min > tol:
        observed, reason = None, "a permutation left the output unchanged, so agreement proves nothing"
    elif holds and not predicted and not position_breakers(spec) and not mixing >= CONTROL_FACTOR * tol:
        observed = None
        reason = (
            f"attention is inert: changing column 0 moved the other columns by only {mixing:.3g}, so the "
            f"{' and '.join(breakers)} {'has' if len(breakers) == 1 else 'have'} nothing to act on"
        )
    errors = [row[3] for row in rows]
    worst = float("nan") if any(np.isnan(errors)) else max(errors)
    short = f" ({k - 1} distinct, fewer than the {trials} + 3 asked: n = {n} has no more)" if k - 1 < trials + 3 else ""
    return CheckResult(
        name="equivariance",
        title="Transformer(XP) = Transformer(X)P",
        expected=resolve_expect(expect, predicted),
        predicted=predicted,
        observed=observed,
        observation=f"worst rel error {worst:.3g} vs tol {tol:.3g} over {k - 1} permutations besides the identity"
        + short,
        reason=reason,
        columns=columns,
        rows=rows,
        summary={
            "n": n,
            "permutations": k - 1,
            "worst_error": worst,
            "tolerance": tol,
            **how,
            "control_error": control,
            "separation": control / tol if tol > 0 else math.inf,
            "min_moved": float(moved_min) if math.isfinite(moved_min) else None,
            "mixing": mixing,
        },
        details={"permutations": [[kind, p.tolist()] for kind, p in perms]},
    )


def _theory(breakers: list[str]) -> str:
    if not breakers:
        return "no positional encoding and no mask: attention, feedforward and norms act on columns alike"
    return " and ".join(breakers) + " tell positions apart"
