"""Feedforward networks, applied to each column alike.

plain (the seed's): W2 act(W1 X + b1 1^T) + b2 1^T, W1 (r, d), W2 (d, r).
gated (SwiGLU with silu, GeGLU with gelu): W2 (act(W1 X + b1) * (W3 X + b3)) + b2, W1 and W3 (r, d); the model
stacks W1 over W3 so both come from one (2r, d) product. With a sparsity s (Gemma 3n's sparsity_layers), the gate's
pre-activation g of each column becomes max(g - mean(g) - std(g) Phi^-1(s), 0) over its r entries before act: a
shift and a clip, keeping about the top 1 - s of a Gaussian's entries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from statistics import NormalDist
from typing import cast

import numpy as np

from .. import kernels
from ..spec.choices import FEEDFORWARDS
from .base import Component, Pairs, Tensor, Term, stacked

# gelu (and BLOOM's): the tanh form, tanh as 1; gelu_exact: scale, erf (as 1), +1, x, 0.5; silu: neg, exp, +1, /
ACTIVATION_PER_ENTRY = {"relu": 1, "gelu": 9, "gelu_exact": 5, "silu": 4, "gelu_bloom": 9, "relu2": 2}
SPARSITY_PER_ENTRY = 7  # the mean's and the variance's sums, the square, the shift's subtraction, the clip
XIELU_PER_ENTRY = 10  # x^2 a_p + x/2; expm1, min, - x, * a_n, + x/2; the comparison and the choice

Get = Callable[[str], "kernels.Array"]


@dataclass
class FeedForwardWeights:
    """One block's feedforward as `prepare` stacks it: W1 (r, d), or gated (2r, d) with W3 under W1; W2 (d, r);
    biases as (k, 1, 1) columns (each with a leading axis E in a mixture of experts)."""

    W1: np.ndarray
    b1: np.ndarray | None
    W2: np.ndarray
    b2: np.ndarray | None


def _ff_scaled(get: Get, factors: dict[str, float], name: str) -> np.ndarray:
    array = get(name)
    return array * array.dtype.type(factors[name]) if name in factors else array


@FEEDFORWARDS.register("plain")
class FeedForward(Component):
    projections: tuple[str, ...] = ("1", "2")  # W1, b1, W2, b2 in weights-file order
    label = "feedforward"

    def tensors(self, prefix: str) -> list[Tensor]:
        d, r = self.spec.d, self.spec.r
        shapes = {"1": ((r, d), (r,)), "3": ((r, d), (r,)), "2": ((d, r), (d,))}
        out = []
        for k in self.projections:
            out.append(Tensor(f"{prefix}ff.W{k}", shapes[k][0], self.label))
            if self.spec.ff_bias:
                out.append(Tensor(f"{prefix}ff.b{k}", shapes[k][1], self.label))
        return out

    def terms(self) -> list[Term]:
        d, r, k = self.spec.d, self.spec.r, len(self.projections)
        if not self.spec.ff_bias:
            return [Term(f"{k}rd", k * r * d, "block", seed=True)]
        if k == 2:
            return [Term("2rd + r + d", 2 * r * d + r + d, "block", seed=True)]
        return [Term(f"{k}rd", k * r * d, "block", seed=True), Term(f"{k - 1}r + d", (k - 1) * r + d, "block")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        d, r, k = self.spec.d, self.spec.r, len(self.projections)
        biases = ((k - 1) * r + d) if self.spec.ff_bias else 0
        gating = r if k == 3 else 0  # act(W1 X) * (W3 X)
        per_token = 2 * k * r * d + biases + ACTIVATION_PER_ENTRY[self.spec.activation] * r + gating
        per_token += SPARSITY_PER_ENTRY * r if self.spec.sparsity_layers else 0
        return {"feedforward": self.spec.N * per_token * b * n}

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"linear layers": self.spec.N * len(self.projections) * self.spec.r * self.spec.d * b * n}

    def saved_bytes(self, s: int, down: bool = True, gate: bool = True, up: bool = True) -> int:
        """Bytes one token's training pass keeps beyond its input, in s-byte elements (analysis/training.py): relu
        its output, the tensor W2 keeps; gelu and silu their input and the output W2 keeps. Under LoRA W2's input
        is kept only when W2 trains (`down`), the activation's when the gate needs a gradient (`gate`)."""
        if self.spec.activation == "relu":  # (relu2's gradient needs its input: as gelu's)
            return (gate or down) * self.spec.r * s
        return (gate + down) * self.spec.r * s

    def transient_per_token(self) -> int:
        """Entries a prefill holds per token at the feedforward's peak beside its input (analysis/serving.py): the
        pre-activation and the activation (gated: gate, up and their product) of each hidden entry."""
        return self.hidden_rows * self.spec.r

    @property
    def hidden_rows(self) -> int:
        """Rows of r a prefill holds at once: 2 (plain), 3 (gated)."""
        return len(self.projections)

    def held_per_token(self) -> int:
        """Entries the pass holds per token at the feedforward's peak: the hidden layer (gated: the gate and up
        rows) and the activation's temporary (relu works in place and needs none)."""
        temporary = 0 if self.spec.activation == "relu" else 1
        return (len(self.projections) - 1 + temporary) * self.spec.r

    def prepare(self, get: Get) -> FeedForwardWeights:
        """W1 (with W3 stacked under it when gated), W2 and their biases as (k, 1, 1) columns, for the pass."""
        ins = [k for k in self.projections if k != "2"]
        bias = self.spec.ff_bias
        if self.spec.ff_scales is not None:  # (Falcon-H1's: the gate's rows and the output, scaled)
            gate, down = self.spec.ff_scales
            get = partial(_ff_scaled, get, {"ff.W1": gate, "ff.b1": gate, "ff.W2": down, "ff.b2": down})
        return FeedForwardWeights(
            W1=stacked(get, [f"ff.W{k}" for k in ins], [self.spec.r] * len(ins), self.spec.d)
            if len(ins) > 1
            else get("ff.W1"),
            b1=np.concatenate([get(f"ff.b{k}") for k in ins]).reshape(-1, 1, 1) if bias else None,
            W2=get("ff.W2"),
            b2=get("ff.b2").reshape(-1, 1, 1) if bias else None,
        )

    def apply(self, w: FeedForwardWeights, X: kernels.Array) -> kernels.Array:
        """W2 act(W1 X + b1) + b2 without the residual: (d, b, n) -> (d, b, n)."""
        hidden = kernels.linear(w.W1, X)  # (r, b, n)
        if w.b1 is not None:
            hidden += w.b1
        return self._down(w, kernels.ACTIVATIONS[self.spec.activation](hidden))

    def _down(self, w: FeedForwardWeights, hidden: kernels.Array) -> kernels.Array:
        out = kernels.linear(w.W2, hidden)
        if w.b2 is not None:
            out += w.b2
        return out


@FEEDFORWARDS.register("gated")
class GatedFeedForward(FeedForward):
    projections = ("1", "3", "2")

    def saved_bytes(self, s: int, down: bool = True, gate: bool = True, up: bool = True) -> int:
        """act(W1 x) * (W3 x) keeps the gate (for act), act(gate) (for up's gradient), the up row (for act's
        gradient) and the product (W2's input); relu keeps act(gate) for both. Under LoRA, each when needed."""
        kept = (gate or up) + gate + down if self.spec.activation == "relu" else gate + up + gate + down
        return kept * self.spec.r * s

    @staticmethod
    def _gate_up(w: FeedForwardWeights, X: kernels.Array) -> kernels.Array:
        """W1 X + b1 over W3 X + b3: (2r, b, n), the gate's rows, then the up projection's."""
        both = kernels.linear(w.W1, X)
        if w.b1 is not None:
            both += w.b1
        return both

    def apply(self, w: FeedForwardWeights, X: kernels.Array) -> kernels.Array:
        """W2 (act(W1 X + b1) * (W3 X + b3)) + b2 without the residual: (d, b, n) -> (d, b, n)."""
        both = self._gate_up(w, X)
        r = self.spec.r
        gate = kernels.ACTIVATIONS[self.spec.activation](sparse(both[:r], self.spec.sparsity_layers))
        gate *= both[r:]
        return self._down(w, gate)


def sparse(gate: np.ndarray, sparsity: tuple[float, ...] | None) -> np.ndarray:
    """The gate's pre-activation (r, b, n) kept where it passes its column's mean + std Phi^-1(s), shifted down by
    that cutoff (Gemma 3n's _gaussian_topk; the std over the r entries, not unbiased); as it is without a sparsity."""
    if not sparsity:
        return gate
    z = NormalDist().inv_cdf(sparsity[0])
    cutoff = gate.mean(axis=0) + gate.std(axis=0) * gate.dtype.type(z)
    return np.maximum(gate - cutoff, 0, out=gate)


@FEEDFORWARDS.register("clamped")
class ClampedFeedForward(GatedFeedForward):
    """gpt-oss's SwiGLU: with g = min(W1 x + b1, limit) and u = clamp(W3 x + b3, -limit, limit),
    W2 ((u + 1) * g sigmoid(alpha g)) + b2."""

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        """The gated count, plus the two clamps, the + 1 and the sigmoid's slope: 4 more per hidden entry."""
        gated = super().flops(b, n, pairs)["feedforward"]
        return {"feedforward": gated + self.spec.N * 4 * self.spec.r * b * n}

    def apply(self, w: FeedForwardWeights, X: kernels.Array) -> kernels.Array:
        both = self._gate_up(w, X)
        r, limit, alpha = self.spec.r, self.spec.swiglu_limit, self.spec.swiglu_alpha
        gate = np.minimum(both[:r], limit)
        up = np.clip(both[r:], -limit, limit)
        glu = gate / (1.0 + np.exp(-alpha * gate))  # g sigmoid(alpha g)
        up += 1.0
        glu *= up
        return self._down(w, glu)


@FEEDFORWARDS.register("limited")
class LimitedFeedForward(GatedFeedForward):
    """The gated feedforward with its rows clamped at L = swiglu_limit: W2 (act(min(W1 x, L)) * clamp(W3 x, -L, L)),
    no + 1 and no slope (GLM-5-Next's, DeepSeek-V4's; HY-V4's routed experts alone, expert_clamp)."""

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        """The gated count, plus the two clamps: 2 more per hidden entry."""
        gated = super().flops(b, n, pairs)["feedforward"]
        return {"feedforward": gated + self.spec.N * 2 * self.spec.r * b * n}

    def apply(self, w: FeedForwardWeights, X: kernels.Array) -> kernels.Array:
        both = self._gate_up(w, X)
        r, limit = self.spec.r, self.spec.swiglu_limit
        gate = kernels.ACTIVATIONS[self.spec.activation](np.minimum(both[:r], limit))
        gate *= np.clip(both[r:], -limit, limit)
        return self._down(w, gate)


@dataclass
class XieluWeights(FeedForwardWeights):
    """A plain feedforward's weights and its activation's two parameters (alpha_p, alpha_n), as stored."""

    alpha_p: float = 0.0
    alpha_n: float = 0.0


@FEEDFORWARDS.register("xielu")
class XieluFeedForward(FeedForward):
    """Apertus's: W2 xielu(W1 X + b1) + b2, the activation (the spec's `activation` unused) with two parameters per
    block, ff.alpha_p and ff.alpha_n (1,): a_p = softplus(alpha_p), a_n = 1/2 + softplus(alpha_n), and
    xielu(x) = a_p x^2 + x/2 for x > 0, else (expm1(min(x, -1e-6)) - x) a_n + x/2 (transformers' XIELUActivation,
    its beta 1/2 and eps -1e-6 fixed)."""

    def tensors(self, prefix: str) -> list[Tensor]:
        alphas = [Tensor(f"{prefix}ff.alpha_{x}", (1,), self.label) for x in "pn"]
        return super().tensors(prefix) + alphas

    def terms(self) -> list[Term]:
        return [*super().terms(), Term("2", 2, "block")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        """The plain count with relu's one per entry made xIELU's: both branches (7) and the choice."""
        d, r = self.spec.d, self.spec.r
        per_token = 4 * r * d + (r + d if self.spec.ff_bias else 0) + XIELU_PER_ENTRY * r
        return {"feedforward": self.spec.N * per_token * b * n}

    def saved_bytes(self, s: int, down: bool = True, gate: bool = True, up: bool = True) -> int:
        return (gate + down) * self.spec.r * s  # its input (for its gradient) and its output (for W2's)

    def held_per_token(self) -> int:
        return 2 * self.spec.r  # the hidden layer and the activation's temporary

    def prepare(self, get: Get) -> XieluWeights:
        w = super().prepare(get)
        alphas = {f"alpha_{x}": float(np.asarray(get(f"ff.alpha_{x}")).reshape(-1)[0]) for x in "pn"}
        return XieluWeights(w.W1, w.b1, w.W2, w.b2, **alphas)

    def apply(self, w: FeedForwardWeights, X: kernels.Array) -> kernels.Array:
        alphas = cast(XieluWeights, w)
        hidden = kernels.linear(w.W1, X)
        if w.b1 is not None:
            hidden += w.b1
        a_p, a_n = np.logaddexp(0.0, alphas.alpha_p), 0.5 + np.logaddexp(0.0, alphas.alpha_n)  # (softplus)
        return self._down(w, kernels.xielu(hidden, a_p, a_n))


@FEEDFORWARDS.register("none")
class NoFeedForward(FeedForward):
    """No feedforward: the block is its mixer alone (Mamba-2's), without the second norm (norm.py)."""

    projections: tuple[str, ...] = ()

    def terms(self) -> list[Term]:
        return []

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {}

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {}

    def saved_bytes(self, s: int, down: bool = True, gate: bool = True, up: bool = True) -> int:
        return 0

    def held_per_token(self) -> int:
        return 0

    def prepare(self, get: Get) -> FeedForwardWeights:
        return FeedForwardWeights(np.zeros((0, 0)), None, np.zeros((0, 0)), None)

    def apply(self, w: FeedForwardWeights, X: kernels.Array) -> kernels.Array:
        return np.zeros_like(X)
