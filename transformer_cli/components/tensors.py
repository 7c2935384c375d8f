"""A spec's parameter tensors, in weights-file order, from its components: what the formats read and write and the
cost model counts (analysis/params.py). Shapes only: nothing here allocates an array."""

from __future__ import annotations

from collections.abc import Iterator

from ..spec.definition import Spec
from ..spec.stacks import Stack, decoder, encoder, stacks
from . import block_components, encoder_model_components, model_components
from .base import Tensor


def stack_tensors(stack: Stack, i: int) -> list[Tensor]:
    """The tensors of a stack's block i, in weights-file order (its components', in the order of the pass)."""
    return [t for c in block_components(stack.layer(i)) for t in c.tensors(f"{stack.prefix}{i}.")]


def block_tensors(spec: Spec, i: int) -> list[Tensor]:
    """The tensors of block i (an encoder-decoder's decoder block i), in weights-file order."""
    return stack_tensors(decoder(spec), i)


def encoder_tensors(spec: Spec, i: int) -> list[Tensor]:
    """The tensors of an encoder-decoder's encoder block i (none for a decoder-only spec)."""
    stack = encoder(spec)
    return [] if stack is None else stack_tensors(stack, i)


def global_tensors(spec: Spec) -> list[Tensor]:
    """The tensors outside the blocks: the input's (learned positions), then the output's (final norm); an
    encoder-decoder's encoder's own (prefixed encoder_) first."""
    encoder = [t for c in encoder_model_components(spec) for t in c.tensors("encoder_")]
    return encoder + [t for c in model_components(spec) for t in c.tensors("")]


def iter_tensors(spec: Spec) -> Iterator[Tensor]:
    """Every parameter tensor in weights-file order, made one at a time (N may be 10**6): each stack's blocks, then
    the tensors outside them."""
    for stack in stacks(spec):
        for i in range(stack.spec.stored_blocks):  # (ALBERT's blocks share the weights of a few)
            yield from stack_tensors(stack, i)
    yield from global_tensors(spec)


def all_tensors(spec: Spec) -> list[Tensor]:
    """Every parameter tensor of the model, in weights-file order: the encoder's blocks, the blocks, the rest."""
    return list(iter_tensors(spec))


__all__ = ["all_tensors", "block_tensors", "encoder_tensors", "global_tensors", "iter_tensors", "stack_tensors"]
