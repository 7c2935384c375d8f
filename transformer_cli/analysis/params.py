"""Parameter tensors of a spec, their counts, and the closed form they must agree with.

The tensors and the terms come from the spec's components (components/); nothing here allocates an array:
shapes and counts are Python integers, exact for any size.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..components import (
    Tensor,
    Term,
    block_components,
    components,
    encoder_block_components,
    encoder_model_components,
    model_components,
)
from ..errors import ExitCode, TfmError
from ..spec.definition import Spec


def block_tensors(spec: Spec, i: int) -> list[Tensor]:
    """The tensors of block i, in weights-file order (each block component's, in the order of the pass)."""
    return [t for c in block_components(spec) for t in c.tensors(f"blocks.{i}.")]


def encoder_tensors(spec: Spec, i: int) -> list[Tensor]:
    """The tensors of an encoder-decoder's encoder block i (none for a decoder-only spec)."""
    return [t for c in encoder_block_components(spec) for t in c.tensors(f"encoder.{i}.")]


def global_tensors(spec: Spec) -> list[Tensor]:
    """The tensors outside the blocks: the input's (learned positions), then the output's (final norm); an
    encoder-decoder's encoder's own (prefixed encoder_) first."""
    encoder = [t for c in encoder_model_components(spec) for t in c.tensors("encoder_")]
    return encoder + [t for c in model_components(spec) for t in c.tensors("")]


def all_tensors(spec: Spec) -> list[Tensor]:
    """Every parameter tensor of the model, in weights-file order: the encoder's blocks, the blocks, the rest."""
    out = [t for i in range(spec.N_enc or 0) for t in encoder_tensors(spec, i)]
    out += [t for i in range(spec.N) for t in block_tensors(spec, i)]
    return out + global_tensors(spec)


def closed_form_terms(spec: Spec) -> list[Term]:
    """The closed-form count, term by term: the seed's 4Hmd + 2rd + r + d first, then the components' extras;
    an encoder's block terms have the scope 'encoder block' (counted N_enc times)."""
    terms = [t for c in block_components(spec) + model_components(spec) for t in c.terms()]
    encoder = [replace(t, scope="encoder block") if t.scope == "block" else t
               for c in encoder_block_components(spec) + encoder_model_components(spec) for t in c.terms()]  # fmt: skip
    ordered = [t for t in terms if t.seed] + [t for t in terms if not t.seed]
    return ordered + [t for t in encoder if t.seed] + [t for t in encoder if not t.seed]


@dataclass(frozen=True)
class ParamCount:
    """A spec's parameter count, from the tensor shapes and from the closed form."""

    spec: Spec
    block: list[Tensor]  # block 0's tensors; every block has the same shapes
    model: list[Tensor]  # tensors outside the blocks
    terms: list[Term]
    encoder: list[Tensor] = field(default_factory=list)  # an encoder-decoder's encoder block 0's tensors

    @property
    def per_block(self) -> int:
        return sum(t.count for t in self.block)

    @property
    def per_encoder_block(self) -> int:
        return sum(t.count for t in self.encoder)

    @property
    def total(self) -> int:
        encoder = (self.spec.N_enc or 0) * self.per_encoder_block
        return self.spec.N * self.per_block + encoder + sum(t.count for t in self.model)

    @property
    def active(self) -> int:
        """Parameters one token's pass uses: all of them, less the experts it is not routed to."""
        return self.total - sum(c.inactive() for c in components(self.spec))

    @property
    def closed_per_block(self) -> int:
        return sum(t.value for t in self.terms if t.scope == "block")

    @property
    def closed_per_encoder_block(self) -> int:
        return sum(t.value for t in self.terms if t.scope == "encoder block")

    @property
    def closed_total(self) -> int:
        encoder = (self.spec.N_enc or 0) * self.closed_per_encoder_block
        return self.spec.N * self.closed_per_block + encoder + sum(t.value for t in self.terms if t.scope == "model")

    def components(self) -> dict[str, int]:
        """Total parameters of each component over the whole model (an encoder's prefixed 'encoder ')."""
        out: dict[str, int] = {}
        copies = [(t.component, self.spec.N * t.count) for t in self.block]
        copies += [(f"encoder {t.component}", (self.spec.N_enc or 0) * t.count) for t in self.encoder]
        for name, count in copies + [(t.component, t.count) for t in self.model]:
            out[name] = out.get(name, 0) + count
        return out

    def to_dict(self) -> dict[str, Any]:
        """Everything `tfm count` shows, as plain data (exact integers)."""
        return {
            "name": self.spec.label,
            "spec": self.spec.to_dict(),
            "per_block": self.per_block,
            **({"per_encoder_block": self.per_encoder_block} if self.spec.N_enc else {}),
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
            ]
            + [  # an encoder's block tensors once, named with {i}
                {
                    "name": t.name.replace("encoder.0.", "encoder.{i}."),
                    "shape": list(t.shape),
                    "count": t.count,
                    "copies": self.spec.N_enc,
                    "component": t.component,
                }
                for t in self.encoder
            ],
        }


class CountMismatch(TfmError):
    """The count from the tensor shapes differs from the closed form: a bug in tfm, never ignored."""

    exit_code = ExitCode.VIOLATED


def count_params(spec: Spec, check: bool = True) -> ParamCount:
    """Count the parameters of `spec` from shapes alone; with `check`, raise unless the closed form agrees."""
    result = ParamCount(spec, block_tensors(spec, 0), global_tensors(spec), closed_form_terms(spec),
                        encoder_tensors(spec, 0) if spec.N_enc else [])  # fmt: skip
    if check and (result.per_block, result.total) != (result.closed_per_block, result.closed_total):
        raise CountMismatch(
            f"{spec.label}: tensor shapes give {result.per_block} per block and {result.total} in all, "
            f"but the closed form gives {result.closed_per_block} and {result.closed_total}"
        )
    return result


__all__ = ["CountMismatch", "ParamCount", "Tensor", "Term", "all_tensors", "block_tensors", "closed_form_terms",
           "count_params", "encoder_tensors", "global_tensors"]  # fmt: skip
