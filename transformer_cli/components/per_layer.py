"""Per-layer inputs (Gemma 4's small models, ple_dim P): every token brings N vectors of P, one for each block, made
once before the blocks from a second embedding table and from the model's input:

    tokens = E_ple[:, id] sqrt(P)                               (N P,) looked up with the token's id
    ple    = (RMSNorm_P(W_ple x0 d^-1/2) + tokens) 2^-1/2      (N, P), x0 the scaled embedding, normed per block's P

and block i, after its feedforward, adds RMSNorm(W_proj (act(W_gate x) * ple_i)) to the stream. The token part needs
the ids: tfm's columns carry it below the embedding's d rows (the pass's input is d + N P rows: input_width), so
decoding and real columns take it as they take the rest.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from .base import Component, Pairs, Tensor, Term
from .norm import RMS_PER_ENTRY, norm_kind


class PerLayerInputs(Component):
    """The model's part: the table E_ple (N P, V_ple) of columns, the projection W_ple (N P, d) and its norm's gain
    (P,)."""

    where = "input"

    def tensors(self, prefix: str) -> list[Tensor]:
        s, P = self.spec, self.spec.ple_dim or 0
        kind = "per-layer inputs"
        return [
            Tensor("per_layer.E", (s.N * P, s.ple_vocab or s.V or 0), kind),  # (columns, as embedding.E)
            Tensor("per_layer.W", (s.N * P, s.d), kind),
            Tensor("per_layer.norm.gamma", (P,), kind),
        ]

    def terms(self) -> list[Term]:
        s, P = self.spec, self.spec.ple_dim or 0
        return [Term("V_ple N P + N P d + P", (s.ple_vocab or s.V or 0) * s.N * P + s.N * P * s.d + P, "model")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        s, P = self.spec, self.spec.ple_dim or 0
        return {"per-layer inputs": (2 * s.N * P * s.d + (RMS_PER_ENTRY + 3) * s.N * P) * b * n}

    def prepare(self, get) -> tuple[np.ndarray, np.ndarray]:
        """W_ple and its norm's gain as a (P, 1, 1, 1) column."""
        return get("per_layer.W"), get("per_layer.norm.gamma").reshape(-1, 1, 1, 1)

    def tokens(self, E, ids: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """The token part of ids (b, n): (N P, b, n), times sqrt(P) rounded to the dtype (as the embedding's); an id
        past the table's rows reads row 0 (Gemma 3n's; Gemma 4's transformers fails on one)."""
        out = np.asarray(E[:, np.where(ids < E.shape[1], ids, 0)], dtype=dtype)
        return out * np.asarray((self.spec.ple_dim or 0) ** 0.5, dtype=dtype)

    def inputs(self, prepared: tuple, Z: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """Every block's input (N, P, b, n) from the scaled embedding Z (d, b, n) and the token part (N P, b, n)."""
        W, gamma = prepared
        N, P = self.spec.N, self.spec.ple_dim or 0
        projected = kernels.linear(W, Z) * Z.dtype.type(self.spec.d**-0.5)
        normed = kernels.rms_norm(projected.reshape(N, P, *Z.shape[1:]).swapaxes(0, 1), gamma, self.spec.norm_eps)
        out = normed.swapaxes(0, 1) + tokens.reshape(N, P, *Z.shape[1:])
        out *= Z.dtype.type(2**-0.5)
        return out


class PerLayerInput(Component):
    """A block's part: W_gate (P, d), W_proj (d, P) and the norm of their output (d,)."""

    def tensors(self, prefix: str) -> list[Tensor]:
        d, P, kind = self.spec.d, self.spec.ple_dim or 0, "per-layer inputs"
        p = prefix + "per_layer."
        gains = [Tensor(p + f"norm.{g}", (d,), kind) for g in norm_kind(self.spec).params]
        return [Tensor(p + "W_gate", (P, d), kind), Tensor(p + "W_proj", (d, P), kind), *gains]

    def terms(self) -> list[Term]:
        d, P = self.spec.d, self.spec.ple_dim or 0
        return [Term("2dP + d", 2 * d * P + d, "block")]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        d, P = self.spec.d, self.spec.ple_dim or 0
        return {"per-layer inputs": self.spec.N * (4 * d * P + 2 * P + RMS_PER_ENTRY * d + d) * b * n}

    def prepare(self, get) -> tuple:
        return (
            get("per_layer.W_gate"),
            get("per_layer.W_proj"),
            norm_kind(self.spec).stacked(lambda g: get(f"per_layer.norm.{g}")),
        )

    def add(self, prepared: tuple, Z: np.ndarray, ple: np.ndarray, into: np.ndarray | None = None) -> None:
        """Z += norm(W_proj (act(W_gate Z) * ple)), in place: (d, b, n), ple (P, b, n) the block's own; or added
        to `into` instead (Gemma 3n's: AltUp's streams 1 .. K - 1, (K - 1, d, b, n))."""
        W_gate, W_proj, norm = prepared
        hidden = kernels.ACTIVATIONS[self.spec.activation](kernels.linear(W_gate, Z))
        hidden *= ple
        (Z if into is None else into)[...] += norm_kind(self.spec).apply(kernels.linear(W_proj, hidden), norm)


class PerLayerState:
    """A model's per-layer inputs ready for the pass: its own part's weights, each block's, and the table E_ple (an
    array or a matrix indexed as one: model/narrow.py's, rows as asked)."""

    def __init__(self, spec, layers: list, get, table) -> None:
        self.spec, self.model, self.table = spec, PerLayerInputs(spec), table
        self.blocks = [PerLayerInput(layer) for layer in layers]
        self.prepared = self.model.prepare(get)
        self.blocks_prepared = [
            b.prepare(lambda name, i=i: get(f"blocks.{i}.{name}")) for i, b in enumerate(self.blocks)
        ]

    def tokens(self, ids: np.ndarray, dtype: np.dtype) -> np.ndarray:
        return self.model.tokens(self.table, ids, dtype)

    def split(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pass's columns (d + N P, b, n) as the embedding's (d, b, n) and every block's input (N, P, b, n)."""
        d = self.spec.d
        return Z[:d], self.model.inputs(self.prepared, Z[:d], Z[d:])

    def add(self, i: int, Z: np.ndarray, ple: np.ndarray, into: np.ndarray | None = None) -> None:
        self.blocks[i].add(self.blocks_prepared[i], Z, ple, into)


def per_layer_inputs(spec) -> Component:
    return PerLayerInputs(spec) if spec.ple_dim else Component(spec)


def per_layer_input(spec) -> list[Component]:
    return [PerLayerInput(spec)] if spec.ple_dim else []


__all__ = ["PerLayerInput", "PerLayerInputs", "PerLayerState", "per_layer_input", "per_layer_inputs"]
