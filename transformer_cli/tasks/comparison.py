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

from ..analysis.divergence import Divergence, Scored
from ..errors import ExitCode, SpecError
from ..model.transformer import Transformer
from .perplexity import Held, scored_stream, scored_words

if TYPE_CHECKING:
    from ..analysis.modes import Mode
    from ..spec.definition import Spec

BLOCK_TOL = 1e-3  # --block-tol's default: the relative error of a block's residual stream that counts as parting
SUBLAYERS = {"block": "residual", "attention": "attention", "feedforward": "feedforward"}  # tap -> --json key


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
    blocks: list[dict[str, Any]] | None = None  # each block's relative errors (None: the blocks differ in N or d)
    block_tol: float = BLOCK_TOL

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
        }
        return self.figures | blocks | where | {"thresholds": given, "broken": self.broken, "weights_modes": modes}


def compare(
    spec_a: Spec,
    held_a: Held,
    spec_b: Spec,
    held_b: Held,
    ids: Any,
    ctx: int | None = None,
    dtype: str = "float32",
    max_memory: str | None = None,
    thresholds: Thresholds | None = None,
    where: str = "the input",
    block_tol: float = BLOCK_TOL,
) -> Comparison:
    """B (`spec_b`, its weights `held_b` as the memory allows) against A over `ids` (see the module's note)."""
    if spec_a.V != spec_b.V:
        raise SpecError(f"A has V = {spec_a.V}, B has V = {spec_b.V}: compare needs one vocabulary")
    specs = {"A": spec_a, "B": spec_b}
    stream, parts = scored_stream(specs, ids, ctx, where, "compare takes causal language models")
    length = parts[0].stop - parts[0].start
    again = len(parts) > 1
    net, mode_a = held_a(dtype, 1, length, max_memory, "A's passes", again=again)
    assert isinstance(net, Transformer)  # (one stack: checked above)
    blocks = Blocks() if (spec_a.N, spec_a.d) == (spec_b.N, spec_b.d) else None
    logits_a = []
    for k, p in enumerate(parts):
        taps = blocks.keep(k) if blocks is not None else None
        logits_a.append(net.forward(stream[p.start : p.stop][None], taps=taps)[0])
    del net  # (A let go before B is made)
    net, mode_b = held_b(dtype, 1, length, max_memory, "B's passes", again=again)
    assert isinstance(net, Transformer)
    scored = []
    for k, (part, a) in enumerate(zip(parts, logits_a, strict=True)):
        piece = stream[part.start : part.stop]
        taps = blocks.against(k) if blocks is not None else None
        scored.append(Scored.of(a, net.forward(piece[None], taps=taps)[0], piece, part.first))
    joined = Divergence(Scored.joined(scored))
    rows = blocks.rows(spec_a.N) if blocks is not None else None
    modes = (mode_a, mode_b)
    return Comparison(joined, int(stream.size), ctx, len(parts), modes, thresholds or Thresholds(), rows, block_tol)


__all__ = ["Comparison", "Thresholds", "compare"]
