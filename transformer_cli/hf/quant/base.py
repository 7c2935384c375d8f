"""What a quantisation method makes a checkpoint hold in place of a weight, and the weight read back from it.

A `Scheme` is one config's quantisation (its `quantization_config`, read by the method's module). For a weight
the model holds, say `model.layers.0.self_attn.q_proj.weight` of shape (o, i), `packed` names the tensors a file
holds instead (`...q_proj.qweight` (i b / 32, o) int32, `...q_proj.scales`, ...), each with its shape, its dtypes
and its kind (codes, scales, zero points, index, metadata); `dequantise` rebuilds the weight from them. Whether a
weight is packed is read from the file: a method leaves some weights as they are (the head, routers, the
modules its config excludes), and the file holds either the plain weight or every packed tensor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ...errors import ArrayError
from ...families.keys import Keys

Shape = tuple[int, ...]


class Read(Protocol):
    """The stored tensors of one packed weight, by their names in the file, decoded (F8 and BF16 to float32)."""

    def __call__(self, name: str) -> np.ndarray: ...

    def has(self, name: str) -> bool: ...

    def where(self, name: str) -> str:
        """The file holding tensor `name`, for messages ('q/model-00001-of-00002.safetensors')."""
        ...


KINDS = ("codes", "scales", "zero points", "index", "metadata")  # what the bytes of a packed weight are


@dataclass(frozen=True)
class Stored:
    """One tensor a file holds for a packed weight: its shape (-1: any length), the dtypes it may have, its
    kind, and whether a file may leave it out."""

    shape: Shape
    codes: tuple[str, ...]
    kind: str = "codes"
    optional: bool = False

    def fits(self, shape: Shape) -> bool:
        return len(shape) == len(self.shape) and all(e in (-1, a) for a, e in zip(shape, self.shape, strict=True))


class Scheme:
    """One checkpoint's quantisation. Subclasses set `method` and `label` and define `packed` and `dequantise`;
    `refused` is why tfm does not run such weights (None: it dequantises them exactly as the format defines)."""

    method = ""
    label = ""
    refused: str | None = None

    def packed(self, name: str, shape: Shape) -> dict[str, Stored] | None:
        """The tensors the file holds in place of the weight `name` of `shape` (a file holding none of them but
        the weight itself, as a float, holds it unpacked); None for a weight never packed."""
        raise NotImplementedError

    def check(self, name: str, shape: Shape) -> None:
        """Refuse a weight the file holds packed that the method cannot hold as the config says (a group larger
        than its inputs, outputs that are not whole words): a SpecError naming config.json and the key. Called
        for each packed weight when the checkpoint is fitted, before any tensor is read, so that count, run and
        generate give the same verdict."""

    def dequantise(self, name: str, shape: Shape, read: Read) -> np.ndarray:
        """The weight `name` of `shape` from its packed tensors (float64 where the format's arithmetic is exact,
        else in the precision the format defines)."""
        raise NotImplementedError


def module(name: str) -> str | None:
    """'model.layers.0.mlp.down_proj.weight' -> 'model.layers.0.mlp.down_proj': the linear layer of a weight."""
    return name[: -len(".weight")] if name.endswith(".weight") else None


def linear(name: str, shape: Shape) -> str | None:
    """The module of an nn.Linear weight inside the blocks (2-D, in a numbered layer), else None: embeddings,
    norms, the head and biases are never packed by these methods unless a method says so."""
    prefix = module(name)
    if prefix is None or len(shape) != 2 or ".layers." not in f".{prefix}." and ".h." not in f".{prefix}.":
        return None
    return prefix


def unpack(
    packed: np.ndarray, bits: int, axis: int, count: int | None = None, order: tuple[int, ...] | None = None
) -> np.ndarray:
    """Unsigned integers of `bits` bits (1 to 8) packed into int32 words along `axis` as one little-endian stream
    of bits (a value may cross from one word into the next: GPTQ's 3 bits, compressed-tensors' dense packing),
    the first `count` of them (default: all the words hold). `order`, for a width dividing 32, gives the position
    within its word of each value (AWQ interleaves them)."""
    words = np.moveaxis(packed.astype(np.int64) & 0xFFFFFFFF, axis, -1).astype(np.uint64)
    count = words.shape[-1] * 32 // bits if count is None else count
    start = np.arange(count) * bits
    if order is not None:  # value j of each word is at position order[j]
        per = 32 // bits
        start = (start // (per * bits)) * (per * bits) + np.asarray(order)[np.arange(count) % per] * bits
    word, offset = start // 32, (start % 32).astype(np.uint64)
    padded = np.concatenate([words, np.zeros((*words.shape[:-1], 1), np.uint64)], axis=-1)
    low = padded[..., word] >> offset
    high = padded[..., word + 1] << (np.uint64(32) - offset)  # (the next word's bits, for a value crossing)
    values = ((low | high) & np.uint64((1 << bits) - 1)).astype(np.int64)
    return np.moveaxis(values, -1, axis)


def fitting_group(c: Keys, key: str, group: int, name: str, inputs: int, divides: bool = False) -> None:
    """Refuse a group size larger than the `inputs` of weight `name` (or, where the method's groups must divide
    the inputs, one that does not): a config error, found before anything is allocated."""
    if group > inputs:
        raise c.fail(key, group, f"at most the {inputs} inputs of {name} (a group larger than its inputs)")
    if divides and inputs % group:
        raise c.fail(key, group, f"a divisor of the {inputs} inputs of {name} (the method's groups divide them)")


def spread(per: np.ndarray, size: int, n: int, axis: int) -> np.ndarray:
    """One value per group of `size` along `axis` -> one per element of the n elements there (the last group may
    be short): a gather of n, whatever `size` (repeating each value `size` times first would allocate
    groups x size, gigabytes for a group of 10^7)."""
    return np.take(per, np.arange(n) // size, axis=axis)


def group_index(read: Read, name: str, inputs: int, groups: int) -> np.ndarray:
    """A g_idx tensor: each of the weight's `inputs` inputs' group, every one from 0 to `groups` - 1; anything
    else is an ArrayError naming the file, the tensor and the first bad value (NumPy would take -1 as the last
    group, and fail on 10^6 with an IndexError)."""
    index = read(name)
    if index.shape != (inputs,) or index.dtype.kind not in "iu":
        raise ArrayError(
            f"{read.where(name)}: tensor {name}: {index.dtype} {index.shape}, expected ({inputs},) "
            "integers, each input's group"
        )
    outside = np.flatnonzero((index < 0) | (index >= groups))
    if outside.size:
        k = int(outside[0])
        raise ArrayError(
            f"{read.where(name)}: tensor {name}: value {int(index[k])} at index {k} is not a group of the weight: "
            f"expected 0 to {groups - 1} (its scales hold {groups} groups)"
        )
    return index.astype(np.intp)


def bad(source: str, name: str, problem: str) -> ArrayError:
    return ArrayError(f"{source}: {name}: {problem}")


__all__ = [
    "KINDS",
    "Read",
    "Scheme",
    "Shape",
    "Stored",
    "bad",
    "fitting_group",
    "group_index",
    "linear",
    "module",
    "spread",
    "unpack",
]
