"""Parameter tensors of a spec, their counts, and the closed form they must agree with.

The tensors and the terms come from the spec's components (components/); nothing here allocates an array:
shapes and counts are Python integers, exact for any size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..components import (
    Tensor,
    Term,
    block_components,
    components,
    encoder_model_components,
    model_components,
)
from ..components.tensors import global_tensors, stack_tensors
from ..errors import ExitCode, TfmError
from ..spec.definition import Spec
from ..spec.stacks import Group, Stack, stacks


@dataclass(frozen=True)
class Blocks:
    """Blocks of one stack with the same tensors: which they are, the first one's tensors, their closed form.

    `scope` names them in the closed form's terms: 'block' (a stack whose blocks are alike), 'encoder block', or
    the kind of the blocks where a stack's differ ('dense block', 'routed block').
    """

    stack: str
    scope: str
    layers: Sequence[int]  # a range in a uniform stack (N may be 10**100, past len())
    copies: int  # how many they are
    tensors: list[Tensor]
    terms: list[Term]

    @property
    def per_block(self) -> int:
        return sum(t.count for t in self.tensors)

    @property
    def closed_per_block(self) -> int:
        return sum(t.value for t in self.terms)

    @property
    def runs(self) -> int:
        """The blocks that run these tensors: copies, or more where blocks share weights (ALBERT's); N may be any
        size (a range's length is not taken)."""
        layers = self.layers
        return layers.stop - layers.start if isinstance(layers, range) else len(layers)


def _scoped(terms: list[Term], scope: str) -> list[Term]:
    return [replace(t, scope=scope) if t.scope == "block" else t for t in terms]


def stack_blocks(stack: Stack) -> list[Blocks]:
    """A stack's blocks by their tensors: groups of layers alike, merged where they differ only in how they
    attend (a sliding block and a full one have the same tensors)."""
    groups = stack.groups()
    if len(groups) == 1:  # a uniform stack (N may be any size: its layers are a range)
        (group,) = groups
        scope = "encoder block" if stack.name == "encoder" else "block"
        return [_blocks(stack, group.spec, scope, group.layers, group.spec.stored_blocks)]
    found: dict[tuple[Any, ...], list[Group]] = {}  # (by the layer's tensors' names and shapes)
    for group in groups:
        i = group.layers[0]
        shapes = tuple((t.name.removeprefix(f"{stack.prefix}{i}."), t.shape) for t in stack_tensors(stack, i))
        found.setdefault(shapes, []).append(group)
    sections = list(found.values())
    # named by the per-layer keys each section has one kind of (the feedforward's: its tensors differ)
    keys = [p for p in range(len(groups[0].kinds)) if all(len({g.kinds[p] for g in alike}) == 1 for alike in sections)]
    out = []
    for alike in sections:
        scope = " ".join(alike[0].kinds[p] for p in keys) + " block" if len(sections) > 1 else "block"
        layers = tuple(sorted(i for g in alike for i in g.layers))
        out.append(_blocks(stack, alike[0].spec, scope, layers, len(layers)))
    return out


def _blocks(stack: Stack, spec: Spec, scope: str, layers: Sequence[int], copies: int) -> Blocks:
    terms = [t for c in block_components(spec) for t in c.terms() if t.scope == "block"]
    terms = _seed_first(_scoped(terms, scope))
    return Blocks(stack.name, scope, layers, copies, stack_tensors(stack, layers[0]), terms)


def _seed_first(terms: list[Term]) -> list[Term]:
    return [t for t in terms if t.seed] + [t for t in terms if not t.seed]


@dataclass(frozen=True)
class ParamCount:
    """A spec's parameter count, from the tensor shapes and from the closed form."""

    spec: Spec
    sections: list[Blocks]  # the blocks' (an encoder-decoder's decoder's first), by their tensors
    model: list[Tensor]  # tensors outside the blocks
    model_terms: list[Term]
    encoder_terms: list[Term] = field(default_factory=list)  # the encoder's terms outside its blocks

    @property
    def decoder(self) -> list[Blocks]:
        return [s for s in self.sections if s.stack == "blocks"]

    @property
    def uniform(self) -> bool:
        """Every block (of the decoder) has the same tensors."""
        return len(self.decoder) == 1

    @property
    def block(self) -> list[Tensor]:
        """Block 0's tensors (every block's, in a uniform stack)."""
        return self.decoder[0].tensors

    @property
    def encoder(self) -> list[Tensor]:
        """An encoder-decoder's encoder block 0's tensors ([] for one stack)."""
        return next((s.tensors for s in self.sections if s.stack == "encoder"), [])

    @property
    def terms(self) -> list[Term]:
        """The closed form term by term: the seed's first, then the components' extras; an encoder's after."""
        blocks = [t for s in self.decoder for t in s.terms]
        encoder = [t for s in self.sections if s.stack == "encoder" for t in s.terms] + self.encoder_terms
        return _seed_first(blocks + self.model_terms) + _seed_first(encoder)

    @property
    def per_block(self) -> int | None:
        """Parameters of one block, or None where the blocks differ (then: each section's)."""
        return self.decoder[0].per_block if self.uniform else None

    @property
    def per_encoder_block(self) -> int:
        return sum(t.count for t in self.encoder)

    @property
    def total(self) -> int:
        return sum(s.copies * s.per_block for s in self.sections) + sum(t.count for t in self.model)

    @property
    def active(self) -> int:
        """Parameters one token's pass uses: all of them, less the experts it is not routed to."""
        return self.total - sum(c.inactive() for c in components(self.spec))

    @property
    def active_without_embedding(self) -> int:
        """`active` less the token embedding table, of which a token reads one column: OpenAI's convention (gpt-oss's
        published 3.61B and 5.13B active). A head tied to the table reads all of it: then the same as `active`."""
        if self.spec.tie_embeddings and self.spec.head:
            return self.active
        return self.active - sum(t.count for t in self.model if t.name == "embedding.E")

    @property
    def closed_per_block(self) -> int | None:
        return self.decoder[0].closed_per_block if self.uniform else None

    @property
    def closed_per_encoder_block(self) -> int:
        return sum(s.closed_per_block for s in self.sections if s.stack == "encoder")

    @property
    def closed_total(self) -> int:
        outside = sum(t.value for t in self.model_terms + self.encoder_terms)
        return sum(s.copies * s.closed_per_block for s in self.sections) + outside

    @property
    def tensor_count(self) -> int:
        """How many tensors the weights file holds."""
        return sum(s.copies * len(s.tensors) for s in self.sections) + len(self.model)

    def shapes(self) -> list[tuple[int, ...]]:
        """The shape of every different tensor: each section's first block's, and those outside the blocks."""
        return [t.shape for s in self.sections for t in s.tensors] + [t.shape for t in self.model]

    def components(self) -> dict[str, int]:
        """Total parameters of each component over the whole model (an encoder's prefixed 'encoder ')."""
        out: dict[str, int] = {}
        copies = [
            (t.component if s.stack == "blocks" else f"encoder {t.component}", s.copies * t.count)
            for s in self.sections
            for t in s.tensors
        ]
        for name, count in copies + [(t.component, t.count) for t in self.model]:
            out[name] = out.get(name, 0) + count
        return out

    def to_dict(self) -> dict[str, Any]:
        """Everything `tfm count` shows, as plain data (exact integers)."""
        blocks = (
            []
            if self.uniform
            else [  # (a uniform stack's layers are a range of any size: not listed)
                {
                    "kind": s.scope.removesuffix(" block"),
                    "layers": list(s.layers),
                    "per_block": s.per_block,
                    "closed_per_block": s.closed_per_block,
                }
                for s in self.decoder
            ]
        )
        return {
            "name": self.spec.label,
            "spec": self.spec.to_dict(),
            "per_block": self.per_block,
            **({} if self.uniform else {"blocks": blocks}),
            **({"per_encoder_block": self.per_encoder_block} if self.encoder else {}),
            "total": self.total,
            "active_per_token": self.active,
            "active_per_token_without_embedding": self.active_without_embedding,
            "closed_form": {
                "per_block": self.closed_per_block,
                "total": self.closed_total,
                "terms": [{"formula": t.formula, "value": t.value, "scope": t.scope} for t in self.terms],
            },
            "components": self.components(),
            "depends_on_sequence_length": False,
            "tensors": [  # block tensors once, named with {i}: listing N copies would not scale to any N
                {
                    "name": t.name.replace(f"blocks.{s.layers[0]}.", "blocks.{i}."),
                    "shape": list(t.shape),
                    "count": t.count,
                    "copies": s.copies,
                    "component": t.component,
                    **({} if self.uniform or s.stack == "encoder" else {"layers": list(s.layers)}),
                }
                for s in self.decoder
                for t in s.tensors
            ]
            + [
                {"name": t.name, "shape": list(t.shape), "count": t.count, "copies": 1, "component": t.component}
                for t in self.model
            ]
            + [  # an encoder's block tensors once, named with {i}
                {
                    "name": t.name.replace("encoder.0.", "encoder.{i}."),
                    "shape": list(t.shape),
                    "count": t.count,
                    "copies": s.copies,
                    "component": t.component,
                }
                for s in self.sections
                if s.stack == "encoder"
                for t in s.tensors
            ],
        }


class CountMismatch(TfmError):
    """The count from the tensor shapes differs from the closed form: a bug in tfm, never ignored."""

    exit_code = ExitCode.VIOLATED


def count_params(spec: Spec, check: bool = True) -> ParamCount:
    """Count the parameters of `spec` from shapes alone; with `check`, raise unless the closed form agrees."""
    found = stacks(spec)
    sections = [b for stack in found[::-1] for b in stack_blocks(stack)]  # the decoder's first, as shown
    model_terms = [t for c in model_components(spec) for t in c.terms()]
    encoder_terms = [t for c in encoder_model_components(spec) for t in c.terms()]
    result = ParamCount(spec, sections, global_tensors(spec), model_terms, encoder_terms)
    if check:
        for s in sections:
            if s.per_block != s.closed_per_block:
                raise CountMismatch(
                    f"{spec.label}: tensor shapes give {s.per_block} per {s.scope} and {result.total} in all, "
                    f"but the closed form gives {s.closed_per_block} and {result.closed_total}"
                )
        if result.total != result.closed_total:
            raise CountMismatch(
                f"{spec.label}: tensor shapes give {result.total} in all, but the closed form gives "
                f"{result.closed_total}"
            )
    return result


__all__ = [
    "Blocks",
    "CountMismatch",
    "ParamCount",
    "Tensor",
    "Term",
    "count_params",
]
