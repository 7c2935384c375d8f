"""Token embeddings and the output head: ids in, logits out.

embedding.E is (d, V), so embedding a sequence of ids is X = E[:, ids], one column per token (optionally
times sqrt(d), as Gemma does). The head maps each final column to V logits: W (V, d), or E^T when tied,
plus an optional bias. A spec without V has neither and takes (d, n) columns directly, as the seed does.
"""

from __future__ import annotations

import math

import numpy as np

from .base import Component, Pairs, Tensor, Term


class TokenEmbedding(Component):
    where = "input"

    def tensors(self, prefix: str) -> list[Tensor]:
        return [Tensor("embedding.E", (self.spec.d, self.spec.V or 0), "embedding")]

    def terms(self) -> list[Term]:
        return [Term("Vd", (self.spec.V or 0) * self.spec.d, "model")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"embedding scale": self.spec.d * b * n if self.spec.embed_scale != "none" else 0}

    @property
    def factor(self) -> float:
        """What the looked-up columns are multiplied by: sqrt(d) or 1."""
        return math.sqrt(self.spec.d) if self.spec.embed_scale == "sqrt" else 1.0

    def embed(self, E: np.ndarray, ids: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """Columns E[:, ids] (times the factor) for ids of shape (b, n): a new (d, b, n) array."""
        X = np.asarray(E[:, ids], dtype=dtype)
        if self.factor != 1.0:
            X *= np.asarray(self.factor, dtype=dtype)  # rounded to the dtype first, as the families do
        return X


class Head(Component):
    where = "output"

    def tensors(self, prefix: str) -> list[Tensor]:
        V, d = self.spec.V or 0, self.spec.d
        out = [] if self.spec.tie_embeddings else [Tensor("head.W", (V, d), "head")]
        return out + ([Tensor("head.b", (V,), "head")] if self.spec.head_bias else [])

    def terms(self) -> list[Term]:
        V, d = self.spec.V or 0, self.spec.d
        out = [] if self.spec.tie_embeddings else [Term("Vd", V * d, "model")]
        return out + ([Term("V", V, "model")] if self.spec.head_bias else [])

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        V, d = self.spec.V or 0, self.spec.d
        return {"output head": (2 * V * d + V * self.spec.head_bias) * b * n}

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"linear layers": (self.spec.V or 0) * self.spec.d * b * n}


def embedding(spec) -> Component:  # type: ignore[no-untyped-def]
    return TokenEmbedding(spec) if spec.V else Component(spec)


def head(spec) -> Component:  # type: ignore[no-untyped-def]
    return Head(spec) if spec.V else Component(spec)
