"""How a block's weights reach the pass: a provider asked per block, `weights.block(i)`, returns the block's states,
one per component as its `prepare` makes them: (attention, feedforward, norms, cross-attention or None).

`Prepared` prepares every block when the model is built: the fastest pass, holding every block in the compute
dtype. `JustInTime` prepares a block when the pass asks for it and keeps the few most recently used: with a weights
mapping that holds the tensors as stored (bfloat16, a GGUF file's blocks) and decodes one on access, the model then
holds the stored weights and one upcast block at a time.
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
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

    get = BlockTensors(weights, dtype, f"blocks.{i}.")
    attention, feedforward = layer
    cross = stack_cross(spec, weights, i, dtype, norm_kind(spec)) if reads_memory else None
    return (attention.prepare(get), feedforward.prepare(get), norm.prepare(get), cross)  # type: ignore[attr-defined]


class BlockTensors:
    """A block's tensors as its components' `prepare` asks for them: `get(name)` in the compute dtype, and
    `get.stacked(names, shape)` several in one array (a gated feedforward's W1 over W3), each decoded straight
    into its rows where the weights can (`read_into`: a file's bfloat16 tensors), so no tensor is made twice."""

    def __init__(self, weights: Mapping[str, Array], dtype: np.dtype, prefix: str):
        self.weights, self.dtype, self.prefix = weights, dtype, prefix

    def __call__(self, name: str) -> Array:
        return np.asarray(self.weights[self.prefix + name], dtype=self.dtype)

    def stacked(self, names: Sequence[str], shape: tuple[int, ...]) -> Array:
        out = np.empty((len(names) * shape[0], *shape[1:]), dtype=self.dtype)
        into = getattr(self.weights, "read_into", None)
        for k, name in enumerate(names):
            rows = out[k * shape[0] : (k + 1) * shape[0]]
            if into is None or not into(self.prefix + name, rows):
                rows[...] = self.weights[self.prefix + name]
        return out


def return_freed_memory() -> None:
    """Have glibc give every freed allocation of 1 MiB or more back to the system at once (mallopt's
    M_MMAP_THRESHOLD, set: it no longer rises to the largest array freed so far, up to 32 MiB, below which freed
    arrays stay in the heap). Blocks made just in time allocate and free their arrays at every pass: with the
    threshold rising, a streamed `tfm verify` held 200 MiB beyond its start where its arrays took 90. Elsewhere
    than glibc, nothing."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(-3, 1 << 20)  # M_MMAP_THRESHOLD = -3 (malloc.h)
    except (OSError, AttributeError):
        pass


class JustInTime:
    """Each block's states prepared from `weights` when the pass asks for them, `keep` of them kept (at least 1):
    `weights` is read for block i's tensors only then. Threads over the batch may ask at once; a block is prepared
    once for them while it is kept.

    A file's weights that can read ahead (`read_ahead(prefix)`: a Hugging Face folder, a GGUF file) are asked to
    start reading the next block's bytes before this one is made, so the disk works while the pass computes.

    When one more is prepared than `keep` holds, the block used just before it is dropped, not the one used longest
    ago: a pass (a decoding step) visits the blocks in turn, so the one used longest ago is the next one it needs,
    and dropping the least recently used would keep none for the next pass; this way keep - 1 stay (Belady's choice
    for a cyclic order)."""

    def __init__(
        self,
        spec: Spec,
        weights: Mapping[str, Array],
        dtype: np.dtype,
        layers: Sequence[tuple[Component, Component]],
        norm: Component,
        reads_memory: bool = False,
        keep: int = 1,
    ):
        self.spec, self.weights, self.dtype, self.layers, self.norm = spec, weights, dtype, layers, norm
        self.reads_memory, self.keep = reads_memory, max(1, keep)
        if self.keep < len(layers):  # blocks made and dropped again and again
            return_freed_memory()
        self.kept: OrderedDict[int, BlockState] = OrderedDict()
        self.prepared = 0  # blocks prepared so far (a block asked again after it was dropped counts again)
        self._lock = threading.Lock()

    def block(self, i: int) -> BlockState:
        with self._lock:
            if i in self.kept:
                self.kept.move_to_end(i)
                return self.kept[i]
            following = (i + 1) % len(self.layers)  # the block a pass asks next (a decoding step: the first again)
            if following not in self.kept and hasattr(self.weights, "read_ahead"):  # a file: read it meanwhile
                self.weights.read_ahead(f"blocks.{following}.")
            state = prepare_block(self.spec, self.weights, self.dtype, i, self.layers[i], self.norm, self.reads_memory)
            self.prepared += 1
            self.kept[i] = state
            if len(self.kept) > self.keep:  # drop the block used just before this one (see the class's note)
                del self.kept[list(self.kept)[-2]]
            return state

    def __len__(self) -> int:
        return len(self.layers)

    def arrays(self) -> list[Array]:
        """Every array the kept blocks hold."""
        found: list[Array] = []
        _arrays(list(self.kept.values()), found)
        return found


class Prepared(JustInTime):
    """Every block's states, prepared up front from `weights` (tfm's tensor names) in `dtype`, by each block's
    components (`layers[i]`: its attention and its feedforward) and the stack's `norm`; `weights` is not kept."""

    def __init__(
        self,
        spec: Spec,
        weights: Mapping[str, Array],
        dtype: np.dtype,
        layers: Sequence[tuple[Component, Component]],
        norm: Component,
        reads_memory: bool = False,
    ):
        super().__init__(spec, weights, dtype, layers, norm, reads_memory, keep=len(layers))
        for i in range(len(layers)):
            self.block(i)
        self.weights = {}  # every block kept: the tensors they came from are no longer needed


def _arrays(state: object, found: list[Array]) -> None:
    """The arrays in a state: itself, or those of its items or its fields."""
    if isinstance(state, np.ndarray):
        found.append(state)
    elif isinstance(state, (tuple, list)):
        for item in state:
            _arrays(item, found)
    elif hasattr(state, "__dict__"):
        _arrays(list(vars(state).values()), found)
