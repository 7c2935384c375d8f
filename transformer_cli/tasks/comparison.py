"""`tfm compare A B` (issue 43): is B still model A? B's next-token distributions against A's over the same token
stream, llama-perplexity's figures (analysis/divergence.py), and thresholds a CI job sets.

The two are never held at once: A runs over every chunk first and only its logits are kept (V x tokens in its
dtype); A is let go, then B runs chunk by chunk and each chunk is scored against A's logits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..analysis.divergence import Divergence, Scored
from ..errors import ExitCode, SpecError
from ..model.transformer import Transformer
from .perplexity import scored_stream, scored_words

if TYPE_CHECKING:
    from ..analysis.modes import Mode
    from ..spec.definition import Spec

Held = Callable[..., tuple[Any, "Mode | None"]]  # Model.held: (dtype, batch, length, max_memory, what, again)


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
        return self.figures | where | {"thresholds": given, "broken": self.broken, "weights_modes": modes}


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
    logits_a = [net.forward(stream[p.start : p.stop][None])[0] for p in parts]
    del net  # (A let go before B is made)
    net, mode_b = held_b(dtype, 1, length, max_memory, "B's passes", again=again)
    assert isinstance(net, Transformer)
    scored = []
    for part, a in zip(parts, logits_a, strict=True):
        piece = stream[part.start : part.stop]
        scored.append(Scored.of(a, net.forward(piece[None])[0], piece, part.first))
    joined = Divergence(Scored.joined(scored))
    return Comparison(joined, int(stream.size), ctx, len(parts), (mode_a, mode_b), thresholds or Thresholds())


__all__ = ["Comparison", "Thresholds", "compare"]
