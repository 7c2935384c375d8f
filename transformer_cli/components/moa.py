"""A mixture of attention heads (attention: mixture, JetMoE's): each token's router picks attn_k of attn_experts
experts, each a query projection to G heads of m and an output projection back; every expert shares the block's
keys and values (G heads). A token attends with H = attn_k G query heads (slot j's head g reads key/value head g),
and its output is the sum over its slots of gate_j W_O^(e_j) o_j, plus b_O:

    logits = W_r x;  e, top = the attn_k largest;  gates = softmax(top)  (renormalised over the chosen)
    q_j = W_Q^(e_j) x  (G heads),  o_j = attention(q_j, K, V),  out = sum_j gates_j W_O^(e_j) o_j + b_O

tfm lays the H query heads out as (g, j), so that the attn_k heads of key/value head g are contiguous as its
grouped-query attention has them; the cache keeps K and V as any attention's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import kernels
from ..spec.choices import ATTENTIONS
from ..spec.definition import Spec
from ..spec.validate import bad_key
from .attention import MultiHeadAttention
from .base import GgmlCache, Pairs, Tensor, Term


@dataclass
class MixtureWeights:
    """One block's mixture of heads as `prepare` lays it out."""

    W_kv: np.ndarray  # (2 G m, d): the shared keys' and values' rows
    W_QE: np.ndarray  # (E_a, G m, d)
    W_OE: np.ndarray  # (E_a, d, G m)
    router: np.ndarray  # (E_a, d)
    b_O: np.ndarray | None  # (d, 1, 1)
    sinks: None = None
    qk_norm: None = None


@ATTENTIONS.register("mixture")
class MixtureOfHeads(MultiHeadAttention):
    def ggml_cache(self) -> GgmlCache | None:
        return None  # (llama.cpp's memory of this kind is not modelled)

    @staticmethod
    def check_keys(spec: Spec, data: dict[str, Any], source: str) -> None:
        """H is the heads a token attends with, attn_k per key/value head; no per-head norms, gates or biases on
        the projections (JetMoE's have none)."""

        E, k = spec.attn_experts or 0, spec.attn_k or 0
        if k > E:
            raise bad_key(source, "attn_k", k, f"at most attn_experts = {E}")
        if spec.H != k * spec.kv_heads:
            raise bad_key(source, "H", spec.H, f"attn_k G = {k * spec.kv_heads} (each slot's G query heads)")
        for key in ("attention_bias", "qk_norm", "attn_gate", "attn_sinks", "N_enc", "qkv_clip", "v_from_k", "v_norm"):
            if data.get(key) not in (None, False):
                raise bad_key(source, key, data[key], f"no {key} with attention: mixture")

    def normalised(self) -> str | None:
        return "each token's queries come from the experts it chose"

    @property
    def experts(self) -> tuple[int, int, int, int, int]:
        """E_a, k, G, m, d."""
        s = self.spec
        return s.attn_experts or 0, s.attn_k or 0, s.kv_heads, s.m, s.d

    def tensors(self, prefix: str) -> list[Tensor]:
        E, _, G, m, d = self.experts
        p, kind = prefix + "attention.", "mixture of heads"
        out = [
            Tensor(p + "router", (E, d), kind),
            Tensor(p + "W_QE", (E, G * m, d), kind),
            Tensor(p + "W_K", (G, m, d), kind),
            Tensor(p + "W_V", (G, m, d), kind),
            Tensor(p + "W_OE", (E, d, G * m), kind),
        ]
        return out + ([Tensor(p + "b_O", (d,), kind)] if self.spec.has_out_bias else [])

    def terms(self) -> list[Term]:
        E, _, G, m, d = self.experts
        out = [Term("2 E_a Gmd + 2Gmd", 2 * E * G * m * d + 2 * G * m * d, "block", seed=True)]
        out.append(Term("E_a d", E * d, "block"))
        return out + ([Term("d", d, "block")] if self.spec.has_out_bias else [])

    def inactive(self) -> int:
        """Parameters a token does not use: the E_a - attn_k query and output experts not chosen for it."""
        E, k, G, m, d = self.experts
        return self.spec.N * (E - k) * 2 * G * m * d

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        """The attention of H heads (each token's projections its slots' only), and the router."""
        E, k, _, _, d = self.experts
        return super().flops(b, n, pairs) | {"attention router": self.spec.N * (2 * E * d + 4 * k) * b * n}

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        out = super().multiply_adds(b, n, pairs)
        return out | {"linear layers": out["linear layers"] + self.spec.N * self.experts[0] * self.spec.d * b * n}

    def prepare(self, get: Callable[[str], np.ndarray]) -> MixtureWeights:  # type: ignore[override]
        E, _, G, m, d = self.experts
        W_kv = np.concatenate([get("attention.W_K").reshape(G * m, d), get("attention.W_V").reshape(G * m, d)])
        b_O = get("attention.b_O").reshape(-1, 1, 1) if self.spec.has_out_bias else None
        return MixtureWeights(W_kv, get("attention.W_QE"), get("attention.W_OE"), get("attention.router"), b_O)

    def route(self, w: MixtureWeights, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each column's chosen experts (k, T) and gates (k, T), largest first: a softmax over the chosen logits."""
        k = self.experts[1]
        logits = w.router @ X.reshape(X.shape[0], -1)  # (E_a, T)
        chosen = np.argsort(-logits, axis=0, kind="stable")[:k]
        top = np.take_along_axis(logits, chosen, axis=0)
        gates = np.exp(top - top[:1])
        return chosen, gates / gates.sum(axis=0, keepdims=True)

    def qkv(self, w: MixtureWeights, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[override]
        """(d, b, n) -> Q (b, H, m, n) with head g k + j slot j's head g, K and V (b, G, m, n)."""
        E, k, G, m, d = self.experts
        _, b, n = X.shape
        flat = X.reshape(d, -1)
        chosen, _ = self.route(w, X)
        Q = np.empty((G, m, k, b * n), dtype=X.dtype)
        for e in range(E):  # each expert's queries for the columns that chose it, slot by slot
            for j in range(k):
                at = np.flatnonzero(chosen[j] == e)
                if at.size:
                    Q[:, :, j, at] = (w.W_QE[e] @ flat[:, at]).reshape(G, m, -1)
        KV = kernels.linear(w.W_kv, X).reshape(2, G, m, b, n).transpose(0, 3, 1, 2, 4)  # (2, b, G, m, n)
        Q = Q.reshape(G, m, k, b, n).transpose(3, 0, 2, 1, 4).reshape(b, G * k, m, n)
        return np.ascontiguousarray(Q), KV[0], KV[1]

    def project(self, w: MixtureWeights, heads: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:  # type: ignore[override]
        """sum_j gate_j W_O^(e_j) o_j + b_O: heads (H, m, b, n) -> (d, b, n)."""
        E, k, G, m, d = self.experts
        _, _, b, n = heads.shape
        assert X is not None, "the gates are the block input's"
        chosen, gates = self.route(w, X)
        slots = heads.reshape(G, k, m, b * n).transpose(1, 0, 2, 3).reshape(k, G * m, b * n)  # (k, G m, T)
        out = np.zeros((d, b * n), dtype=heads.dtype)
        for e in range(E):
            for j in range(k):
                at = np.flatnonzero(chosen[j] == e)
                if at.size:
                    out[:, at] += (w.W_OE[e] @ slots[j][:, at]) * gates[j, at]
        out = out.reshape(d, b, n)
        if w.b_O is not None:
            out += w.b_O
        return out


__all__ = ["MixtureOfHeads"]
