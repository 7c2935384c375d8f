"""Token embeddings and the output head: ids in, logits out.

embedding.E is (d, V), so embedding a sequence of ids is X = E[:, ids], one column per token (optionally
times sqrt(d), as Gemma does). The head maps each final column to V logits: W (V, d), or E^T when tied,
plus an optional bias. A spec without V has neither and takes (d, n) columns directly, as the seed does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kernels
from .attention import SOFT_CAP_PER_ENTRY
from .base import Component, Pairs, Tensor, Term
from .feedforward import ACTIVATION_PER_ENTRY
from .norm import norm_kind


class TokenEmbedding(Component):
    """E (d, V); optionally token types T (d, types) of which type 0 is added, and a norm after them (BERT)."""

    where = "input"

    def __init__(self, spec):
        super().__init__(spec)
        self.norm = norm_kind(spec) if spec.embed_norm else None

    def tensors(self, prefix: str) -> list[Tensor]:
        d, w = self.spec.d, self.spec.input_width
        out = [Tensor("embedding.E", (self.spec.embed_width, self.spec.V or 0), "embedding")]
        if self.spec.embed_dim:  # OPT-350m's project_in (d_e,) columns up to d; ELECTRA's after the whole embedding
            out.append(Tensor("embedding.W_in", (d, self.spec.embed_dim), "embedding"))
        if self.spec.embed_project:
            out.append(Tensor("embedding.b_in", (d,), "embedding"))
        if self.spec.type_vocab:
            out.append(Tensor("embedding.T", (w, self.spec.type_vocab), "embedding"))
        if self.norm is not None:
            out += [Tensor(f"embedding.norm.{g}", (w,), "embedding") for g in self.norm.params]
        return out

    def terms(self) -> list[Term]:
        d, e, w = self.spec.d, self.spec.embed_dim, self.spec.input_width
        width = "d_e" if self.spec.embed_project else "d"
        out = [Term("Vd", (self.spec.V or 0) * d, "model")]
        if e:  # E is (d_e, V), and W_in (d, d_e)
            out = [Term("V d_e", (self.spec.V or 0) * e, "model"), Term("d d_e", d * e, "model")]
        if self.spec.embed_project:
            out.append(Term("d", d, "model"))
        if self.spec.type_vocab:
            out.append(Term(f"types*{width}", self.spec.type_vocab * w, "model"))
        if self.norm is not None:
            k = len(self.norm.params)
            out.append(Term(f"{k}{width}" if k > 1 else width, k * w, "model"))
        return out

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        d, w, tokens = self.spec.d, self.spec.input_width, b * n
        extra = d * (self.spec.embed_scale != "none") + w * bool(self.spec.type_vocab)
        norm = self.norm.per_entry * w if self.norm is not None else 0
        bias = d * self.spec.embed_project
        projected = (
            {"embedding projection": (2 * d * self.spec.embed_dim + bias) * tokens} if self.spec.embed_dim else {}
        )
        return {"embedding scale, types, norm": (extra + norm) * tokens} | projected

    ID_BYTES = 8  # an int64 id a token

    def saved_per_token(self, s: int, frozen: bool = False) -> int:
        """The ids, W_in's input (the looked-up columns) and the norm's; nothing frozen, none needing a gradient."""
        if frozen:
            return 0
        projected = (self.spec.embed_dim or 0) * s
        norm = self.norm.saved_bytes(self.spec.input_width, s) if self.norm is not None else 0
        return self.ID_BYTES + projected + norm

    def finish(self, Z: np.ndarray, params: dict) -> np.ndarray:
        """After the positions: add token type 0 and apply the embedding norm, if the spec has them, then the
        projection up to d of embed_project ((d_e or d, b, n) -> (d, b, n))."""
        if params.get("T0") is not None:
            Z = Z + params["T0"]  # a new array: Z may be a view of the caller's columns
        Z = Z if self.norm is None else self.norm.apply(Z, params["norm"])
        if "b_in" not in params:
            return Z
        Z = kernels.linear(params["W_in"], Z)
        Z += params["b_in"]
        return Z

    @property
    def factor(self) -> float:
        """What the looked-up columns are multiplied by: sqrt(d), a number, or 1."""
        return self.spec.embed_factor

    def embed(self, E: Any, ids: np.ndarray, dtype: np.dtype, W_in: np.ndarray | None = None) -> np.ndarray:
        """Columns E[:, ids] (times the factor; then W_in, up from d_e to d) for ids (b, n): a new (d, b, n) array.
        E is an array, or a matrix indexed as one (model/narrow.py's, which widens only the columns asked)."""
        X = np.asarray(E[:, ids], dtype=dtype)
        if self.factor != 1.0:
            X *= np.asarray(self.factor, dtype=dtype)  # rounded to the dtype first, as the families do
        return X if W_in is None else kernels.linear(W_in, X)


class Head(Component):
    """W (V, d) or E^T, and its bias; before it OPT-350m's W_out down to d_e, or ModernBERT-decoder's transform
    norm(act(W_t x + b_t)) (head_transform)."""

    where = "output"

    def __init__(self, spec):
        super().__init__(spec)
        self.norm = norm_kind(spec) if spec.head_transform != "none" else None

    def tensors(self, prefix: str) -> list[Tensor]:
        V, d, e = self.spec.V or 0, self.spec.d, self.spec.embed_dim
        out = [] if self.spec.tie_embeddings else [Tensor("head.W", (V, e or d), "head")]
        out += [Tensor("head.W_out", (e, d), "head")] if e else []  # OPT-350m's project_out: d down to d_e
        if self.norm is not None:
            out.append(Tensor("head.W_t", (d, d), "head"))
            out += [Tensor("head.b_t", (d,), "head")] if self.spec.head_transform == "affine" else []
            out += [Tensor(f"head.norm.{g}", (d,), "head") for g in self.norm.params]
        return out + ([Tensor("head.b", (V,), "head")] if self.spec.head_bias else [])

    def terms(self) -> list[Term]:
        V, d, e = self.spec.V or 0, self.spec.d, self.spec.embed_dim
        out = [] if self.spec.tie_embeddings else [Term("V d_e" if e else "Vd", V * (e or d), "model")]
        out += [Term("d d_e", d * e, "model")] if e else []
        if self.norm is not None:
            k = len(self.norm.params) + (self.spec.head_transform == "affine")
            out += [Term("d^2", d * d, "model"), Term(f"{k}d", k * d, "model")]
        return out + ([Term("V", V, "model")] if self.spec.head_bias else [])

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        V, d = self.spec.V or 0, self.spec.embed_width
        scale = d * (self.spec.head_scale != "none")  # T5's d^-1/2 on the final columns
        cap = SOFT_CAP_PER_ENTRY * V * (self.spec.logit_softcap is not None)  # Gemma 2's cap tanh(z / cap)
        scaled = V * (self.spec.logit_scale != 1.0)  # Cohere's and Granite's logit scale
        out = 2 * self.spec.d * d if self.spec.embed_dim else 0  # W_out, down to d_e first
        if self.norm is not None:  # W_t, b_t, the activation, the norm
            out = 2 * d * d + (ACTIVATION_PER_ENTRY[self.spec.activation] + self.norm.per_entry + 1) * d
        return {"output head": (2 * V * d + V * self.spec.head_bias + scale + cap + scaled + out) * b * n}

    def prefill_bytes(self, tokens: int, rows: int, s: int) -> int:
        """Bytes a prefill of `tokens` holds at the head (analysis/serving.py): the final norm's output of every
        token, and the logits (and W_out's narrower input, embed_dim) of `rows` of them."""
        return (tokens * self.spec.d + rows * ((self.spec.embed_dim or 0) + (self.spec.V or 0))) * s

    def saved_per_token(self, s: int, frozen: bool = False) -> int:
        """The loss's log-softmax (V) and int64 targets; the head's input (d, and W_out's narrower one with
        embed_dim), none frozen."""
        inputs = 0 if frozen else (self.spec.d + (self.spec.embed_dim or 0)) * s
        return inputs + (self.spec.V or 0) * s + 8

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        e, d = self.spec.embed_width, self.spec.d
        before = d * e * bool(self.spec.embed_dim) + d * d * (self.norm is not None)  # W_out, or W_t
        return {"linear layers": ((self.spec.V or 0) * e + before) * b * n}


class Pooler(Component):
    """BERT's pooler, tanh(W_p x_0 + b_p): its parameters are counted as BertModel holds them; tfm's output is
    the final columns (or logits), so the pooler is not computed."""

    where = "output"

    def tensors(self, prefix: str) -> list[Tensor]:
        d = self.spec.d
        return [Tensor("pooler.W", (d, d), "pooler"), Tensor("pooler.b", (d,), "pooler")]

    def terms(self) -> list[Term]:
        return [Term("d^2 + d", self.spec.d**2 + self.spec.d, "model")]


def embedding(spec) -> Component:
    return TokenEmbedding(spec) if spec.V else Component(spec)


def id_bytes(spec) -> int:
    """Bytes a token's id takes (int64), which its embedding's backward pass keeps; none without a vocabulary."""
    return TokenEmbedding.ID_BYTES if spec.V else 0


def head(spec) -> Component:
    return Head(spec) if spec.V and spec.head else Component(spec)


def pooler(spec) -> Component:
    return Pooler(spec) if spec.pooler else Component(spec)
