"""Parameter tensors of a spec, their counts, and the closed form they must agree with.

The tensors and the terms come from the spec's components (components/); nothing here allocates an array:
shapes and counts are Python integers, exact for any size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..components import Tensor, Term, block_components, components, model_components
from ..errors import ExitCode, TfmError
from ..spec.definition import Spec


def block_tensors(spec: Spec, i: int) -> list[Tensor]:
    """The tensors of block i, in weights-file order (each block component's, in the order of the pass)."""
    return [t for c in block_components(spec) for t in c.tensors(f"blocks.{i}.")]


def global_tensors(spec: Spec) -> list[Tensor]:
    """The tensors outside the blocks: the input's (learned positions), then the output's (final norm)."""
    return [t for c in model_components(spec) for t in c.tensors("")]


def all_tensors(spec: Spec) -> list[Tensor]:
    """Every parameter tensor of the model, in weights-file order."""
    out = [t for i in range(spec.N) for t in block_tensors(spec, i)]
    return out + global_tensors(spec)


def closed_form_terms(spec: Spec) -> list[Term]:
    """The closed-form count, term by term: the seed's 4Hmd + 2rd + r + d first, then the components' extras."""
    terms = [t for c in block_components(spec) + model_components(spec) for t in c.terms()]
    return [t for t in terms if t.seed] + [t for t in terms if not t.seed]


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
    def active(self) -> int:
        """Parameters one token's pass uses: all of them, less the experts it is not routed to."""
        return self.total - sum(c.inactive() for c in components(self.spec))

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
            "active_per_token": self.active,
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


__all__ = ["CountMismatch", "ParamCount", "Tensor", "Term", "all_tensors", "block_tensors", "closed_form_terms",
           "count_params", "global_tensors"]  # fmt: skip
