"""`tfm compare A B` (issue 43): is B still model A? B's next-token distributions against A's over the same token
stream, llama-perplexity's figures (analysis/divergence.py), and thresholds a CI job sets.

The two are never held at once: A runs over every chunk first and only its logits (V x tokens in its dtype) and,
where the two have the same blocks (N and d), each block's outputs (3 N d x tokens) are kept; A is let go, then B
runs chunk by chunk, each chunk scored against A's logits and each block's outputs against A's: the relative error
||B - A|| / ||A|| of the residual stream after the block and of its attention's and feedforward's outputs, over
every token run. The first block whose residual stream parts by more than BLOCK_TOL (--block-tol) is named: where
a conversion or a quantisation starts to differ (a float32 conversion of a float32 model parts by about 1e-7 a
block, a q8_0 one by 1e-3 to 1e-2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis.divergence import Chunk, Divergence, Scored, score_scratch
from ..analysis.limits import memory_limits
from ..analysis.memory import MemoryLimitError
from ..analysis.units import human
from ..errors import ExitCode, SpecError
from ..model.transformer import Transformer
from .perplexity import scored_stream, scored_words

if TYPE_CHECKING:
    from ..analysis.modes import Mode
    from ..spec.definition import Spec

BLOCK_TOL = 1e-3  # --block-tol's default: the relative error of a block's residual stream that counts as parting
SUBLAYERS = {"block": "residual", "attention": "attention", "feedforward": "feedforward"}  # tap -> --json key
KEPT = "A's logits and block outputs kept"  # what compare holds beside each pass, in a refusal's words


class Blocks:
    """Each block's outputs of A kept per chunk, and B's summed against them: sum (B - A)^2 and sum A^2 by (block,
    tap name), over every token run."""

    def __init__(self) -> None:
        self.kept: dict[tuple[int, int, str], np.ndarray] = {}
        self.sums: dict[tuple[int, str], list[float]] = {}

    def keep(self, chunk: int) -> Callable[[int, str, np.ndarray], None]:
        def heard(i: int, name: str, Z: np.ndarray) -> None:
            if name in SUBLAYERS:
                self.kept[chunk, i, name] = Z.copy()

        return heard

    def against(self, chunk: int) -> Callable[[int, str, np.ndarray], None]:
        def heard(i: int, name: str, Z: np.ndarray) -> None:
            if name in SUBLAYERS:
                a = self.kept.pop((chunk, i, name)).astype(np.float64)
                sums = self.sums.setdefault((i, name), [0.0, 0.0])
                sums[0] += float(((Z - a) ** 2).sum())
                sums[1] += float((a**2).sum())

        return heard

    def rows(self, blocks: int) -> list[dict[str, Any]]:
        """Each block's relative errors, by --json key."""
        rows = []
        for i in range(blocks):
            row: dict[str, Any] = {"block": i}
            for name, key in SUBLAYERS.items():
                if (i, name) in self.sums:
                    diff, base = self.sums[i, name]
                    row[key] = math.sqrt(diff / base) if base > 0 else (0.0 if diff == 0 else math.inf)
            rows.append(row)
        return rows


@dataclass(frozen=True)
class Thresholds:
    """What a CI job requires of B: the mean KL divergence at most `max_kld`, the fraction of positions with the
    same top token at least `min_same_top_p`, the logits' NMSE at most `max_nmse` (None: not required)."""

    max_kld: float | None = None
    min_same_top_p: float | None = None
    max_nmse: float | None = None

    def broken(self, figures: dict[str, Any]) -> dict[str, str]:
        """The thresholds the figures break, by option name, in words ("mean KLD 0.031 > --max-kld 0.01")."""
        found = {}
        kld, same, nmse = figures["kld"]["mean"], figures["same_top_p"], figures["logits"]["nmse"]
        if self.max_kld is not None and kld > self.max_kld:
            found["max_kld"] = f"mean KLD {kld:.6g} > --max-kld {self.max_kld:g}"
        if self.min_same_top_p is not None and same < self.min_same_top_p:
            found["min_same_top_p"] = f"same top p {same:.6g} < --min-same-top-p {self.min_same_top_p:g}"
        if self.max_nmse is not None and (nmse is None or nmse > self.max_nmse):
            shown = "not finite" if nmse is None else f"{nmse:.6g}"
            found["max_nmse"] = f"logits' NMSE {shown} > --max-nmse {self.max_nmse:g}"
        return found


@dataclass(frozen=True)
class Comparison:
    """B against A: the figures, the chunking, each model's weights mode, and the thresholds broken."""

    divergence: Divergence
    tokens: int
    ctx: int | None
    chunks: int
    modes: tuple[Mode | None, Mode | None]
    thresholds: Thresholds = field(default_factory=Thresholds)
    blocks: list[dict[str, Any]] | None = None  # each block's relative errors (None: not compared)
    block_tol: float = BLOCK_TOL
    blocks_note: str | None = None  # why blocks were not compared, when the memory was the reason

    @property
    def first_divergent_block(self) -> int | None:
        """The first block whose residual stream parts from A's by more than block_tol, or None."""
        for row in self.blocks or []:
            if row.get("residual", 0.0) > self.block_tol:
                return int(row["block"])
        return None

    @property
    def figures(self) -> dict[str, Any]:
        return self.divergence.to_dict()

    @property
    def broken(self) -> dict[str, str]:
        return self.thresholds.broken(self.figures)

    @property
    def exit_code(self) -> int:
        """1 when a threshold is broken, else 0."""
        return int(ExitCode.VIOLATED if self.broken else ExitCode.OK)

    @property
    def scored(self) -> str:
        return scored_words(self.ctx)

    def to_dict(self) -> dict[str, Any]:
        modes = {k: m.to_dict() if m is not None else None for k, m in zip("ab", self.modes, strict=True)}
        given = {k: v for k, v in vars(self.thresholds).items()}
        where = {"tokens": self.tokens, "ctx": self.ctx, "chunks": self.chunks, "scored": self.scored}
        blocks = {
            "blocks": self.blocks,
            "block_tol": self.block_tol,
            "first_divergent_block": self.first_divergent_block,
            "blocks_note": self.blocks_note,
        }
        return self.figures | blocks | where | {"thresholds": given, "broken": self.broken, "weights_modes": modes}


def compare(
    a: Any,
    b: Any,
    ids: Any,
    ctx: int | None = None,
    dtype: str = "float32",
    max_memory: str | None = None,
    thresholds: Thresholds | None = None,
    where: str = "the input",
    block_tol: float = BLOCK_TOL,
) -> Comparison:
    """B against A over `ids` (see the module's note); `a` and `b` are the library's Models (their spec, and their
    weights held as the memory allows: Model.mode, Model.held). Both are checked to fit before A runs."""
    spec_a, spec_b = a.spec, b.spec
    if spec_a.V != spec_b.V:
        raise SpecError(f"A has V = {spec_a.V}, B has V = {spec_b.V}: compare needs one vocabulary")
    stream, parts = scored_stream({"A": spec_a, "B": spec_b}, ids, ctx, where, "compare takes causal language models")
    length = parts[0].stop - parts[0].start
    again = len(parts) > 1
    logits, taps = kept_bytes(spec_a, spec_b, parts, dtype)
    limits = memory_limits()  # (as before anything is kept: what is kept is counted in `beside` instead)

    def modes(kept: int) -> None:
        for model, name in ((a, "A's passes"), (b, "B's passes")):
            model.mode(dtype, 1, length, max_memory, name, beside=(kept, KEPT), limits=limits)

    note = None
    try:
        modes(logits + taps)
    except MemoryLimitError:
        if not taps:
            raise
        modes(logits)  # (refused here when even A's logits do not fit)
        note = f"blocks not compared: A's block outputs over {stream.size} tokens would need {human(taps)} more"
        taps = 0
    blocks = Blocks() if taps else None
    beside = (logits + taps, KEPT)
    net, mode_a = a.held(dtype, 1, length, max_memory, "A's passes", again, beside=beside, limits=limits)
    assert isinstance(net, Transformer)  # (one stack: checked above)
    logits_a: list[np.ndarray | None] = []
    for k, p in enumerate(parts):
        heard = blocks.keep(k) if blocks is not None else None
        logits_a.append(net.forward(stream[p.start : p.stop][None], taps=heard)[0][:, p.first : -1].copy())
    del net  # (A let go before B is made)
    net, mode_b = b.held(dtype, 1, length, max_memory, "B's passes", again, beside=beside, limits=limits)
    assert isinstance(net, Transformer)
    scored = []
    for k, part in enumerate(parts):
        kept, logits_a[k] = logits_a[k], None  # (each chunk's kept logits let go once scored)
        assert kept is not None
        piece = stream[part.start : part.stop]
        heard = blocks.against(k) if blocks is not None else None
        logits_b = net.forward(piece[None], taps=heard)[0][:, part.first : -1]
        scored.append(Scored.columns(kept, logits_b, piece[part.first + 1 :]))
    joined = Divergence(Scored.joined(scored))
    rows = blocks.rows(spec_a.N) if blocks is not None else None
    return Comparison(
        joined, int(stream.size), ctx, len(parts), (mode_a, mode_b), thresholds or Thresholds(), rows, block_tol, note
    )


def kept_bytes(spec_a: Spec, spec_b: Spec, parts: list[Chunk], dtype: str) -> tuple[int, int]:
    """What compare keeps of A through both models' passes: its logits at the positions scored (V x positions)
    with the scoring's scratch, and, for the same blocks (N and d), the three outputs of each block over every token
    run (0 otherwise), in the compute dtype."""
    size, vocabulary = np.dtype(dtype).itemsize, spec_a.V or 0  # (a vocabulary: checked by scored_stream)
    positions = [p.stop - p.start - 1 - p.first for p in parts]
    run = sum(p.stop - p.start for p in parts)
    logits = size * vocabulary * sum(positions) + score_scratch(vocabulary, max(positions))
    same = (spec_a.N, spec_a.d) == (spec_b.N, spec_b.d)
    return logits, size * len(SUBLAYERS) * spec_a.N * spec_a.d * run if same else 0


__all__ = ["Comparison", "Thresholds", "compare"]
