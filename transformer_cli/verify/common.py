"""What every check shares: its result type, verdicts, tolerances, and seeded inputs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..analysis.limits import Limit, memory_limits
from ..analysis.memory import MemoryEstimate, check_memory
from ..analysis.modes import Mode, build, choose_mode, mode_estimates, stored_form
from ..components.held import Held
from ..errors import ExitCode, TfmError
from ..io.weights import Weights, init_weights
from ..model.transformer import Transformer
from ..spec.choices import LEARNED
from ..spec.definition import Spec

CONTROL_FACTOR = 1000  # a control must miss the property by this many tolerances, or the check proves nothing
TOL_C = 10  # the least tolerance: TOL_C * eps(dtype) * sqrt(n) * N, relative to max|T(X)|
# The tolerance is at least FLOOR_FACTOR x the rounding noise measured on the check's own inputs: two passes that
# are equal in exact arithmetic differ by at most the sum of their two roundings (2x), and 2x more for margin.
FLOOR_FACTOR = 4
KEPT = "the check's own arrays and the allocator's slack"  # what a check holds beside its passes, in a refusal
# A check's passes follow one another: the allocator keeps some of what one frees (a process's RSS measured up to
# 1.11x the peak NumPy traced, and a few MiB of threads' arenas; the same run varied by 10 % between runs and
# reached 1.2x the traced peak in a loaded CI run), so a check's figure adds this much.
SLACK_BYTES, SLACK_PART = 16 << 20, 4
TOL_RULE = f"max({TOL_C} eps sqrt(n) N, {FLOOR_FACTOR} x the rounding noise measured on the inputs compared)"


def default_tol(dtype: np.dtype, n: int, N: int) -> float:
    """The least relative tolerance for comparing two forward passes: 10 * eps * sqrt(n) * N."""
    return TOL_C * float(np.finfo(dtype).eps) * math.sqrt(max(n, 1)) * max(N, 1)


def rel_err(a: np.ndarray, b: np.ndarray, ref: np.ndarray) -> float:
    """max|a - b| / max|ref|, in float64; NaN if anything is not finite."""
    a, b, ref = (np.asarray(x, dtype=np.float64) for x in (a, b, ref))
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))) or not math.isfinite(scale):
        return math.nan
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    return diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf)


def within(err: float, tol: float) -> bool:
    """err <= tol, where NaN is never within (so a NaN is a failure, not a pass)."""
    return bool(err <= tol)


@dataclass
class CheckResult:
    """The outcome of one property check: prediction, observation, the trials behind it, and the verdict."""

    name: str  # e.g. "equivariance"
    title: str  # the property in words
    expected: bool  # the outcome that counts as success: True = property holds
    predicted: bool | None  # what the theory predicts for this spec (None: no prediction)
    observed: bool | None  # True holds, False breaks, None inconclusive
    observation: str  # one line: what was seen
    reason: str = ""  # why the theory predicts what it does, or why the check was inconclusive
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)  # long listings for --json only

    @property
    def exit_code(self) -> ExitCode:
        if self.observed is None:
            return ExitCode.INCONCLUSIVE
        return ExitCode.OK if self.observed == self.expected else ExitCode.VIOLATED

    @property
    def verdict(self) -> str:
        return {ExitCode.OK: "PASS", ExitCode.VIOLATED: "FAIL", ExitCode.INCONCLUSIVE: "INCONCLUSIVE"}[self.exit_code]

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.name,
            "property": self.title,
            "predicted": _word(self.predicted),
            "expected": _word(self.expected),
            "observed": _word(self.observed),
            "observation": self.observation,
            "reason": self.reason,
            "verdict": self.verdict,
            "exit_code": int(self.exit_code),
            "agrees": None if self.observed is None else self.observed == self.expected,
            "summary": self.summary,
            "trials": [dict(zip(map(snake_case, self.columns), row, strict=True)) for row in self.rows],
        } | self.details


@dataclass
class Verification:
    """`tfm verify`: every check against what the theory predicts, with where the spec and weights came from and
    the dtype the checks ran in; to_dict() is `tfm verify --json` (without the spec). Iterating it gives the
    checks in the order they ran."""

    checks: list[CheckResult]
    source: str  # the spec's: a path, "built-in default", or "FILE metadata"
    weights: str  # the checkpoint's path, or "seeded init (seed S)"
    dtype: str
    mode: Mode | None = None  # how the weights were held, and why (None: two stacks)

    @property
    def exit_code(self) -> ExitCode:
        """The command's: 0 when every check agrees with the theory, else the worst check's."""
        return overall_exit(self.checks)

    def __iter__(self) -> Iterator[CheckResult]:
        return iter(self.checks)

    def __len__(self) -> int:
        return len(self.checks)

    def __getitem__(self, index: int) -> CheckResult:
        return self.checks[index]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "weights": self.weights,
            "dtype": self.dtype,
            "exit_code": int(self.exit_code),
            "checks": [c.to_dict() for c in self.checks],
            "weights_mode": self.mode.to_dict() if self.mode is not None else None,
        }


def overall_exit(results: list[CheckResult]) -> ExitCode:
    """0 if every check agrees with its expectation, 1 if any is violated, else 3 if any is inconclusive."""
    codes = {r.exit_code for r in results}
    for code in (ExitCode.VIOLATED, ExitCode.INCONCLUSIVE):
        if code in codes:
            return code
    return ExitCode.OK


def snake_case(column: str) -> str:
    """A table header as a JSON key: 'rel error' -> 'rel_error', 'band (+/-)' -> 'band'."""
    return re.sub(r"[^0-9a-z]+", "_", column.lower()).strip("_")


def _word(value: bool | None) -> str:
    return {True: "holds", False: "breaks", None: "inconclusive"}[value]


def resolve_expect(expect: str, predicted: bool | None) -> bool:
    """`holds`, `breaks` or `theory` (the prediction for the spec) -> the outcome that means success."""
    if expect == "theory":
        return True if predicted is None else predicted
    if expect not in ("holds", "breaks"):
        raise TfmError(f"--expect: got '{expect}', expected holds, breaks or theory")
    return expect == "holds"


@dataclass
class Setup:
    """The model under test and the random source of a check.

    `tol` is the user's --tol, or None: then each check sets its tolerance from the rounding noise of this
    model on its own input (`tolerance`), never below `base_tol` (10 eps sqrt(n) N).
    """

    spec: Spec
    model: Transformer
    rng: np.random.Generator
    n: int
    tol: float | None
    max_memory: str | None = None
    reference: Transformer | None = None  # the same weights in float64, for a float32 model's rounding noise
    held: Held | None = None  # the bytes a lazily read file holds per tensor (None: weights in memory)
    mode: Mode | None = None  # how the weights are held (analysis/modes.py)
    # the memory limits as read before the model was built: the checks' estimates count its weights, which the room
    # left once they are allocated no longer holds (None: read at each check)
    limits: list[Limit] | None = None

    @property
    def base_tol(self) -> float:
        return self.tol if self.tol is not None else default_tol(self.model.dtype, self.n, self.spec.N)

    def rounding_noise(self, X: np.ndarray, Y: np.ndarray) -> float:
        """How far rounding alone moves the output Y = model(X) (one input or a batch), relative to max|Y|.

        float32: Y against the same pass in float64 (its rounding is 2^29 times smaller). float64: there is
        nothing more exact to compare with, so Y against the pass on X with every entry moved by up to one
        rounding step (x (1 + eps u), u uniform in [-1, 1]): what the model makes of noise at that level.
        """
        if self.reference is not None:
            return rel_err(Y, self.reference(X), Y)
        eps = float(np.finfo(self.model.dtype).eps)
        nudged = X * (1.0 + eps * self.rng.uniform(-1.0, 1.0, X.shape))
        return rel_err(Y, self.model(nudged), Y)

    def tolerance(self, X: np.ndarray, Y: np.ndarray) -> tuple[float, dict[str, Any]]:
        """The tolerance for comparing the passes Y = model(X) of a check's inputs X, and how it was set."""
        if self.tol is not None:
            return self.tol, {"tolerance_rule": "--tol"}
        noise = self.rounding_noise(X, Y)
        tol = max(self.base_tol, FLOOR_FACTOR * noise) if math.isfinite(noise) else self.base_tol
        return tol, {"tolerance_rule": TOL_RULE, "rounding_noise": noise}

    def estimate(self, batch: int, dtype: np.dtype, n: int | None = None) -> MemoryEstimate:
        """The model's pass over `batch` sequences of n (default: the setup's) in `dtype`, weights included, as the
        setup holds them."""
        mode = self.mode.name if self.mode is not None else "resident"
        return mode_estimates(self.spec, batch, self.n if n is None else n, dtype, self.held)[mode]

    @property
    def column_bytes(self) -> int:
        """One float64 input sequence (d, n), as a check draws it."""
        return 8 * self.spec.input_width * self.n

    @property
    def output_bytes(self) -> int:
        """One sequence's output in the model's dtype: (d, n), or logits (V, n)."""
        return self.model.dtype.itemsize * max(self.spec.d, self.spec.V or 0) * self.n

    def holding(self, held: int) -> MemoryEstimate:
        """No pass running: the weights (the model's, tfm's as loaded, the float64 twin's) and `held` bytes."""
        return replace(self.need(1, held=held, noise=0), activations=0, attention=0, feedforward=0, input=0)

    def need(self, batch: int, held: int = 0, noise: int | None = None) -> MemoryEstimate:
        """Peak of a check's pass over `batch` sequences with `held` bytes of the check's own beside it, and of the
        pass that measures its rounding noise (over `noise` sequences, default the batch; 0: none; none with --tol:
        float64, the twin's or the model's own on nudged inputs) while the first pass's output is held."""
        main = self.estimate(batch, self.model.dtype)
        twin = 0  # the float64 twin's weights: tfm's float64 copies as loaded, or its own from a lazily read file
        if self.reference is not None:
            alone = self.estimate(1, np.dtype(np.float64))
            twin = alone.loaded if self.held is None else alone.weights
        peaks = [replace(main, output=main.output + held + twin)]
        k = batch if noise is None else noise
        if self.tol is None and k:
            second = self.estimate(k, np.dtype(np.float64))
            beside = main.weights if self.reference is not None else 0  # the model's weights beside its float64 twin
            first = batch * self.output_bytes + k * self.column_bytes  # the first pass's output, the nudged inputs
            peaks.append(replace(second, weights=second.weights + beside, output=held + first))
        peak = max(peaks, key=lambda e: e.total)
        return replace(peak, output=peak.output + SLACK_BYTES + peak.total // SLACK_PART, output_is=KEPT)

    def afford(self, name: str, need: MemoryEstimate) -> None:
        """Refuse, before allocating, a check whose peak (`need`) would not fit in memory."""
        check_memory(need, self.max_memory, f"the {name} check at n = {self.n}", limits=self.limits)

    def require(self, batch: int) -> None:
        """Refuse, before allocating, a forward pass over `batch` sequences that would not fit in memory."""
        what = f"a check over {batch} sequences of n = {self.n}"
        check_memory(self.need(batch, noise=0), self.max_memory, what, limits=self.limits)

    def gaussian(self, *shape: int) -> np.ndarray:
        """Standard normal inputs in float64 (the model casts them to its dtype)."""
        return self.rng.standard_normal(shape)


@dataclass(frozen=True)
class Unbuilt:
    """A model not built yet, for a check's memory need, which asks only its dtype."""

    dtype: np.dtype


def make_setup(
    spec: Spec,
    weights: Weights | None,
    seed: int,
    dtype: str,
    n: int | None,
    tol: float | None,
    max_memory: str | None = None,
    needs: Callable[[Setup], list[MemoryEstimate]] | None = None,
) -> Setup:
    """Build the model (seeded weights unless given) and pick n and the tolerance. A lazily read file's weights are
    held in the first mode (analysis/modes.py) in which the model, its float64 twin and the checks' peaks (`needs`
    of a setup in that mode, before any model is built) fit."""
    longest = spec.max_len if spec.positional in LEARNED and spec.max_len else None
    if n is None:
        n = min(16, longest) if longest else 16
    if n < 1:
        raise TfmError(f"--seq-len: got {n}, expected a positive integer")
    if longest is not None and n > longest:
        raise TfmError(f"--seq-len: got {n}, expected at most max_len = {spec.max_len} (learned positions)")
    if tol is not None and not (tol > 0 and math.isfinite(tol)):
        raise TfmError(f"--tol: got {tol}, expected a positive number")
    np_dtype = np.dtype(dtype)
    rng = np.random.default_rng([seed, 1])  # a stream of its own, apart from the weights'
    held = stored_form(weights)  # a lazily read file's stored bytes: the model may hold them as stored, or stream
    label = held.label if held is not None else ""
    twins = np_dtype != np.float64 and tol is None  # a float64 twin measures float32's rounding
    f64 = np.dtype(np.float64)
    estimates = mode_estimates(spec, 1, n, np_dtype, held)
    if held is not None:  # the worst of the model with its twin and the checks, in each mode
        alone = mode_estimates(spec, 1, n, f64, held)
        twin_model = Unbuilt(f64) if twins else None
        for name, estimate in estimates.items():
            if twins:
                estimate = replace(estimate, output=alone[name].weights, output_is="its float64 twin")
            probe = Setup(spec, Unbuilt(np_dtype), rng, n, tol, max_memory, twin_model, held)  # type: ignore[arg-type]
            probe.mode = Mode(name, estimate, "")
            estimates[name] = max([estimate, *(needs(probe) if needs else [])], key=lambda e: e.total)
    limits = memory_limits()  # before the model is built (its weights are in every estimate below)
    mode = choose_mode(spec, estimates, np_dtype, max_memory, "this model", label)
    weights = weights if weights is not None else init_weights(spec, seed)
    model = build(spec, weights, np_dtype, mode, mode.keep_up_to(spec.N))  # checks run it again and again
    reference = None
    if twins:
        twin = mode_estimates(spec, 1, n, f64, held)[mode.name]
        check_memory(twin, max_memory, "this model's float64 reference", limits=limits)
        reference = build(spec, weights, f64, mode)
    return Setup(spec, model, rng, n, tol, max_memory, reference, held, mode, limits)
