"""The seed's feedforward network: W2 act(W1 X + b1 1^T) + b2 1^T, with W1 (r, d) and W2 (d, r)."""

from __future__ import annotations

from .base import Component, Pairs, Tensor, Term

ACTIVATION_PER_ENTRY = {"relu": 1, "gelu": 9}  # gelu: the tanh form, tanh counted as 1


class FeedForward(Component):
    def tensors(self, prefix: str) -> list[Tensor]:
        d, r = self.spec.d, self.spec.r
        p = prefix + "ff."
        return [Tensor(p + "W1", (r, d), "feedforward"), Tensor(p + "b1", (r,), "feedforward"),
                Tensor(p + "W2", (d, r), "feedforward"), Tensor(p + "b2", (d,), "feedforward")]  # fmt: skip

    def terms(self) -> list[Term]:
        d, r = self.spec.d, self.spec.r
        return [Term("2rd + r + d", 2 * r * d + r + d, "block", seed=True)]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        d, r, N = self.spec.d, self.spec.r, self.spec.N
        per_token = 2 * 2 * r * d + r + d + ACTIVATION_PER_ENTRY[self.spec.activation] * r
        return {"feedforward": N * per_token * b * n}

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"linear layers": self.spec.N * 2 * self.spec.r * self.spec.d * b * n}


class Residuals(Component):
    """The two residual additions of each block: X + Sublayer(X). No parameters."""

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"residuals": self.spec.N * 2 * self.spec.d * b * n}
