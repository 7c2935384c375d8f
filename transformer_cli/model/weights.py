"""How a block's weights reach the pass: a provider asked per block, `weights.block(i)`, returns the block's states,
one per component as its `prepare` makes them: (attention, feedforward, norms, cross-attention or None).

`Prepared` prepares every block when the model is built: the fastest pass, holding every block in the compute
dtype. `JustInTime` prepares a block when the pass asks for it and keeps the few most recently used: with a weights
mapping that holds the tensors as stored (bfloat16, a GGUF file's blocks) and decodes one on access, the model then
holds the stored weights and one upcast block at a time.
"""

from __future__ import annotations

import ctypes
import math
import sys
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
    buffers: Buffers | None = None,
) -> BlockState:
    """Block i's states from its tensors (blocks.{i}.*) in `dtype`: its attention's and feedforward's (`layer`) and
    its norms' `prepare`, and its cross-attention's where the stack reads a memory; decoded into `buffers` where
    the weights can (BlockTensors)."""

    get = BlockTensors(weights, dtype, f"blocks.{i}.", buffers)
    attention, feedforward = layer
    cross = stack_cross(spec, weights, i, dtype, norm_kind(spec)) if reads_memory else None
    return (attention.prepare(get), feedforward.prepare(get), norm.prepare(get), cross)  # type: ignore[attr-defined]


class BlockTensors:
    """A block's tensors as its components' `prepare` asks for them: `get(name)` in the compute dtype, and
    `get.stacked(names, rows, width)` several in one array (W_Q over W_K over W_V, a gated feedforward's W1 over
    W3). Where the weights can decode a tensor straight into an array given them (`read_into`: a file's bfloat16
    tensors), each is decoded into its rows of the stack, or into `buffers` (memory a block no longer used held),
    so no tensor is made twice and no fresh memory is paged in for it."""

    def __init__(self, weights: Mapping[str, Array], dtype: np.dtype, prefix: str, buffers: Buffers | None = None):
        self.weights, self.dtype, self.prefix, self.buffers = weights, dtype, prefix, buffers
        self.read_into = getattr(weights, "read_into", None) if dtype == np.float32 else None

    def __call__(self, name: str) -> Array:
        if self.read_into is not None and self.buffers is not None:
            made = self.read_into(self.prefix + name, self._empty)
            if made is not None:
                return made
        return np.asarray(self.weights[self.prefix + name], dtype=self.dtype)

    def stacked(self, names: Sequence[str], rows: Sequence[int], width: int) -> Array:
        out = self._empty((sum(rows), width))
        start = 0
        for name, count in zip(names, rows, strict=True):
            part = out[start : start + count]
            start += count

            def given(shape: tuple[int, ...], part: Array = part) -> Array:
                return part.reshape(shape)  # (a view: the rows are contiguous)

            if self.read_into is None or self.read_into(self.prefix + name, given, keep_layout=False) is None:
                part[...] = np.reshape(self.weights[self.prefix + name], part.shape)
        return out

    def _empty(self, shape: tuple[int, ...]) -> Array:
        return np.empty(shape, self.dtype) if self.buffers is None else self.buffers.take(shape, self.dtype)


class Buffers:
    """The memory the blocks of a model made again and again are decoded into (streamed, or stored with fewer
    blocks kept than it has): a block no longer used leaves its arrays' memory here, and the next block is written
    into it rather than into memory mapped afresh, each of whose pages the kernel faults in and zeroes (three
    quarters of the time widening a bfloat16 block took here). A buffer is free when nothing but this list refers
    to it: every array made from it (views, reshapes, transposes) refers to it as its `base`, which the reference
    count counts; so a block still used (a thread's pass over its part of the batch, a check holding it) is never
    written over. At most `spare` bytes of free buffers are kept."""

    def __init__(self) -> None:
        self.held: list[np.ndarray] = []
        self.taken = 0  # bytes taken since the last trim: the block being made's
        self.spare = 0  # the most bytes one block took: free buffers beyond it are let go

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> Array:
        size = math.prod(shape) * dtype.itemsize
        self.taken += size
        for buffer in self.held:
            if buffer.nbytes == size and _free(buffer):
                return buffer.view(dtype).reshape(shape)
        buffer = np.empty(size, np.uint8)
        self.held.append(buffer)
        return buffer.view(dtype).reshape(shape)

    def trim(self) -> None:
        """Once a block is made: let go of free buffers beyond the bytes of the largest block made so far."""
        self.spare, self.taken = max(self.spare, self.taken), 0
        kept, free = [], 0
        for buffer in reversed(self.held):  # the most recently made kept first
            if _free(buffer):
                free += buffer.nbytes
                if free > self.spare:
                    continue
            kept.append(buffer)
        self.held = kept[::-1]


def _free(buffer: np.ndarray) -> bool:
    """Whether nothing but the pool's list refers to `buffer` (the list, the caller's name, this call's argument
    and getrefcount's own)."""
    return sys.getrefcount(buffer) <= 4


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
        norms: Sequence[Component],
        reads_memory: bool = False,
        keep: int = 1,
    ):
        self.spec, self.weights, self.dtype, self.layers, self.norms = spec, weights, dtype, layers, norms
        self.reads_memory, self.keep = reads_memory, max(1, keep)
        self.buffers: Buffers | None = None
        if self.keep < len(layers):  # blocks made and dropped again and again: into the memory of those dropped
            return_freed_memory()
            self.buffers = Buffers()
        self.kept: OrderedDict[int, BlockState] = OrderedDict()
        self.prepared = 0  # blocks prepared so far (a block asked again after it was dropped counts again)
        self._lock = threading.Lock()

    def block(self, i: int) -> BlockState:
        """Block i's states: those of the stored block it runs (spec.weights_of: ALBERT's share a few)."""
        return self.stored(self.spec.weights_of(i))

    def stored(self, i: int) -> BlockState:
        """Stored block i's states."""
        with self._lock:
            if i in self.kept:
                self.kept.move_to_end(i)
                return self.kept[i]
            following = (i + 1) % len(self.layers)  # the block a pass asks next (a decoding step: the first again)
            if following not in self.kept and hasattr(self.weights, "read_ahead"):  # a file: read it meanwhile
                self.weights.read_ahead(f"blocks.{following}.")
            layer, memory, buffers = self.layers[i], self.reads_memory, self.buffers
            state = prepare_block(self.spec, self.weights, self.dtype, i, layer, self.norms[i], memory, buffers)
            self.prepared += 1
            self.kept[i] = state
            if len(self.kept) > self.keep:  # drop the block used just before this one (see the class's note)
                del self.kept[list(self.kept)[-2]]
            if buffers is not None:
                buffers.trim()
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
        norms: Sequence[Component],
        reads_memory: bool = False,
    ):
        super().__init__(spec, weights, dtype, layers, norms, reads_memory, keep=len(layers))
        for i in range(len(layers)):
            self.stored(i)
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
