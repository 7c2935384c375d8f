"""How far one model's next-token distributions are from another's (issue 43), as llama.cpp measures it.

A is the base, B the model checked against it (a quantisation, a conversion). Over the positions scored, each
predicting the input's next token, the figures are llama-perplexity's (`--kl-divergence`, tools/perplexity):

- kld: KL(P_A || P_B) = sum_v p_A(v) (ln p_A(v) - ln p_B(v)) at each position, over the whole vocabulary (llama.cpp
  stores the base's log-probabilities in 16 bits and drops those below e^-16; tfm keeps them all, in float64);
- delta_p: p_B - p_A of the next token actually in the input; rms: the root of its mean square;
- same_top_p: the fraction of positions whose most likely token is the same in both (the first of equal ones);
- ppl: each model's perplexity over the next tokens, their ratio, and ln(PPL_B / PPL_A) with its uncertainty
  from the covariance of the two models' log-likelihoods;
- logits: the largest difference, and NMSE = mean((B - A)^2) / var(A) with llama.cpp's model-conversion bands.

Uncertainties are llama-perplexity's: the standard error sqrt(var / (count - 1)) of a mean, 0 with 10 positions or
fewer; a percentile interpolates linearly between the sorted values at fraction (count - 1) (NumPy's default).

Positions: the whole input as one sequence scores every position but the last (`chunks(n, None)`); with a context
C, as llama-perplexity, the input is cut into n // C chunks of C tokens, each run alone, and each chunk scores its
second half: positions C // 2 .. C - 2, predicting tokens C // 2 + 1 .. C - 1 (llama.cpp also puts the BOS token at
each chunk's start; tfm runs the ids as given).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

SCORE_BYTES = 4 << 20  # a slice of positions scored at once: its float64 logits (V x columns), at most this
# (name in --json, fraction): llama-perplexity's list, highest first
PERCENTILES = (("p99_9", 0.999), ("p99", 0.99), ("p95", 0.95), ("p90", 0.90))
LOWER = (("p10", 0.10), ("p5", 0.05), ("p1", 0.01), ("p0_1", 0.001))
QUARTILES = (("p75", 0.75), ("p25", 0.25))  # Δp's, as llama-perplexity lists them
# llama.cpp's examples/model-conversion: NMSE below each bound, its words
NMSE_BANDS = (
    (1e-6, "essentially identical"),
    (1e-4, "excellent match"),
    (1e-3, "very good match"),
    (1e-2, "good match"),
    (1e-1, "acceptable match"),
    (1.0, "poor match"),
)


@dataclass(frozen=True)
class Chunk:
    """Tokens start .. stop - 1 run as one sequence, positions first .. (of the chunk) scored on the next token."""

    start: int
    stop: int
    first: int


def chunks(n: int, ctx: int | None) -> list[Chunk]:
    """The sequences an input of n tokens is run as, and the positions each scores (see the module's note)."""
    if ctx is None:
        return [Chunk(0, n, 0)] if n >= 2 else []
    return [Chunk(i * ctx, (i + 1) * ctx, ctx // 2) for i in range(n // ctx)]


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """ln p over the vocabulary (axis 0) of logits (V, n), in float64."""
    x = np.asarray(logits, dtype=np.float64)
    shifted = x - x.max(axis=0, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=0, keepdims=True))


def next_token_nll(logits: np.ndarray, following: np.ndarray) -> np.ndarray:
    """-ln p of each position's next token, from logits (V, k) and the k tokens that follow, a slice of columns at
    a time (SCORE_BYTES)."""
    following = np.asarray(following)
    return np.concatenate(
        [-log_softmax(logits[:, cut])[following[cut], np.arange(following[cut].size)] for cut in _slices(logits)]
    )


def score_scratch(vocabulary: int, positions: int) -> int:
    """What scoring holds at its peak beside the logits: a slice's float64 log-probabilities, probabilities and
    differences (about 7 arrays of the slice; 10 counted), for the largest chunk's `positions`."""
    return 10 * min(SCORE_BYTES, 8 * vocabulary * max(positions, 1))


def _slices(logits: np.ndarray) -> list[slice]:
    """Column slices of logits (V, k) of at most SCORE_BYTES in float64 each (at least one column)."""
    step = max(1, SCORE_BYTES // (8 * max(logits.shape[0], 1)))
    return [slice(i, i + step) for i in range(0, logits.shape[1], step)] or [slice(0, 0)]


@dataclass(frozen=True)
class Scored:
    """Each scored position's figures: both models' negative log-likelihood of the next token, the KL divergence,
    Δp and whether the top tokens agree; and the logits' squared and largest differences, summed for the NMSE."""

    nll_a: np.ndarray
    nll_b: np.ndarray
    kld: np.ndarray
    delta_p: np.ndarray
    same_top: np.ndarray
    logit_sums: tuple[float, float, float, int, float]  # sum (B - A)^2, sum A, sum A^2, count, max |B - A|

    @staticmethod
    def of(logits_a: np.ndarray, logits_b: np.ndarray, ids: np.ndarray, first: int = 0) -> Scored:
        """One sequence's logits (V, c) from each model and its c token ids: positions first .. c - 2 scored."""
        a, b = np.asarray(logits_a)[:, first:-1], np.asarray(logits_b)[:, first:-1]
        return Scored.columns(a, b, np.asarray(ids)[first + 1 :])

    @staticmethod
    def columns(a: np.ndarray, b: np.ndarray, following: np.ndarray) -> Scored:
        """The scored positions' logits (V, k) from each model and the k tokens that follow them, a slice of
        columns at a time: at most score_scratch(V, k) bytes beside the logits."""
        following = np.asarray(following)
        return Scored.joined([Scored._columns(a[:, cut], b[:, cut], following[cut]) for cut in _slices(a)])

    @staticmethod
    def _columns(a: np.ndarray, b: np.ndarray, following: np.ndarray) -> Scored:
        la, lb = log_softmax(a), log_softmax(b)
        pa = np.exp(la)
        kld = np.where(pa > 0, pa * (la - lb), 0.0).sum(axis=0)
        del pa
        where = np.arange(following.size)
        nll_a, nll_b = -la[following, where], -lb[following, where]
        del la, lb
        a64 = a.astype(np.float64)
        diff = b.astype(np.float64) - a64
        largest = float(np.abs(diff).max()) if diff.size else 0.0
        sums = (float((diff**2).sum()), float(a64.sum()), float((a64**2).sum()), a.size, largest)
        same = np.argmax(a, axis=0) == np.argmax(b, axis=0) if a.size else np.zeros(0, dtype=bool)
        return Scored(nll_a, nll_b, kld, np.exp(-nll_b) - np.exp(-nll_a), same, sums)

    @staticmethod
    def joined(parts: list[Scored]) -> Scored:
        """The positions of several chunks as one."""
        if len(parts) == 1:
            return parts[0]
        sums = [p.logit_sums for p in parts]
        total = (
            sum(s[0] for s in sums),
            sum(s[1] for s in sums),
            sum(s[2] for s in sums),
            sum(s[3] for s in sums),
            max(s[4] for s in sums),
        )

        def joined(field: str) -> np.ndarray:
            return np.concatenate([getattr(p, field) for p in parts])

        return Scored(joined("nll_a"), joined("nll_b"), joined("kld"), joined("delta_p"), joined("same_top"), total)


def mean_and_error(values: np.ndarray) -> tuple[float, float]:
    """The mean and its standard error, as llama-perplexity computes them (0 with 10 values or fewer)."""
    count = values.size
    if count < 1:
        return 0.0, 0.0
    mean = float(values.sum() / count)
    var = float((values**2).sum() / count - mean * mean)
    return mean, math.sqrt(var / (count - 1)) if var > 0 and count > 10 else 0.0


def covariance(a: np.ndarray, b: np.ndarray) -> float:
    """The covariance of the two means, as llama-perplexity computes it (0 with fewer than 10 values)."""
    count = a.size
    if count < 10:
        return 0.0
    return float(((a * b).sum() / count - (a.sum() / count) * (b.sum() / count)) / (count - 1))


def spread(values: np.ndarray, extra: tuple[tuple[str, float], ...] = ()) -> dict[str, float]:
    """max, the percentiles (llama-perplexity's list), median and min of `values`."""
    ordered = np.sort(values)
    at = {name: float(np.percentile(ordered, 100 * f)) for name, f in (*PERCENTILES, *extra, *LOWER)}
    return {"max": float(ordered[-1])} | at | {"median": float(np.median(ordered)), "min": float(ordered[0])}


@dataclass(frozen=True)
class Perplexity:
    """exp of the mean negative log-likelihood of the next tokens, with its uncertainty (llama-perplexity's)."""

    value: float
    err: float
    positions: int

    @staticmethod
    def of(nll: np.ndarray) -> Perplexity:
        mean, err = mean_and_error(nll)
        value = math.exp(mean)
        return Perplexity(value, value * err, int(nll.size))

    def to_dict(self) -> dict[str, Any]:
        return {"ppl": self.value, "ppl_err": self.err, "positions": self.positions}


def nmse_verdict(nmse: float) -> str:
    """llama.cpp model-conversion's words for an NMSE."""
    if nmse == 0:
        return "perfect match"
    for bound, words in NMSE_BANDS:
        if nmse < bound:
            return words
    return "very poor match (worse than noise)"


@dataclass(frozen=True)
class Divergence:
    """B against A over the scored positions: every figure of the module's note, as --json gives them."""

    scored: Scored

    def to_dict(self) -> dict[str, Any]:
        s = self.scored
        kld_mean, kld_err = mean_and_error(s.kld)
        dp_mean, dp_err = mean_and_error(s.delta_p)
        square_mean, square_err = mean_and_error(s.delta_p**2)
        rms = math.sqrt(square_mean)
        ppl_a, ppl_b = Perplexity.of(s.nll_a), Perplexity.of(s.nll_b)
        (ma, ea), (mb, eb) = mean_and_error(s.nll_a), mean_and_error(s.nll_b)
        ln_ratio, ln_err = mb - ma, math.sqrt(max(ea * ea + eb * eb - 2 * covariance(s.nll_b, s.nll_a), 0.0))
        count = s.kld.size
        same = float(s.same_top.mean())
        squared, total, total2, n, largest = s.logit_sums
        variance = total2 / n - (total / n) ** 2
        nmse = squared / n / variance if variance > 0 else (math.inf if squared > 0 else 0.0)
        return {
            "positions": count,
            "kld": {"mean": kld_mean, "mean_err": kld_err} | spread(s.kld),
            "delta_p": {"mean": dp_mean, "mean_err": dp_err}
            | spread(s.delta_p, QUARTILES)
            | {"rms": rms, "rms_err": 0.5 / rms * square_err if rms > 0 else 0.0},
            "same_top_p": same,
            "same_top_p_err": math.sqrt(same * (1 - same) / (count - 1)) if count > 1 else 0.0,
            "ppl": {
                "a": ppl_a.value,
                "a_err": ppl_a.err,
                "b": ppl_b.value,
                "b_err": ppl_b.err,
                "ratio": math.exp(ln_ratio),
                "ratio_err": math.exp(ln_ratio) * ln_err,
                "ln_ratio_mean": ln_ratio,
                "ln_ratio_mean_err": ln_err,
            },
            "logits": {
                "max_abs_diff": largest,
                "nmse": nmse if math.isfinite(nmse) else None,  # (inf: A's logits all equal, B's not)
                "nmse_db": 10 * math.log10(nmse) if 0 < nmse < math.inf else None,
                "verdict": nmse_verdict(nmse),
            },
        }


__all__ = [
    "Chunk",
    "Divergence",
    "Perplexity",
    "Scored",
    "chunks",
    "log_softmax",
    "score_scratch",
    "mean_and_error",
    "next_token_nll",
    "nmse_verdict",
]
