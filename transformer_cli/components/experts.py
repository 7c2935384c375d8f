"""A mixture of experts in place of the feedforward (Mixtral, Qwen-MoE): E copies of the feedforward and a router,
and optionally a shared expert every token goes through.

The router W_r (E, d) scores each column; the k experts with the highest scores process it, and their outputs
are summed with weights softmax over those k scores (the same as a softmax over all E renormalised on the
chosen k), or with router_renorm false the softmax over all E read at the chosen k. Each expert is the spec's
feedforward (plain or gated) of size expert_r, its tensors stacked on a leading axis E. A shared expert
(shared_r) adds its output to every column's, times sigmoid(w . x) with shared_gate (Qwen2-MoE).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .. import kernels
from ..errors import SpecError
from .attention import SOFTMAX_PER_SCORE
from .base import Component, Pairs, Tensor, Term
from .feedforward import FEEDFORWARDS, FeedForward, FeedForwardWeights

Get = Callable[[str], np.ndarray]
SIGMOID_PER_ENTRY = 4  # neg, exp, +1, / (as silu's)
SPARSEMIXER_PER_SCORE = 4  # |s|, max with m, m - s, divide (then a comparison)


class Experts(Component):
    label = "experts"

    def __init__(self, spec, expert: FeedForward):
        super().__init__(spec)
        self.expert = expert
        self.E: int = spec.E
        self.k: int = spec.k
        own = FEEDFORWARDS[spec.feedforward]  # (the shared expert is never clamped: expert_clamp is the routed ones')
        self.shared = None if spec.shared_r is None else own(replace(spec, r=spec.shared_r, E=None, k=None))
        self.routes = spec.E + (spec.zero_experts or 0)  # the router's choices: E experts and Z zero experts

    def tensors(self, prefix: str) -> list[Tensor]:
        routes = self.routes
        router = [Tensor(prefix + "ff.router", (routes, self.spec.d), "router")]
        if self.spec.router_logit_bias:  # gpt-oss's: W_r x + b_r
            router.append(Tensor(prefix + "ff.router_b", (routes,), "router"))
        if self.spec.router_bias and not self.spec.router_hash:  # DeepSeek-V3's correction bias: not a parameter
            buffer = not self.spec.router_bias_param  # (ERNIE 4.5 holds it as a frozen parameter)
            router.append(Tensor(prefix + "ff.router_bias", (routes,), "router", buffer=buffer))
        if self.spec.router_hash:  # (DeepSeek-V4's: each id's k experts, a table stored as a buffer)
            router.append(Tensor(prefix + "ff.router_hash", (self.spec.V or 0, self.k), "router", buffer=True))
        out = router + [Tensor(t.name, (self.E, *t.shape), self.label) for t in self.expert.tensors(prefix)]
        if self.shared is not None:  # its tensors under ff.shared.: ff.shared.W1, ...
            out += [Tensor(_shared(t.name), t.shape, "shared expert") for t in self.shared.tensors(prefix)]
        if self.spec.shared_gate:
            out.append(Tensor(prefix + "ff.shared.W_gate", (1, self.spec.d), "shared expert"))
        if self.spec.expert_out_bias:
            out.append(Tensor(prefix + "ff.b_out", (self.spec.d,), self.label))
        return out

    def terms(self) -> list[Term]:
        size = "r" if self.spec.expert_r is None else "r_e"
        out = [Term(f"E({_sized(t.formula, size)})", self.E * t.value, t.scope, t.seed) for t in self.expert.terms()]
        biased = self.spec.router_logit_bias + self.spec.router_bias_param  # (gpt-oss's bias; ERNIE's correction)
        E = "(E + Z)" if self.spec.zero_experts else "E"
        formula = f"{E}d" + ("" if not biased else f" + {E}" if biased == 1 else f" + {biased}{E}")
        out.append(Term(formula, self.routes * (self.spec.d + biased), "block"))
        if self.shared is not None:
            out += [Term(_sized(t.formula, "r_s"), t.value, t.scope) for t in self.shared.terms()]
        if self.spec.shared_gate:
            out.append(Term("d", self.spec.d, "block"))
        if self.spec.expert_out_bias:
            out.append(Term("d", self.spec.d, "block"))
        return out

    def per_expert(self) -> int:
        return sum(t.value for t in self.expert.terms())

    def inactive(self) -> int:
        """Parameters a token does not use: the E - k experts not chosen for it, in every block."""
        return self.spec.N * (self.E - self.k) * self.per_expert()

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        ff = {name: self.k * v for name, v in self.expert.flops(b, n, pairs).items()}  # k experts per token
        if self.shared is not None:  # every token through the shared expert, then added (gated: 2d + 4 more)
            extra = self.spec.d + (2 * self.spec.d + SIGMOID_PER_ENTRY + self.spec.d) * self.spec.shared_gate
            shared = self.shared.flops(b, n, pairs)
            ff = {name: v + shared[name] + self.spec.N * extra * b * n for name, v in ff.items()}
        combine = 2 * self.k * self.spec.d  # weight and add each chosen expert's output
        E = self.routes
        softmax = SOFTMAX_PER_SCORE * (self.k if self.spec.router_renorm else E)  # over the chosen k, or all E
        if self.spec.router_score in ("sigmoid", "sqrtsoftplus"):  # each of the E scores, the chosen renormalised
            softmax = SIGMOID_PER_ENTRY * E + 2 * self.k * self.spec.router_renorm
        elif self.spec.router_score == "sparsemixer":  # per chosen expert: the threshold test of E, a softmax of E
            softmax = self.k * (SPARSEMIXER_PER_SCORE + SOFTMAX_PER_SCORE) * self.E
        router = 2 * E * self.spec.d + softmax
        return ff | {"router": self.spec.N * (router + combine) * b * n}

    def saved_bytes(self, s: int, down: bool = True, gate: bool = True, up: bool = True) -> int:
        """An estimate: a token's k experts keep their feedforward's tensors, its gathered input and the expert's
        output; the router its softmax (E); a shared expert its tensors and its output."""
        d = self.spec.d
        shared = 0 if self.shared is None else self.shared.saved_bytes(s, down, gate, up) + d * s
        return (self.k or 0) * (self.expert.saved_bytes(s, down, gate, up) + 2 * d * s) + self.E * s + shared

    def transient_per_token(self) -> int:
        """The widest hidden layer (an expert's or the shared one's), as if one expert took every token, and the
        router's E scores."""
        width = max(self.expert.spec.r, self.spec.shared_r or 0)
        return self.expert.hidden_rows * width + self.E

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        inner = self.expert.multiply_adds(b, n, pairs)["linear layers"]
        shared = 0 if self.shared is None else self.shared.multiply_adds(b, n, pairs)["linear layers"]
        gate = self.spec.N * self.spec.d * b * n * self.spec.shared_gate
        return {"linear layers": self.k * inner + shared + gate + self.spec.N * self.routes * self.spec.d * b * n}

    def held_per_token(self) -> int:
        shared = 0 if self.shared is None else self.shared.held_per_token() + self.spec.d  # its hidden layer, output
        return self.expert.held_per_token() + self.E + self.spec.d + shared  # an expert's hidden layer, scores, sum

    def prepare(self, get: Get) -> ExpertsWeights:
        """Each expert's stacked weights on a leading axis E, the router, and the shared expert's."""
        experts = [self.expert.prepare(_expert(get, e)) for e in range(self.E)]
        W1, W2 = (np.stack([getattr(x, key) for x in experts]) for key in ("W1", "W2"))
        biased = self.expert.spec.ff_bias
        b1, b2 = (np.stack([getattr(x, key) for x in experts]) if biased else None for key in ("b1", "b2"))
        shared = gate = None
        if self.shared is not None:
            shared = self.shared.prepare(lambda name: get(_shared(name)))
            gate = get("ff.shared.W_gate") if self.spec.shared_gate else None
        router = Router(
            get("ff.router"),
            get("ff.router_b").reshape(-1, 1) if self.spec.router_logit_bias else None,
            get("ff.router_bias").reshape(-1, 1) if self.spec.router_bias and not self.spec.router_hash else None,
            table=get("ff.router_hash").astype(np.int64) if self.spec.router_hash else None,
        )
        out_bias = get("ff.b_out").reshape(-1, 1) if self.spec.expert_out_bias else None
        return ExpertsWeights(W1, b1, W2, b2, router=router, shared=shared, shared_gate=gate, out_bias=out_bias)

    reads_tokens = property(lambda self: self.spec.router_hash)  # (the pass hands `apply` the columns' token ids)

    def choose(self, router, X: np.ndarray, tokens: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`route`, or with a hash table (router_hash) the experts of each column's token id (`tokens`, T)."""
        if router.table is None:
            return self.route(router, X)
        if tokens is None:
            raise SpecError(f"{self.spec.label}: its hashed blocks choose experts by token id, and none was given")
        return self._route_scored(router, X, router.table[tokens].T)

    def route(self, router, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The chosen experts (k, T) of each of the T columns of X (d, T), and their weights (k, T), each times its
        expert's scale where the router has them (Gemma 4's)."""
        chosen, weights = self._route(router, X)
        if router.expert_scale is not None:
            weights = weights * router.expert_scale[chosen, 0]
        return chosen, weights

    def _route(self, router, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = self.spec
        if s.router_score == "sparsemixer":
            return sparsemixer(router.logits(X), s.router_jitter)
        if (
            s.router_score in ("sigmoid", "sqrtsoftplus")
            or s.router_groups
            or s.router_bias
            or s.router_scale != 1.0
            or s.router_softcap
        ):
            return self._route_scored(router, X)
        scores = router.logits(X)  # (E, T)
        chosen = np.argsort(-scores, axis=0, kind="stable")[: self.k]  # highest first; ties to the lower index
        top = np.take_along_axis(scores, chosen, axis=0)
        weights = np.exp(top - top[:1])
        if self.spec.router_renorm:
            weights /= weights.sum(axis=0, keepdims=True)
        else:  # the softmax over all E at the chosen: exp(s - max) / sum over all E of exp(s - max)
            weights /= np.exp(scores - top[:1]).sum(axis=0, keepdims=True)
        return chosen, weights

    def _route_scored(self, router, X: np.ndarray, chosen: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """DeepSeek's routing: softmax, sigmoid or sqrt(softplus) scores, a correction bias added to choose (not to
        weight), the choice limited to the best router_topk_groups groups (or `chosen` (k, T) already: a hash
        table's), the chosen weights renormalised and scaled."""
        s, E, k = self.spec, self.E, self.k
        logits, bias = router.logits(X), router.correction  # (E, T), (E, 1)
        if s.router_softcap is not None:  # (Laguna's)
            logits = s.router_softcap * np.tanh(logits / s.router_softcap)
        if s.router_score == "sigmoid":
            scores = 1.0 / (1.0 + np.exp(-logits))
        elif s.router_score == "sqrtsoftplus":  # (torch's softplus: x itself past 20)
            scores = np.sqrt(np.where(logits > 20, logits, np.log1p(np.exp(np.minimum(logits, 20)))))
        else:
            scores = np.exp(logits - logits.max(axis=0, keepdims=True))
            scores /= scores.sum(axis=0, keepdims=True)
        choice = scores if bias is None else scores + bias
        if (
            chosen is None and s.router_groups
        ):  # each group scored by its best expert (or best two), the others ruled out
            groups = choice.reshape(s.router_groups, E // s.router_groups, -1)
            best = -np.sort(-groups, axis=1)
            score = best[:, 0] if s.router_group_score == "max" else best[:, :2].sum(axis=1)  # (groups, T)
            kept = np.argsort(-score, axis=0, kind="stable")[: s.router_topk_groups]
            allowed = np.zeros_like(score, dtype=bool)
            np.put_along_axis(allowed, kept, True, axis=0)
            choice = np.where(allowed[:, None, :], groups, -np.inf).reshape(E, -1)
        if chosen is None:
            chosen = np.argsort(-choice, axis=0, kind="stable")[:k]
        weights = np.take_along_axis(scores, chosen, axis=0)
        if s.router_renorm:
            eps = s.router_renorm_eps or (0.0 if s.router_score == "softmax" else 1e-20)
            weights /= weights.sum(axis=0, keepdims=True) + eps
        if s.router_scale != 1.0:
            weights *= s.router_scale
        return chosen, weights

    def apply(self, w: ExpertsWeights, X: np.ndarray, tokens: np.ndarray | None = None) -> np.ndarray:
        """sum over the k chosen experts of weight * expert(x), column by column, plus the shared expert's output:
        (d, b, n) -> (d, b, n); `tokens` (b, n): the columns' ids, for a hash table."""
        out = self.routed(w, X, tokens=tokens)
        out += self.at_once(w, X)
        return out

    def at_once(self, w: ExpertsWeights, X: np.ndarray) -> np.ndarray:
        """What joins the stream whatever routed_later says: the shared expert's output and JetMoE's bias."""
        out = np.zeros_like(X) if w.shared is None else self.shared_output(w, X)
        if w.out_bias is not None:
            out += w.out_bias[:, :, None]
        return out

    def routed(
        self, w: ExpertsWeights, X: np.ndarray, stream: np.ndarray | None = None, tokens: np.ndarray | None = None
    ) -> np.ndarray:
        """The routed experts' part alone: (d, b, n) -> (d, b, n), the router reading X or `stream` (Gemma 4's). A
        zero expert (e >= E) gives its column back."""
        d, b, n = X.shape
        flat = X.reshape(d, b * n)
        ids = None if tokens is None else tokens.reshape(-1)
        chosen, weights = self.choose(w.router, flat if stream is None else stream.reshape(d, b * n), ids)
        out = np.zeros_like(flat)
        for e in range(self.E):
            hit = chosen == e  # (k, T): where expert e is among a column's chosen
            columns = np.flatnonzero(hit.any(axis=0))
            if columns.size == 0:
                continue
            weight = (weights * hit).sum(axis=0)[columns]
            if self.spec.router_on_input:  # (Llama 4: the expert of the weighted column)
                x = flat[:, columns] * weight
                out[:, columns] += self.expert.apply(w.expert(e), x.reshape(d, 1, -1)).reshape(d, -1)
                continue
            y = self.expert.apply(w.expert(e), flat[:, columns].reshape(d, 1, -1)).reshape(d, -1)
            out[:, columns] += weight * y
        if self.spec.zero_experts:  # (LongCat-Flash's: the column times its zero experts' weights)
            out += flat * (weights * (chosen >= self.E)).sum(axis=0)
        return out.reshape(d, b, n)

    def shared_output(self, w: ExpertsWeights, X: np.ndarray) -> np.ndarray:
        """The shared expert's part of the output, gated where the spec says: (d, b, n) -> (d, b, n)."""
        assert self.shared is not None and w.shared is not None
        y = self.shared.apply(w.shared, X)
        if w.shared_gate is not None:  # sigmoid(w . x) per column
            y *= 1.0 / (1.0 + np.exp(-kernels.linear(w.shared_gate, X)))
        if self.spec.shared_scale != 1.0:  # (Cohere2-MoE's average)
            y *= self.spec.shared_scale
        return y


def sparsemixer(scores: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """PhiMoE's router as transformers evaluates it (sparsemixer in eval mode): the best expert i1 of each column's
    scores (E, T), weighted by the softmax over the experts j within its threshold, (m1 - s_j) / max(|s_j|, m1)
    <= 2 eps; then the best other expert i2, its weight the softmax over the others within its own threshold
    (measured on all the scores, i1 left out). Two experts (2, T), weights not renormalised."""
    columns = np.arange(scores.shape[1])
    chosen, weights, rest = [], [], scores
    for _ in range(2):
        best = np.argmax(rest, axis=0)  # the first of equal scores, as torch.max on the CPU
        m = rest[best, columns]
        with np.errstate(invalid="ignore", divide="ignore"):  # 0 / 0 is NaN: not past the threshold
            far = (m - scores) / np.maximum(np.abs(scores), m) > 2 * eps
        kept = np.where(far, -np.inf, rest)
        weights.append(1.0 / np.exp(kept - m).sum(axis=0))  # softmax(kept) at the best: exp(0) / sum
        chosen.append(best)
        rest = rest.copy()
        rest[best, columns] = -np.inf
    return np.stack(chosen), np.stack(weights)


@dataclass
class ExpertsWeights(FeedForwardWeights):
    """A block's experts: their W1, b1, W2, b2 stacked on a leading axis E, the router, and a shared expert's
    weights (with its gate w, (1, d), where the spec has it)."""

    router: Router | None = None
    shared: FeedForwardWeights | None = None
    shared_gate: np.ndarray | None = None
    out_bias: np.ndarray | None = None  # (d, 1): JetMoE's, on the mixed output

    def expert(self, e: int) -> FeedForwardWeights:
        """Expert e's weights alone."""
        b1, b2 = (None if b is None else b[e] for b in (self.b1, self.b2))
        return FeedForwardWeights(self.W1[e], b1, self.W2[e], b2)


@dataclass(frozen=True)
class Router:
    """A block's router: W_r (E, d), gpt-oss's bias b_r (E, 1) on its scores, DeepSeek-V3's correction (E, 1)."""

    W: np.ndarray
    b: np.ndarray | None = None
    correction: np.ndarray | None = None
    input_scale: np.ndarray | None = None  # (d, 1): Gemma 4's, on the columns' RMS norm (eps), times d^-1/2
    expert_scale: np.ndarray | None = None  # (E, 1): Gemma 4's, on each chosen expert's weight
    eps: float = 0.0
    table: np.ndarray | None = None  # (V, k): each token id's experts (router_hash: DeepSeek-V4's)

    def logits(self, X: np.ndarray) -> np.ndarray:
        """W_r X (+ b_r), or W_r (RMS(X) s d^-1/2) with an input scale s (Gemma 4's): (E, T)."""
        if self.input_scale is not None:
            X = kernels.rms_norm(X, self.input_scale * X.shape[0] ** -0.5, self.eps)
        out = np.matmul(self.W, X)
        if self.b is not None:
            out += self.b
        return out


def _sized(formula: str, r: str) -> str:
    """A feedforward's formula with its size named `r`: 3rd -> 3r_e d, 2r + d -> 2r_e + d."""
    return formula if r == "r" else formula.replace("rd", f"{r} d").replace("r ", f"{r} ").replace("r+", f"{r}+")


def _shared(name: str) -> str:
    """The shared expert's name of a feedforward tensor: blocks.0.ff.W1 -> blocks.0.ff.shared.W1."""
    head, _, leaf = name.rpartition("ff.")
    return f"{head}ff.shared.{leaf}"


def _expert(get: Get, e: int) -> Get:
    """Expert e's slice of the stacked tensors."""
    return lambda name: get(name)[e]


# the mixtures other than Experts, by the spec key that asks for one: each registers itself (stream_experts.py)
MIXTURES: dict[str, type[Experts]] = {}


def shortcut(feedforward: FeedForward | Experts, w: FeedForwardWeights, later: list, X: np.ndarray) -> np.ndarray:
    """A block's feedforward under routed_later (LongCat-Flash's shortcut): a routed block's output is its shared
    expert's, its routed experts' kept in `later` for the next block, a dense one, whose output adds it."""
    if isinstance(feedforward, Experts):
        later.append(feedforward.routed(w, X))  # type: ignore[arg-type]
        return feedforward.at_once(w, X)  # type: ignore[arg-type]
    out = feedforward.apply(w, X)
    if later:
        out += later.pop()
    return out


def block_feedforward(spec) -> FeedForward | Experts:
    """The block's feedforward: the spec's kind (plain or gated), or E experts of that kind with a router (Gemma 4's
    reading the stream through norms of their own: stream_experts.py)."""
    if not spec.E:
        return FEEDFORWARDS[spec.feedforward](spec)
    own = replace(spec, r=spec.expert_r or spec.r)
    if spec.expert_clamp is not None:  # (HY-V4's: its routed experts alone limited)
        own = replace(own, feedforward="limited", swiglu_limit=spec.expert_clamp)
    expert = FEEDFORWARDS[own.feedforward](own)
    return (MIXTURES["expert_norms"] if spec.expert_norms else Experts)(spec, expert)


__all__ = ["Experts", "block_feedforward", "shortcut"]
