"""A mixture of experts in place of the feedforward (Mixtral): E copies of the feedforward and a router.

The router W_r (E, d) scores each column; the k experts with the highest scores process it, and their outputs
are summed with weights softmax over those k scores (the same as a softmax over all E renormalised on the
chosen k). Each expert is the spec's feedforward (plain or gated), its tensors stacked on a leading axis E.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import numpy as np

from .attention import SOFTMAX_PER_SCORE
from .base import Component, Pairs, Tensor, Term
from .feedforward import FEEDFORWARDS, FeedForward

Get = Callable[[str], np.ndarray]


class Experts(Component):
    label = "experts"

    def __init__(self, spec, expert: FeedForward):
        super().__init__(spec)
        self.expert = expert
        self.E: int = spec.E
        self.k: int = spec.k

    def tensors(self, prefix: str) -> list[Tensor]:
        router = Tensor(prefix + "ff.router", (self.E, self.spec.d), "router")
        return [router] + [Tensor(t.name, (self.E, *t.shape), self.label) for t in self.expert.tensors(prefix)]

    def terms(self) -> list[Term]:
        out = [Term(f"E({t.formula})", self.E * t.value, t.scope, t.seed) for t in self.expert.terms()]
        return out + [Term("Ed", self.E * self.spec.d, "block")]

    def per_expert(self) -> int:
        return sum(t.value for t in self.expert.terms())

    def inactive(self) -> int:
        """Parameters a token does not use: the E - k experts not chosen for it, in every block."""
        return self.spec.N * (self.E - self.k) * self.per_expert()

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        ff = {name: self.k * v for name, v in self.expert.flops(b, n, pairs).items()}  # k experts per token
        combine = 2 * self.k * self.spec.d  # weight and add each chosen expert's output
        router = 2 * self.E * self.spec.d + SOFTMAX_PER_SCORE * self.k  # scores, then a softmax over the chosen k
        return ff | {"router": self.spec.N * (router + combine) * b * n}

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        inner = self.expert.multiply_adds(b, n, pairs)["linear layers"]
        return {"linear layers": self.k * inner + self.spec.N * self.E * self.spec.d * b * n}

    def held_per_token(self) -> int:
        return self.expert.held_per_token() + self.E + self.spec.d  # an expert's hidden layer, scores, the sum

    def prepare(self, get: Get) -> dict:
        """Each expert's stacked weights on a leading axis E, and the router."""
        experts = [self.expert.prepare(_expert(get, e)) for e in range(self.E)]
        stacked = {key: None if experts[0][key] is None else np.stack([x[key] for x in experts]) for key in experts[0]}
        return stacked | {"router": get("ff.router")}

    def route(self, router: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The chosen experts (k, T) of each of the T columns of X (d, T), and their weights (k, T)."""
        scores = np.matmul(router, X)  # (E, T)
        chosen = np.argsort(-scores, axis=0, kind="stable")[: self.k]  # highest first; ties to the lower index
        top = np.take_along_axis(scores, chosen, axis=0)
        weights = np.exp(top - top[:1])
        weights /= weights.sum(axis=0, keepdims=True)
        return chosen, weights

    def apply(self, blk, X: np.ndarray) -> np.ndarray:
        """sum over the k chosen experts of weight * expert(x), column by column: (d, b, n) -> (d, b, n)."""
        d, b, n = X.shape
        flat = X.reshape(d, b * n)
        chosen, weights = self.route(blk.router, flat)
        out = np.zeros_like(flat)
        for e in range(self.E):
            hit = chosen == e  # (k, T): where expert e is among a column's chosen
            columns = np.flatnonzero(hit.any(axis=0))
            if columns.size == 0:
                continue
            params = SimpleNamespace(**{key: None if v is None else v[e] for key, v in vars(blk).items()
                                        if key in ("W1", "b1", "W2", "b2")})  # fmt: skip
            y = self.expert.apply(params, flat[:, columns].reshape(d, 1, -1)).reshape(d, -1)
            out[:, columns] += (weights * hit).sum(axis=0)[columns] * y
        return out.reshape(d, b, n)


def _expert(get: Get, e: int) -> Get:
    """Expert e's slice of the stacked tensors."""
    return lambda name: get(name)[e]


def block_feedforward(spec) -> FeedForward | Experts:
    """The block's feedforward: the spec's kind (plain or gated), or E experts of that kind with a router."""
    expert = FEEDFORWARDS[spec.feedforward](spec)
    return Experts(spec, expert) if spec.E else expert


__all__ = ["Experts", "block_feedforward"]
