"""A family's checkpoint layout: where each of tfm's tensors is in a file of the family (Hugging Face's names, or
GGUF's). hf/layouts.py reads and writes a checkpoint by one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..spec.definition import Spec

# -- the families ---------------------------------------------------------------------------------------
# Each maps tfm's names to the checkpoint's: per block ("{i}" the block), and global. A norm is named by its
# module: its gamma is `.weight`, its beta `.bias`. Fused tensors list their pieces; experts (and
# the heads of a norm per head) use "{e}".

LINEAR = {"W": "weight", "b": "bias"}


def linear_names(ours: str, theirs: str, parts: str = "Wb") -> dict[str, str]:
    """'attention.{}_Q', 'self_attn.q_proj' -> W_Q -> ...weight, b_Q -> ...bias."""
    return {ours.format(p): f"{theirs}.{LINEAR[p]}" for p in parts}


def norm_names(ours: str, theirs: str) -> dict[str, str]:
    return {f"{ours}.gamma": f"{theirs}.weight", f"{ours}.beta": f"{theirs}.bias"}


def attention_names(ours: str, theirs: str, projections: tuple[str, str, str, str], parts: str) -> dict[str, str]:
    """'attention', 'layer.0.SelfAttention', (q, k, v, o) -> W_Q -> ...q.weight, and so on."""
    names: dict[str, str] = {}
    for x, proj in zip("QKVO", projections, strict=True):
        names |= linear_names(ours + ".{}_" + x, f"{theirs}.{proj}", parts)
    return names


Parts = tuple[tuple[str, Callable[[Spec], int]], ...]  # (checkpoint name, its rows from the block's spec), in order


@dataclass(frozen=True)
class Family:
    """One model_type's checkpoint names. `fused` lists checkpoint tensors that hold several tfm tensors, with
    their group count as a function of the spec; `transposed` marks Conv1D weights. An encoder-decoder's
    encoder blocks (`encoder.{j}.`) have names of their own; `copies` are tied tensors a file may hold beside
    the one read (accepted, never read); `zero_buffers` are buffers in files that must be zero (checked on read);
    `computed` makes a tensor, by its checkpoint name, that the family's files leave out (Marian's sinusoids)."""

    block: str  # prefix of block i's names (the decoder's in an encoder-decoder)
    names: dict[str, str]  # tfm name within a block -> checkpoint name within the block
    globals_: dict[str, str]  # tfm global name -> checkpoint name
    fused: tuple[tuple[str, tuple[str, ...], Callable[[Spec], int]], ...] = ()
    transposed: frozenset[str] = frozenset()
    encoder_block: str = ""  # prefix of encoder block j's names
    encoder_names: dict[str, str] = field(default_factory=dict)
    copies: dict[str, str] = field(default_factory=dict)  # checkpoint name -> the tfm tensor it is a copy of
    zero_buffers: tuple[str, ...] = ()
    # (name within a block, value): a module's buffers tfm holds as constants (checked; written beside its tensors)
    fixed_buffers: tuple[tuple[str, float], ...] = ()
    computed: dict[str, Callable[[Spec], Any]] = field(default_factory=dict)  # name -> its table where a file lacks it
    stacked: frozenset[str] = frozenset()  # checkpoint names holding every expert on a leading axis (gpt-oss)
    leading_one: frozenset[str] = frozenset()  # fused names held with a leading axis of one (ERNIE's (1, E) bias)
    flat: frozenset[str] = frozenset()  # stacked names with the experts' blocks on the rows, (E r, d) (DBRX's)
    hints: dict[str, str] = field(default_factory=dict)  # checkpoint name -> why it may be missing
    # two blocks a checkpoint layer (LongCat-Flash's): block i is layer i // 2, its sublayers' names with {side} i % 2
    pairs: bool = False
    # checkpoint name -> the shape its tensor is held in, from the block's spec and tfm's shape (a Conv1d's (d, 1, L)
    # kernel as GGUF's (d, L); Mamba-2's (H,) A as (H, 1), its norm's (I,) gain as (G, I / G))
    held_as: Mapping[str, Callable[[Spec, tuple[int, ...]], tuple[int, ...]]] = field(default_factory=dict)
    # per-expert names ("{e}") a file holds for the zero experts too, E <= e < E + Z, never read, written as zeros
    # (LongCat-Flash's gate and up projections, which transformers allocates for them)
    zero_experts: tuple[str, ...] = ()
    # tfm name within a block -> the checkpoint tensors holding its rows, one after the other, each with its number of
    # rows from the block's spec (OLMo-Hybrid's convolution over [q; k; v], held as q_conv1d, k_conv1d, v_conv1d)
    row_parts: Mapping[str, Parts | Callable[[Spec], Parts]] = field(default_factory=dict)  # (or the block's own)
    integers: tuple[str, ...] = ()  # names within a block a file holds as integers (DeepSeek-V4's tables of ids)


__all__ = ["LINEAR", "Family", "attention_names", "linear_names", "norm_names"]
