"""Gemma 4's mixture (expert_norms): a dense MLP and E experts side by side, both reading the block's stream through
norms of their own, each output normalised before their sum; the router reads the stream's RMS norm times a scale
per entry and d^-1/2, and weights each chosen expert times its own scale:

    h = post1(mlp(pre(x))) + post2(sum_k w_k s_e expert_e(pre2(x)))
    w = the softmax over the top k of W_r (RMS(x) s_r / sqrt(d))

The block's own output norm (norm2_out) follows, as for any sandwich block; the block has no norm2 of its own (the
MLP's input norm is ff.shared_norm here)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from .base import Pairs, Tensor, Term
from .experts import MIXTURES, Experts, ExpertsWeights, Get, Router
from .norm import norm_kind

NORMS = ("shared_norm", "shared_norm_out", "routed_norm", "routed_norm_out")  # pre, post1, pre2, post2


class StreamExperts(Experts):
    def __init__(self, spec, expert) -> None:
        super().__init__(spec, expert)
        self.norm = norm_kind(spec)  # (the four norms' kind, and the router's without its gain)

    def tensors(self, prefix: str) -> list[Tensor]:
        d, p = self.spec.d, prefix + "ff."
        out = super().tensors(prefix)
        out += [Tensor(p + f"{name}.{g}", (d,), "expert norms") for name in NORMS for g in self.norm.params]
        return out + [Tensor(p + "router_scale", (d,), "router"), Tensor(p + "expert_scale", (self.E,), "router")]

    def terms(self) -> list[Term]:
        k = len(NORMS) * len(self.norm.params)
        return [*super().terms(), Term(f"{k}d + d + E", (k + 1) * self.spec.d + self.E, "block")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        """Four norms of d and the router's RMS norm of its input, per token and block, beside the mixture's."""
        norms = (len(NORMS) * self.norm.per_entry + self.norm.per_entry) * self.spec.d
        return super().flops(b, n, pairs) | {"expert norms": self.spec.N * norms * b * n}

    def prepare(self, get: Get) -> StreamWeights:
        base = super().prepare(get)
        router = base.router
        assert router is not None
        scaled = Router(
            router.W,
            router.b,
            router.correction,
            input_scale=get("ff.router_scale").reshape(-1, 1),
            expert_scale=get("ff.expert_scale").reshape(-1, 1),
            eps=self.spec.norm_eps,
        )
        norms = tuple(self.norm.stacked(partial(_norm_param, get, name)) for name in NORMS)
        fields = {key: getattr(base, key) for key in base.__dataclass_fields__} | {"router": scaled}
        return StreamWeights(**fields, norms=norms)

    def apply(self, w: StreamWeights, X: np.ndarray) -> np.ndarray:  # type: ignore[override]
        """The block's stream X (d, b, n), not normed (the block has no norm2): the MLP's and the experts' outputs,
        each through its norms, summed. The router reads X itself."""
        assert self.shared is not None and w.shared is not None
        pre, post1, pre2, post2 = w.norms
        norm = self.norm.apply
        out = norm(self.shared.apply(w.shared, norm(X, pre)), post1)
        experts = self.routed(w, norm(X, pre2), X)
        out += norm(experts, post2)
        return out


def _norm_param(get: Get, name: str, param: str) -> np.ndarray:
    return get(f"ff.{name}.{param}")


@dataclass
class StreamWeights(ExpertsWeights):
    norms: tuple = ()  # the four norms' parameters (NORMS' order)


MIXTURES["expert_norms"] = StreamExperts

__all__ = ["StreamExperts"]
