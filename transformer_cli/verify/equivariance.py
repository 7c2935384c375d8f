"""Seed property (a): Transformer(XP) = Transformer(X)P for every permutation matrix P."""

from __future__ import annotations

import numpy as np

from ..layers import sinusoidal_positions
from ..spec import Spec
from .common import CONTROL_FACTOR, CheckResult, Setup, rel_err, resolve_expect, within


def breaking_features(spec: Spec) -> list[str]:
    """The spec's features that break permutation equivariance (seed 001: positions or a position-dependent mask)."""
    out = []
    if spec.positional != "none":
        out.append(f"{spec.positional} positional encoding")
    if spec.mask != "none":
        out.append(f"{spec.mask} mask")
    return out


def derangement(rng: np.random.Generator, n: int) -> np.ndarray:
    """A uniformly random permutation of 0..n-1 with no fixed point (n >= 2)."""
    while True:
        perm = rng.permutation(n)
        if not np.any(perm == np.arange(n)):
            return perm


def permutations(rng: np.random.Generator, n: int, trials: int) -> list[tuple[str, np.ndarray]]:
    """The fixed cases (identity, adjacent swap, reversal, cyclic shift) and `trials` random derangements.

    A permutation is an index array p with XP = X[:, p].
    """
    ident = np.arange(n)
    perms = [("identity", ident)]
    if n >= 2:
        perms += [
            ("adjacent swap", np.concatenate([[1, 0], ident[2:]])),
            ("reversal", ident[::-1].copy()),
            ("cyclic shift", np.roll(ident, 1)),
        ]
        perms += [("derangement", derangement(rng, n)) for _ in range(trials)]
    return perms


def check_equivariance(setup: Setup, trials: int = 8, expect: str = "holds") -> CheckResult:
    """Compare T(XP) with T(X)P over fixed and random permutations, with a positional control."""
    spec, n, tol = setup.spec, setup.n, setup.tol
    breakers = breaking_features(spec)
    predicted = not breakers
    X = setup.gaussian(spec.d, n)
    perms = permutations(setup.rng, n, trials)
    E = sinusoidal_positions(spec.d, n)  # the control's position-dependent term
    setup.require(2 * len(perms))
    batch = np.stack([X[:, p] for _, p in perms] + [X[:, p] + E for _, p in perms])  # (2k, d, n), one pass
    Y = setup.model(batch)
    k = len(perms)
    TX, TXc = Y[0], Y[k]  # perms[0] is the identity: T(X) and the control's T(X + E)
    columns = ["permutation", "fixed", "abs error", "rel error", "tol", "moved", "result"]
    rows, moved_min, control = [], np.inf, 0.0
    for j, (kind, p) in enumerate(perms):
        err = rel_err(Y[j], TX[:, p], TX)
        abs_err = float(np.max(np.abs(np.asarray(Y[j], np.float64) - np.asarray(TX[:, p], np.float64))))
        trial_tol = 0.0 if kind == "identity" else tol  # the same input twice must give the same bits
        moved = rel_err(Y[j], TX, TX)
        ok = within(err, trial_tol)
        if kind != "identity":
            moved_min = min(moved_min, moved)
            control = max(control, rel_err(Y[k + j], TXc[:, p], TXc))
        rows.append([kind, int(np.sum(p == np.arange(n))), abs_err, err, trial_tol, moved, "PASS" if ok else "FAIL"])
    holds = all(row[-1] == "PASS" for row in rows)
    observed, reason = holds, ""
    if holds and n < 2:
        observed, reason = None, "n = 1: the only permutation is the identity, so nothing was tested"
    elif holds and not control >= CONTROL_FACTOR * tol:
        observed, reason = (
            None,
            f"the positional control broke equivariance by only {control:.3g} (< {CONTROL_FACTOR} x tol)",
        )
    elif holds and not moved_min > tol:
        observed, reason = None, "a permutation left the output unchanged, so agreement proves nothing"
    elif predicted:
        reason = "no positional encoding and no mask: attention, feedforward and norms act on columns alike"
    else:
        reason = " and ".join(breakers) + " tell positions apart"
    errors = [row[3] for row in rows]
    worst_err = float("nan") if any(np.isnan(errors)) else max(errors)
    return CheckResult(
        name="equivariance",
        title="Transformer(XP) = Transformer(X)P",
        expected=resolve_expect(expect, predicted),
        predicted=predicted,
        observed=observed,
        observation=f"worst rel error {worst_err:.3g} vs tol {tol:.3g} over {len(perms)} permutations",
        reason=reason,
        columns=columns,
        rows=rows,
        summary={
            "n": n,
            "worst_error": worst_err,
            "tolerance": tol,
            "control_error": control,
            "separation": control / tol if tol > 0 else float("inf"),
            "min_moved": float(moved_min) if np.isfinite(moved_min) else None,
        },
    )
