"""Parameter tensors of a spec, their counts, and the closed form they must agree with.

Nothing here allocates an array: shapes and counts are Python integers, exact for any size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import ExitCode, TfmError
from .spec import Spec


@dataclass(frozen=True)
class Tensor:
    """One parameter array: its name in the weights file, its shape, and the component it belongs to."""

    name: str
    shape: tuple[int, ...]
    component: str

    @property
    def count(self) -> int:
        return math.prod(self.shape)


def block_tensors(spec: Spec, i: int) -> list[Tensor]:
    """The tensors of block i, in weights-file order."""
    H, m, d, r = spec.H, spec.m, spec.d, spec.r
    p = f"blocks.{i}."
    out = [Tensor(p + f"attention.{w}", (H, m, d), "attention") for w in ("W_Q", "W_K", "W_V")]
    out.append(Tensor(p + "attention.W_O", (H, d, m), "attention"))
    if spec.attention_bias:
        out += [Tensor(p + f"attention.{b}", (H, m), "attention bias") for b in ("b_Q", "b_K", "b_V")]
        out.append(Tensor(p + "attention.b_O", (d,), "attention bias"))
    out += [
        Tensor(p + "ff.W1", (r, d), "feedforward"),
        Tensor(p + "ff.b1", (r,), "feedforward"),
        Tensor(p + "ff.W2", (d, r), "feedforward"),
        Tensor(p + "ff.b2", (d,), "feedforward"),
    ]
    if spec.norm != "none":
        out += [Tensor(p + f"{ln}.{g}", (d,), "layer norm") for ln in ("norm1", "norm2") for g in ("gamma", "beta")]
    return out


def global_tensors(spec: Spec) -> list[Tensor]:
    """The tensors outside the blocks: learned positions and pre-norm's final layer norm."""
    out = []
    if spec.positional == "learned":
        out.append(Tensor("positional.P", (spec.d, spec.max_len or 0), "positional"))
    if spec.norm == "pre":
        out += [Tensor(f"final_norm.{g}", (spec.d,), "final norm") for g in ("gamma", "beta")]
    return out


def all_tensors(spec: Spec) -> list[Tensor]:
    """Every parameter tensor of the model, in weights-file order."""
    out = [t for i in range(spec.N) for t in block_tensors(spec, i)]
    return out + global_tensors(spec)


@dataclass(frozen=True)
class Term:
    """One term of the closed form: its formula as text and its value."""

    formula: str
    value: int
    scope: str  # "block" (counted N times) or "model" (once)


def closed_form_terms(spec: Spec) -> list[Term]:
    """The closed-form count, term by term: the seed's 4Hmd + 2rd + r + d plus the variants' extras."""
    H, m, d, r = spec.H, spec.m, spec.d, spec.r
    terms = [Term("4Hmd", 4 * H * m * d, "block"), Term("2rd + r + d", 2 * r * d + r + d, "block")]
    if spec.attention_bias:
        terms.append(Term("3Hm + d", 3 * H * m + d, "block"))
    if spec.norm != "none":
        terms.append(Term("4d", 4 * d, "block"))
    if spec.norm == "pre":
        terms.append(Term("2d", 2 * d, "model"))
    if spec.positional == "learned":
        terms.append(Term("d*max_len", d * (spec.max_len or 0), "model"))
    return terms


@dataclass(frozen=True)
class ParamCount:
    """A spec's parameter count, from the tensor shapes and from the closed form."""

    spec: Spec
    block: list[Tensor]  # block 0's tensors; every block has the same shapes
    model: list[Tensor]  # tensors outside the blocks
    terms: list[Term]

    @property
    def per_block(self) -> int:
        return sum(t.count for t in self.block)

    @property
    def total(self) -> int:
        return self.spec.N * self.per_block + sum(t.count for t in self.model)

    @property
    def closed_per_block(self) -> int:
        return sum(t.value for t in self.terms if t.scope == "block")

    @property
    def closed_total(self) -> int:
        return self.spec.N * self.closed_per_block + sum(t.value for t in self.terms if t.scope == "model")

    def components(self) -> dict[str, int]:
        """Total parameters of each component over the whole model."""
        out: dict[str, int] = {}
        for tensor in self.block:
            out[tensor.component] = out.get(tensor.component, 0) + self.spec.N * tensor.count
        for tensor in self.model:
            out[tensor.component] = out.get(tensor.component, 0) + tensor.count
        return out

    def to_dict(self) -> dict[str, Any]:
        """Everything `tfm count` shows, as plain data (exact integers)."""
        return {
            "name": self.spec.label,
            "spec": self.spec.to_dict(),
            "per_block": self.per_block,
            "total": self.total,
            "closed_form": {
                "per_block": self.closed_per_block,
                "total": self.closed_total,
                "terms": [{"formula": t.formula, "value": t.value, "scope": t.scope} for t in self.terms],
            },
            "components": self.components(),
            "depends_on_sequence_length": False,
            "tensors": [  # block tensors once, named with {i}: listing N copies would not scale to any N
                {
                    "name": t.name.replace("blocks.0.", "blocks.{i}."),
                    "shape": list(t.shape),
                    "count": t.count,
                    "copies": self.spec.N if t.name.startswith("blocks.") else 1,
                    "component": t.component,
                }
                for t in self.block + self.model
            ],
        }


class CountMismatch(TfmError):
    """The count from the tensor shapes differs from the closed form: a bug in tfm, never ignored."""

    exit_code = ExitCode.VIOLATED


def count_params(spec: Spec, check: bool = True) -> ParamCount:
    """Count the parameters of `spec` from shapes alone; with `check`, raise unless the closed form agrees."""
    result = ParamCount(spec, block_tensors(spec, 0), global_tensors(spec), closed_form_terms(spec))
    if check and (result.per_block, result.total) != (result.closed_per_block, result.closed_total):
        raise CountMismatch(
            f"{spec.label}: tensor shapes give {result.per_block} per block and {result.total} in all, "
            f"but the closed form gives {result.closed_per_block} and {result.closed_total}"
        )
    return result
