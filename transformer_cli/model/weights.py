"""How a block's weights reach the pass: a provider asked per block, `weights.block(i)`, returns the block's states,
one per component as its `prepare` makes them: (attention, feedforward, norms, cross-attention or None).

`Prepared`, today's provider, prepares every block when the model is built. One that reads and upcasts a block
just in time from a checkpoint can take its place (`prepare_block` makes one block's states): the pass asks for
block i only when it reaches it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from ..components.base import Component
from ..components.cross import Cross, stack_cross
from ..components.norm import norm_kind
from ..kernels import Array
from ..spec.definition import Spec

# a block: its attention's weights, its feedforward's, its norms (norm1, norm2, norm1_out, norm2_out), and an
# encoder-decoder's decoder block's cross-attention (else None)
BlockState = tuple[Any, Any, tuple, Cross | None]


class BlockWeights(Protocol):
    """What the pass asks a block's weights from."""

    def block(self, i: int) -> BlockState: ...


def prepare_block(
    spec: Spec,
    weights: Mapping[str, Array],
    dtype: np.dtype,
    i: int,
    layer: tuple[Component, Component],
    norm: Component,
    reads_memory: bool = False,
) -> BlockState:
    """Block i's states from its tensors (blocks.{i}.*) in `dtype`: its attention's and feedforward's (`layer`) and
    its norms' `prepare`, and its cross-attention's where the stack reads a memory."""

    def get(name: str) -> Array:
        return np.asarray(weights[f"blocks.{i}.{name}"], dtype=dtype)

    attention, feedforward = layer
    cross = stack_cross(spec, weights, i, dtype, norm_kind(spec)) if reads_memory else None
    return (attention.prepare(get), feedforward.prepare(get), norm.prepare(get), cross)  # type: ignore[attr-defined]


class Prepared:
    """Every block's states, prepared up front from `weights` (tfm's tensor names) in `dtype`, by each block's
    components (`layers[i]`: its attention and its feedforward) and the stack's `norm`."""

    def __init__(
        self,
        spec: Spec,
        weights: Mapping[str, Array],
        dtype: np.dtype,
        layers: Sequence[tuple[Component, Component]],
        norm: Component,
        reads_memory: bool = False,
    ):
        self.blocks = [
            prepare_block(spec, weights, dtype, i, layer, norm, reads_memory) for i, layer in enumerate(layers)
        ]

    def block(self, i: int) -> BlockState:
        return self.blocks[i]

    def __len__(self) -> int:
        return len(self.blocks)

    def arrays(self) -> list[Array]:
        """Every array the prepared blocks hold (views included), as the model keeps them for the pass."""
        found: list[Array] = []
        _arrays(self.blocks, found)
        return found


def _arrays(state: object, found: list[Array]) -> None:
    """The arrays in a state: itself, or those of its items or its fields."""
    if isinstance(state, np.ndarray):
        found.append(state)
    elif isinstance(state, (tuple, list)):
        for item in state:
            _arrays(item, found)
    elif hasattr(state, "__dict__"):
        _arrays(list(vars(state).values()), found)
