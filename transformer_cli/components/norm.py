"""Layer norm over the d entries of each column, placed before (pre) or after (post) each sublayer.

Each block has norm1 (around attention) and norm2 (around the feedforward), each a gamma and a beta of size d;
pre-norm models add a final norm after the last block.
"""

from __future__ import annotations

from .base import Component, Pairs, Tensor, Term

NORM_PER_ENTRY = 7  # mean, subtract, square, variance, scale, gamma, beta


class NoNorm(Component):
    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"norms": 0}


class LayerNorm(Component):
    def tensors(self, prefix: str) -> list[Tensor]:
        d = self.spec.d
        return [
            Tensor(prefix + f"{ln}.{g}", (d,), "layer norm") for ln in ("norm1", "norm2") for g in ("gamma", "beta")
        ]

    def terms(self) -> list[Term]:
        return [Term("4d", 4 * self.spec.d, "block")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"norms": 2 * self.spec.N * NORM_PER_ENTRY * self.spec.d * b * n}


class FinalNorm(Component):
    """Pre-norm's layer norm after the last block."""

    where = "output"

    def tensors(self, prefix: str) -> list[Tensor]:
        return [Tensor(f"final_norm.{g}", (self.spec.d,), "final norm") for g in ("gamma", "beta")]

    def terms(self) -> list[Term]:
        return [Term("2d", 2 * self.spec.d, "model")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"norms": NORM_PER_ENTRY * self.spec.d * b * n}


NORMS = {"none": NoNorm, "pre": LayerNorm, "post": LayerNorm}
FINAL_NORMS = {"none": Component, "pre": FinalNorm, "post": Component}
