"""Why scores are scaled: for unit-variance q, k in R^m, Var(k.q) = m, so 1/sqrt(m) brings it to 1 (seed 001).

The check reads the scores the model itself computes (its attention path, `Transformer.attend`), scale included:
- driven by query and key coordinates of independent unit variance, where theory says Var = m * scale^2;
- through each block's own projections on unit-variance inputs x, y: there q = W_Q x + b_Q, k = W_K y + b_K, and
  Var(scale * q.k) = scale^2 (||W_Q^T W_K||_F^2 + ||W_Q^T b_K||^2 + ||W_K^T b_Q||^2) around the mean
  scale * b_Q.b_K, per head (it is m * scale^2 again when W_Q and W_K have orthonormal rows and no bias).
Each figure is a mean over independent sequences, so its band is measured: 5 standard errors of that mean.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import kernels
from ..analysis.memory import MemoryEstimate, check_memory
from ..errors import TfmError
from .common import CheckResult, Setup, resolve_expect

BAND_SE = 5  # observed variance within this many standard errors (measured: 0 false FAILs in 500; 4 gave 2)
SEQ_LEN = 32  # columns per drawn sequence: n(n - 1) scores of independent query/key pairs per head
CHUNK = 64  # sequences per pass, so memory stays bounded however many samples are asked for
MIN_SEQUENCES = 40  # the band is measured from the spread between sequences: it needs enough of them
MAX_SAMPLES = 10**8


def _scores(setup: Setup, Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """The scaled scores the model's attention path computes for Q, K of shape (b, H, m, n): (b, H, n, n)."""
    found: list[np.ndarray] = []
    spec = setup.model.spec
    setup.model.attend(Q, K, K, kernels.Attend(spec.score_scale, softcap=spec.attn_softcap, scores_out=found))
    return found[0]


def _head_moments(setup: Setup, block: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per head, the predicted mean and variance of the unscaled score q.k (float64)."""
    H, m = setup.spec.H, setup.spec.m
    if block is None:  # unit-variance coordinates: mean 0, variance m
        return np.zeros(H), np.full(H, float(m))
    blk = setup.model.weights.block(block)[0]  # the block's attention weights
    G = setup.model.layers[block][0].spec.kv_heads  # (the block's own: MiMo-V2-Flash's sliding ones have more)
    W = np.asarray(blk.W_qkv[: (H + G) * m], np.float64).reshape(H + G, m, -1)  # ((H + G), m, d): queries, keys
    A, B = W[:H], np.repeat(W[H : H + G], H // G, axis=0)  # each query head with its key/value head's W_K
    b_qk = None if blk.b_qkv is None else blk.b_qkv[: (H + G) * m]
    b = np.zeros((H + G, m)) if b_qk is None else np.asarray(b_qk, np.float64).reshape(H + G, m)
    a, c = b[:H], np.repeat(b[H : H + G], H // G, axis=0)
    gram = np.sum((A @ A.swapaxes(1, 2)) * (B @ B.swapaxes(1, 2)), axis=(1, 2))  # tr(A A^T B B^T) = ||A^T B||_F^2
    bias = np.square(np.einsum("hid,hi->hd", A, c)).sum(-1) + np.square(np.einsum("hid,hi->hd", B, a)).sum(-1)
    return np.einsum("hi,hi->h", a, c), gram + bias


def _observe(setup: Setup, block: int | None, sequences: int) -> np.ndarray:
    """One estimate of the mean unscaled score variance per drawn sequence (averaged over heads)."""
    spec, n, c = setup.spec, SEQ_LEN, setup.spec.score_scale
    mean, _ = _head_moments(setup, block)
    off = ~np.eye(n, dtype=bool)  # a query with its own key shares one input column: not an independent pair
    out = []
    for start in range(0, sequences, CHUNK):
        b = min(CHUNK, sequences - start)
        if block is None:
            Q, K = (setup.gaussian(b, spec.H, spec.m, n).astype(setup.model.dtype) for _ in range(2))
        else:
            U = setup.gaussian(spec.d, b, n).astype(setup.model.dtype)  # unit-variance inputs, (d, b, n)
            Q, K, _ = setup.model.qkv(block, U)
        S = _scores(setup, Q, K).astype(np.float64) / c  # back to q.k, so no scale can overflow the figures
        dev = (S - mean[None, :, None, None])[..., off]  # (b, H, n(n-1))
        out.append(np.mean(np.square(dev), axis=(1, 2)))
    return np.concatenate(out)


def scaling_need(setup: Setup, samples: int = 20000) -> MemoryEstimate:
    """A pass over up to CHUNK sequences of SEQ_LEN at a time, whatever n."""
    spec = setup.spec
    batch = min(CHUNK, max(MIN_SEQUENCES, math.ceil(samples / (spec.H * SEQ_LEN * (SEQ_LEN - 1)))))
    return setup.estimate(batch, setup.model.dtype, SEQ_LEN)


def check_scaling(setup: Setup, samples: int = 20000, expect: str = "holds") -> CheckResult:
    """Observed variance of the model's scores against m * scale^2 (unit-variance q, k) and each block's prediction."""
    spec = setup.spec
    if not 100 <= samples <= MAX_SAMPLES:
        raise TfmError(f"--samples: got {samples}, expected 100 .. {MAX_SAMPLES:,}")
    m, c = spec.m, spec.score_scale
    sequences = max(MIN_SEQUENCES, math.ceil(samples / (spec.H * SEQ_LEN * (SEQ_LEN - 1))))
    check_memory(
        scaling_need(setup, samples),
        setup.max_memory,
        f"the scaling check ({min(CHUNK, sequences)} sequences of {SEQ_LEN} at a time)",
        limits=setup.limits,
    )
    with np.errstate(over="ignore", under="ignore"):
        c2 = float(np.float64(c) ** 2)
    unit = c2 if 0.0 < c2 < math.inf else 1.0  # figures as variances; per scale^2 where that is not a float
    per = "" if unit == c2 else " / scale^2"
    columns = [
        f"scores{per}",
        "predicted variance",
        "observed",
        "band (+/-)",
        "if the scale were ignored",
        "as predicted",
    ]
    rows: list[list[Any]] = []
    told_apart: list[str] = []
    skipped: list[str] = []
    tiny, huge = float(np.finfo(setup.model.dtype).tiny), float(np.finfo(setup.model.dtype).max)
    for block in [None, *range(spec.N)]:
        label = f"unit-variance q, k (m = {m})" if block is None else f"block {block}: W_Q x + b_Q, W_K y + b_K"
        why = None if block is None else setup.model.layers[block][0].normalised()  # no longer W_Q, W_K's
        if why is not None:
            rows.append([label, None, None, None, None, f"not measured: {why}"])
            continue
        predicted = float(np.mean(_head_moments(setup, block)[1]))  # unscaled: Var(q.k)
        size = c * math.sqrt(predicted)  # the typical score, scaled
        if predicted == 0.0 or not tiny * 1e3 < size < huge / 1e3:
            why = (
                "inert: W_Q or W_K is zero, the scores are constant"
                if predicted == 0.0
                else f"scores of about {size:.3g} are outside what {setup.model.dtype} can hold"
            )
            skipped.append(why)
            rows.append([label, predicted * unit, None, None, None, f"not measured: {why}"])
            continue
        estimates = _observe(setup, block, sequences)
        observed = float(estimates.mean())
        band = BAND_SE * float(estimates.std(ddof=1)) / math.sqrt(len(estimates))
        if c == 1.0 or abs(predicted / c / c - predicted) > 2 * band:  # a model skipping the scale would fail here
            told_apart.append(label)
        result = "within band" if abs(observed - predicted) <= band else "OUTSIDE band"
        with np.errstate(all="ignore"):  # a model that skips the scale shows q.k's own variance
            ignored = float(np.float64(predicted) * unit / np.float64(c) ** 2) if c != 1.0 else None
        rows.append([label, predicted * unit, observed * unit, band * unit, ignored, result])
    results = [row[-1] for row in rows if row[-1] in ("within band", "OUTSIDE band")]
    observed_ok = all(r == "within band" for r in results)
    reason = f"{sequences} sequences of {SEQ_LEN} per row, band = {BAND_SE} standard errors of their mean"
    verdict: bool | None = observed_ok
    if not results:
        verdict, reason = None, "nothing could be measured: " + "; ".join(dict.fromkeys(skipped))
    elif observed_ok and not told_apart:  # the scale acts alike in every row: one row that tells is enough
        verdict = None
        reason = (
            f"scale {spec.scale} ({c:.4g}) is so close to 1 that the variance with and without it differ "
            f"by less than the band: whether the model applies it cannot be told"
        )
    observation = "; ".join(
        f"{row[0]}: {row[2]:.3g} (predicted {row[1]:.3g} +/- {row[3]:.2g})" for row in rows if row[2] is not None
    )
    return CheckResult(
        name="scaling",
        title="score variance is m * scale^2 for unit-variance q, k",
        expected=resolve_expect(expect, True),
        predicted=True,
        observed=verdict,
        observation=observation,
        reason=reason,
        columns=columns,
        rows=rows,
        summary={
            "m": m,
            "scale": c,
            "samples_per_row": sequences * spec.H * SEQ_LEN * (SEQ_LEN - 1),
            "sequences_per_row": sequences,
            "band_standard_errors": BAND_SE,
            "not_measured": skipped,
        },
    )
