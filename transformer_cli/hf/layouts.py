"""Where each tfm tensor is in a Hugging Face checkpoint, family by family, and how to turn one into the other.

tfm's tensors are in the column layout (`blocks.0.attention.W_Q` is (H, m, d), `embedding.E` is (d, V)). A
checkpoint holds `nn.Linear` weights as (out, in). Every tfm tensor has a "rows form" in that convention:
W_Q (H, m, d) is (Hm, d); W_O (H, d, m) is (d, Hm); E (d, V) is (V, d); a bias (H, m) is (Hm,). A checkpoint
tensor is then one or more rows forms stacked along the rows, possibly interleaved in groups (GPT-NeoX's
query_key_value holds [q_h | k_h | v_h] for each head h: 3 pieces in H groups), and possibly stored transposed
(GPT-2's Conv1D keeps (in, out)). A `Rule` says exactly that for one checkpoint tensor, so reading and writing
are the same rule run both ways, and the expected names and shapes follow from the spec without any data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ..components.tensors import all_tensors, global_tensors, stack_tensors
from ..families.layout import Family
from ..spec.definition import Spec
from ..spec.stacks import Stack, stacks

Array = np.ndarray
COLUMNS = ("E", "T", "P", "R")  # tables of columns, (d, rows): a checkpoint's nn.Embedding holds their rows
AS_STORED = (
    "rel_bias",
    "kernel",
    "A_log",
    "ape",
    "router_hash",
    "table",
)  # tensors a checkpoint holds in tfm's own shape


def rows_form(name: str, array: Array, spec: Spec) -> Array:
    """A tfm tensor as a checkpoint holds it (nn.Linear's (out, in)): a view where the layout allows."""
    leaf = name.rsplit(".", 1)[-1].split("[")[0]
    if leaf in COLUMNS:  # (d, V) columns -> (V, d) rows
        return array.T
    if leaf in AS_STORED:  # (buckets, H), T5's nn.Embedding table; (d, 1, L) a Conv1d's; Mamba's (I, N) A_log
        return array
    if leaf == "W_O":  # (H, d, m) -> (d, Hm)
        return array.transpose(1, 0, 2).reshape(array.shape[1], -1)  # (d: an encoder's own, T5Gemma's)
    if leaf.startswith("W") or leaf == "router":
        return array.reshape(-1, array.shape[-1])
    if leaf == "gamma" and array.ndim == 2:  # a norm per head, (heads, m): Cohere's q_norm as it is
        return array
    return array.reshape(-1)  # biases and norm parameters


def from_rows(name: str, rows: Array, shape: tuple[int, ...]) -> Array:
    """The inverse of rows_form: a checkpoint's (out, in) rows as tfm's tensor of `shape`."""
    leaf = name.rsplit(".", 1)[-1].split("[")[0]
    if leaf in COLUMNS:
        return rows.T
    if leaf == "W_O":
        H, d, m = shape
        return rows.reshape(d, H, m).transpose(1, 0, 2)
    return rows.reshape(shape)


@dataclass(frozen=True)
class Rule:
    """One checkpoint tensor: the tfm tensors it holds (rows stacked in this order, in `groups` interleaved
    groups), stored transposed or not. A tfm name may pick one expert: 'blocks.0.ff.W1[3]'. With `experts` E, the
    tensor holds every expert's rows, one block of them per expert on a leading axis E (gpt-oss), transposed
    within each block; 1 is a leading axis of one (ERNIE's (1, E) correction bias)."""

    hf: str
    tfm: tuple[str, ...]
    groups: int = 1
    transposed: bool = False
    experts: int = 0
    flat: bool = False  # the experts' blocks one after the other on the rows, (E rows, ...) (DBRX's w2)
    zeros: tuple[int, ...] = ()  # no tfm tensor: zeros of this shape, never read (Family.zero_experts)
    held: tuple[int, ...] = ()  # the shape the checkpoint holds its one tfm tensor in, where not tfm's (Family.held_as)


def rows_of(shape: tuple[int, ...], name: str) -> tuple[int, tuple[int, ...]]:
    """(rows, trailing shape) of a tfm tensor's rows form, from its shape alone."""
    leaf = name.rsplit(".", 1)[-1].split("[")[0]
    if leaf in COLUMNS:
        return shape[1], (shape[0],)
    if leaf in AS_STORED:
        return shape[0], shape[1:]
    if leaf == "W_O":
        return shape[1], (shape[0] * shape[2],)
    if leaf.startswith("W") or leaf == "router":
        return math.prod(shape[:-1]), (shape[-1],)
    if leaf == "gamma" and len(shape) == 2:
        return shape[0], shape[1:]
    return math.prod(shape), ()


def hf_shape(rule: Rule, shapes: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """The checkpoint tensor's shape, from the tfm tensors' shapes."""
    if rule.zeros:
        return rule.zeros
    if rule.held:
        return rule.held
    parts = [rows_of(shapes[name], name) for name in rule.tfm]
    shape = (sum(rows for rows, _ in parts), *parts[0][1])
    if rule.experts:  # (E, rows per expert, ...), each expert's block transposed where it is
        shape = (rule.experts, shape[0] // rule.experts, *shape[1:])
        shape = (*shape[:-2], shape[-1], shape[-2]) if rule.transposed and len(shape) == 3 else shape
        return (shape[0] * shape[1], *shape[2:]) if rule.flat else shape
    return shape[::-1] if rule.transposed and len(shape) == 2 else shape


def split(rule: Rule, stored: Array, shapes: dict[str, tuple[int, ...]]) -> Iterator[tuple[str, Array]]:
    """The tfm tensors in a checkpoint tensor (views where the layout allows)."""
    if rule.zeros:
        return
    if rule.experts:  # every expert's block of rows, one after the other
        if rule.flat:
            stored = stored.reshape(rule.experts, -1, stored.shape[-1])
        block = stored.swapaxes(-1, -2) if rule.transposed and stored.ndim == 3 else stored
        rows = block.reshape(-1, *block.shape[2:])
    else:
        rows = stored.T if rule.transposed and stored.ndim == 2 else stored
    grouped = rows.reshape(rule.groups, -1, *rows.shape[1:])
    start = 0
    for name in rule.tfm:
        count = rows_of(shapes[name], name)[0] // rule.groups
        piece = grouped[:, start : start + count].reshape(-1, *rows.shape[1:])
        start += count
        yield name, from_rows(name, piece, shapes[name])


def join(rule: Rule, arrays: dict[str, Array], spec: Spec) -> Array:
    """The checkpoint tensor from its tfm tensors (the inverse of split)."""
    if rule.zeros:
        return np.zeros(rule.zeros)
    if rule.held:
        return np.ascontiguousarray(np.asarray(arrays[rule.tfm[0]]).reshape(rule.held))
    pieces = [rows_form(name, arrays[name], spec) for name in rule.tfm]
    grouped = [p.reshape(rule.groups, -1, *p.shape[1:]) for p in pieces]
    rows = np.concatenate(grouped, axis=1).reshape(-1, *pieces[0].shape[1:])
    if rule.experts:
        block = rows.reshape(rule.experts, -1, *rows.shape[1:])
        block = np.ascontiguousarray(block.swapaxes(-1, -2) if rule.transposed and block.ndim == 3 else block)
        return block.reshape(-1, block.shape[-1]) if rule.flat else block
    return np.ascontiguousarray(rows.T if rule.transposed and rows.ndim == 2 else rows)


def _firsts(stack: Stack) -> list[int]:
    """The first block of each group of alike blocks: between them they have every shape the stack has."""
    return [group.layers[0] for group in stack.groups() if len(group.layers)]


def _tensors(spec: Spec, first: bool) -> list:
    """Every tensor of the model, or with `first` those of each stack's first block of each kind and outside the
    blocks: blocks of one kind have the same shapes, so these are all the shapes there are."""
    if not first:
        return all_tensors(spec)
    return [t for stack in stacks(spec) for i in _firsts(stack) for t in stack_tensors(stack, i)] + global_tensors(spec)


def rules(family: Family, spec: Spec, first: bool = False) -> list[Rule]:
    """Every checkpoint tensor the spec's model holds, with the tfm tensors in it (tied heads hold none); with
    `first`, those of each stack's first block of each kind and outside the blocks only."""
    present = {t.name: t.shape for t in _tensors(spec, first)}
    out: list[Rule] = []
    for stack in stacks(spec):
        block, names = _stack_layout(family, stack)
        for i in _firsts(stack) if first else range(stack.spec.stored_blocks):
            out += _block_rules(
                family, *_named(family, block, names, i), f"{stack.prefix}{i}.", present, stack.layer(i)
            )
    return out + _global_rules(family, present)


def _global_rules(family: Family, present: dict[str, tuple[int, ...]]) -> list[Rule]:
    """The tensors outside the blocks; a stacked one held slice by slice where its name has "{e}" (Gemma 3n's
    altup.W_in[{e}]: model.altup_projections.{e})."""
    out = []
    for ours, theirs in family.globals_.items():
        whole = ours.split("[")[0]
        if "{e}" in ours and whole in present:
            out += [Rule(theirs.format(e=e), (ours.format(e=e),)) for e in range(present[whole][0])]
        elif ours in present:  # (held as it is; a stacked one on its leading axis: Gemma 3n's altup_proj in GGUF)
            out.append(Rule(theirs, (ours,), experts=present[ours][0] if theirs in family.stacked else 0))
    return out


def row_parts(layout: list[Rule]) -> dict[str, str]:
    """The checkpoint tensors holding a range of a tfm tensor's rows (Family.row_parts), with that tensor's name."""
    return {rule.hf: rule.tfm[0].split("[")[0] for rule in layout if rule.tfm and ":" in rule.tfm[0]}


def rule_count(family: Family, spec: Spec) -> tuple[int, int]:
    """How many checkpoint tensors the spec's model holds, and how many its largest kind of block: from each kind
    of block's first, at once, for any number of blocks."""
    present = {t.name: t.shape for t in _tensors(spec, True)}
    per_group = []  # (blocks, rules of the group's first block) of each group of each stack
    for stack in stacks(spec):
        block, names = _stack_layout(family, stack)
        for group in stack.groups():
            i = group.layers[0]
            rules_of = _block_rules(
                family, *_named(family, block, names, i), f"{stack.prefix}{i}.", present, stack.layer(i)
            )
            stored = min(len(group.layers), stack.spec.stored_blocks)  # (ALBERT's blocks share a few's weights)
            per_group.append((stored, len(rules_of)))
    outside = _global_rules(family, present)
    return sum(count * size for count, size in per_group) + len(outside), max(size for _, size in per_group)


def _stack_layout(family: Family, stack: Stack) -> tuple[str, dict[str, str]]:
    """A stack's block names in the checkpoint and its tensors' names: the encoder's, or the blocks'."""
    if stack.name == "encoder":
        return family.encoder_block, family.encoder_names
    return family.block, family.names


def _named(family: Family, block: str, names: dict[str, str], i: int) -> tuple[str, dict[str, str]]:
    """Block i's prefix in the checkpoint and its tensors' names there: with `pairs`, layer i // 2's, its
    sublayers numbered i % 2 (LongCat-Flash's)."""
    if not family.pairs:
        return block.format(i=i), names
    side = str(i % 2)
    return block.format(i=i // 2), {ours: theirs.replace("{side}", side) for ours, theirs in names.items()}


def _block_rules(
    family: Family, block: str, names: dict[str, str], prefix: str, present: dict[str, tuple[int, ...]], spec: Spec
) -> list[Rule]:
    """One block's rules (tfm's names from `prefix`, the checkpoint's from `block`; `spec` the block's own; the
    model's tensors and shapes `present`): fused tensors, then the rest, then those held in parts (Family.row_parts).
    A routed block's ff.W1 .. are its experts' (names with "{e}"), a dense block's its one feedforward's; a norm per
    head is read head by head."""
    out: list[Rule] = []
    used: set[str] = set()
    for theirs, pieces, groups in family.fused:
        if theirs in family.stacked and not spec.E:
            continue  # (a dense block among routed ones: its one feedforward, by `names`)
        fused = tuple(prefix + p for p in pieces)
        if all(n in present for n in fused):
            experts = (spec.E or 0) if theirs in family.stacked else int(theirs in family.leading_one)
            flat = theirs in family.flat
            out.append(Rule(block + theirs, fused, groups(spec), theirs in family.transposed, experts, flat))
            used |= set(fused)
    for ours, theirs in names.items():
        if "{e}" in ours:  # one checkpoint tensor per expert, or per head of a norm per head
            whole = prefix + ours.split("[")[0]
            if whole in present and (spec.E or not ours.startswith("ff.")):
                count = present[whole][0]
                out += [Rule(block + theirs.format(e=e), (prefix + ours.format(e=e),)) for e in range(count)]
                if ours in family.zero_experts and spec.zero_experts:  # (never read: zeros of an expert's shape)
                    shape = hf_shape(Rule(theirs, (prefix + ours.format(e=0),)), Shapes(present))
                    extra = range(count, count + spec.zero_experts)
                    out += [Rule(block + theirs.format(e=e), (), zeros=shape) for e in extra]
        elif spec.E and ours.startswith(("ff.W", "ff.b")) and f"{ours}[{{e}}]" in names:
            continue  # the experts' stacked tensor, held expert by expert
        elif prefix + ours in present and prefix + ours not in used:
            held = family.held_as[theirs](spec, present[prefix + ours]) if theirs in family.held_as else ()
            out.append(Rule(block + theirs, (prefix + ours,), 1, theirs in family.transposed, held=held))
    for ours, parts in family.row_parts.items():  # a tensor whose rows a..b are in each of several
        start = 0
        listed = parts(spec) if callable(parts) else parts  # (as many as the block's spec says: Qwen4's shards)
        for theirs, rows in listed if prefix + ours in present else ():
            out.append(Rule(block + theirs, (f"{prefix}{ours}[{start}:{start + rows(spec)}]",)))
            start += rows(spec)
    return out


class Shapes(dict):
    """tfm's tensor shapes by name; a name with an index, one expert or one head ('blocks.0.ff.W1[3]'), has the
    shape of its tensor without the leading axis; one with a range of rows ('blocks.0.delta.kernel[0:16]'), that
    many rows."""

    def __missing__(self, name: str) -> tuple[int, ...]:
        if name.endswith("]"):
            base, index = name[:-1].split("[")
            if ":" in index:
                start, stop = map(int, index.split(":"))
                return (stop - start, *self[base][1:])
            return self[base][1:]
        raise KeyError(name)


def piece(weights, name: str) -> Array:
    """tfm's tensor `name` from `weights`, or one expert (or head) of it, 'blocks.0.ff.W1[3]', or a range of its rows,
    'blocks.0.delta.kernel[0:16]'."""
    if "[" in name:
        base, index = name[:-1].split("[")
        start, _, stop = index.partition(":")
        whole = np.asarray(weights[base])
        return whole[int(start) : int(stop)] if stop else whole[int(start)]
    return np.asarray(weights[name])


def fixed_buffers(family: Family, layout: list[Rule]) -> dict[str, float]:
    """The buffers a checkpoint of `layout` holds beside a module's parameters that tfm holds as constants (Apertus's
    xIELU beta and eps, family.fixed_buffers), by checkpoint name: one per module the layout writes tensors of."""
    out = {}
    for buffer, value in family.fixed_buffers:
        module = "." + buffer.rsplit(".", 1)[0] + "."
        for rule in layout:
            if module in rule.hf:
                out[rule.hf[: rule.hf.index(module) + 1] + buffer] = value
    return out


def bytes_by_tensor(rule_of: dict[str, Rule], shapes: Shapes, stored: Callable[[str], int]) -> dict[str, int]:
    """Each tfm tensor's bytes in a file: the bytes `stored(name)` of the file tensor holding it, a fused or stacked
    tensor's shared by element count (exact in total; each share rounded down, the last takes the rest)."""
    holders: dict[str, list[str]] = {}
    for name, rule in rule_of.items():
        holders.setdefault(rule.hf, []).append(name)
    out: dict[str, int] = {}
    for hf, names in holders.items():
        total, elements = stored(hf), [math.prod(shapes[n]) for n in names]
        shares = [total * e // max(sum(elements), 1) for e in elements]
        shares[-1] += total - sum(shares)
        for name, share in zip(names, shares, strict=True):
            out[name.split("[")[0]] = out.get(name.split("[")[0], 0) + share
    return out


def tensor_shapes(spec: Spec, first: bool = False) -> Shapes:
    """tfm's tensor shapes by name (and by name and index: Shapes); with `first`, those of block 0 (and encoder
    block 0) and outside the blocks only."""
    return Shapes({t.name: t.shape for t in _tensors(spec, first)})
