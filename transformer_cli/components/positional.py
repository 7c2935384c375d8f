"""Positional encodings added to X before block 1: none, sinusoidal (fixed) or learned (positional.P)."""

from __future__ import annotations

from .base import Component, Pairs, Tensor, Term


class NoPositions(Component):
    where = "input"

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"positions": 0}


class Sinusoidal(Component):
    """PE[2i, t] = sin(t / 10000^(2i/d)), PE[2i+1, t] = cos(...): no parameters."""

    where = "input"

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"positions": self.spec.d * b * n}

    def breaks_equivariance(self) -> str | None:
        return "sinusoidal positional encoding"


class Learned(Sinusoidal):
    """A learned (d, max_len) matrix P, its first n columns added to X."""

    def tensors(self, prefix: str) -> list[Tensor]:
        return [Tensor("positional.P", (self.spec.d, self.spec.max_len or 0), "positional")]

    def terms(self) -> list[Term]:
        return [Term("d*max_len", self.spec.d * (self.spec.max_len or 0), "model")]

    def breaks_equivariance(self) -> str | None:
        return "learned positional encoding"


POSITIONALS = {"none": NoPositions, "sinusoidal": Sinusoidal, "learned": Learned}
