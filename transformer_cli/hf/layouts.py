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
from dataclasses import dataclass, field

import numpy as np

from ..analysis.params import all_tensors, global_tensors, stack_tensors
from ..spec.definition import Spec
from ..spec.stacks import Stack, stacks

Array = np.ndarray


def rows_form(name: str, array: Array, spec: Spec) -> Array:
    """A tfm tensor as a checkpoint holds it (nn.Linear's (out, in)): a view where the layout allows."""
    leaf = name.rsplit(".", 1)[-1].split("[")[0]
    if leaf in ("E", "T", "P"):  # (d, V) columns -> (V, d) rows
        return array.T
    if leaf == "rel_bias":  # (buckets, H), T5's nn.Embedding table as it is
        return array
    if leaf == "W_O":  # (H, d, m) -> (d, Hm)
        return array.transpose(1, 0, 2).reshape(spec.d, -1)
    if leaf.startswith("W") or leaf == "router":
        return array.reshape(-1, array.shape[-1])
    return array.reshape(-1)  # biases and norm parameters


def from_rows(name: str, rows: Array, shape: tuple[int, ...]) -> Array:
    """The inverse of rows_form: a checkpoint's (out, in) rows as tfm's tensor of `shape`."""
    leaf = name.rsplit(".", 1)[-1].split("[")[0]
    if leaf in ("E", "T", "P"):
        return rows.T
    if leaf == "W_O":
        H, d, m = shape
        return rows.reshape(d, H, m).transpose(1, 0, 2)
    return rows.reshape(shape)


@dataclass(frozen=True)
class Rule:
    """One checkpoint tensor: the tfm tensors it holds (rows stacked in this order, in `groups` interleaved
    groups), stored transposed or not. A tfm name may pick one expert: 'blocks.0.ff.W1[3]'."""

    hf: str
    tfm: tuple[str, ...]
    groups: int = 1
    transposed: bool = False


def rows_of(shape: tuple[int, ...], name: str) -> tuple[int, tuple[int, ...]]:
    """(rows, trailing shape) of a tfm tensor's rows form, from its shape alone."""
    leaf = name.rsplit(".", 1)[-1].split("[")[0]
    if leaf in ("E", "T", "P"):
        return shape[1], (shape[0],)
    if leaf == "rel_bias":
        return shape[0], shape[1:]
    if leaf == "W_O":
        return shape[1], (shape[0] * shape[2],)
    if leaf.startswith("W") or leaf == "router":
        return math.prod(shape[:-1]), (shape[-1],)
    return math.prod(shape), ()


def hf_shape(rule: Rule, shapes: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """The checkpoint tensor's shape, from the tfm tensors' shapes."""
    parts = [rows_of(shapes[name], name) for name in rule.tfm]
    shape = (sum(rows for rows, _ in parts), *parts[0][1])
    return shape[::-1] if rule.transposed and len(shape) == 2 else shape


def split(rule: Rule, stored: Array, shapes: dict[str, tuple[int, ...]]) -> Iterator[tuple[str, Array]]:
    """The tfm tensors in a checkpoint tensor (views where the layout allows)."""
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
    pieces = [rows_form(name, arrays[name], spec) for name in rule.tfm]
    grouped = [p.reshape(rule.groups, -1, *p.shape[1:]) for p in pieces]
    rows = np.concatenate(grouped, axis=1).reshape(-1, *pieces[0].shape[1:])
    return np.ascontiguousarray(rows.T if rule.transposed and rows.ndim == 2 else rows)


# -- the families ---------------------------------------------------------------------------------------
# Each maps tfm's names to the checkpoint's: per block ("{i}" the block), and global. A norm is named by its
# module: its gamma is `.weight`, its beta `.bias`. Fused tensors list their pieces; experts use "{e}".

LINEAR = {"W": "weight", "b": "bias"}


def _linear(ours: str, theirs: str, parts: str = "Wb") -> dict[str, str]:
    """'attention.{}_Q', 'self_attn.q_proj' -> W_Q -> ...weight, b_Q -> ...bias."""
    return {ours.format(p): f"{theirs}.{LINEAR[p]}" for p in parts}


def _norm(ours: str, theirs: str) -> dict[str, str]:
    return {f"{ours}.gamma": f"{theirs}.weight", f"{ours}.beta": f"{theirs}.bias"}


@dataclass(frozen=True)
class Family:
    """One model_type's checkpoint names. `fused` lists checkpoint tensors that hold several tfm tensors, with
    their group count as a function of the spec; `transposed` marks Conv1D weights. An encoder-decoder's
    encoder blocks (`encoder.{j}.`) have names of their own; `copies` are tied tensors a file may hold beside
    the one read (accepted, never read); `zero_buffers` are buffers in files that must be zero (checked on read)."""

    block: str  # prefix of block i's names (the decoder's in an encoder-decoder)
    names: dict[str, str]  # tfm name within a block -> checkpoint name within the block
    globals_: dict[str, str]  # tfm global name -> checkpoint name
    fused: tuple[tuple[str, tuple[str, ...], Callable[[Spec], int]], ...] = ()
    transposed: frozenset[str] = frozenset()
    encoder_block: str = ""  # prefix of encoder block j's names
    encoder_names: dict[str, str] = field(default_factory=dict)
    copies: dict[str, str] = field(default_factory=dict)  # checkpoint name -> the tfm tensor it is a copy of
    zero_buffers: tuple[str, ...] = ()
    hints: dict[str, str] = field(default_factory=dict)  # checkpoint name -> why it may be missing


def _llama_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for x, proj in (("Q", "q_proj"), ("K", "k_proj"), ("V", "v_proj"), ("O", "o_proj")):
        names |= _linear("attention.{}_" + x, f"self_attn.{proj}")
    for n, proj in (("1", "gate_proj"), ("3", "up_proj"), ("2", "down_proj")):
        names |= _linear("ff.{}" + n, f"mlp.{proj}")
    names |= {"attention.q_norm.gamma": "self_attn.q_norm.weight", "attention.k_norm.gamma": "self_attn.k_norm.weight"}
    return names | _norm("norm1", "input_layernorm") | _norm("norm2", "post_attention_layernorm")


_LLAMA_GLOBALS = {"embedding.E": "model.embed_tokens.weight", "head.W": "lm_head.weight"} | _norm(
    "final_norm", "model.norm"
)
_one = lambda spec: 1  # noqa: E731

LLAMA = Family("model.layers.{i}.", _llama_names(), _LLAMA_GLOBALS)
# Gemma 2 and 3: four norms a block; post_attention_layernorm is the attention's output norm here, not norm2
GEMMA2 = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if not ours.startswith("norm2")}
    | _norm("norm1_out", "post_attention_layernorm") | _norm("norm2", "pre_feedforward_layernorm")
    | _norm("norm2_out", "post_feedforward_layernorm"),
    _LLAMA_GLOBALS,
)  # fmt: skip
# OLMo 2: the sublayers' outputs normalised (post_attention_layernorm, post_feedforward_layernorm), not their inputs
OLMO2 = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if not ours.startswith(("norm1", "norm2"))}
    | _norm("norm1_out", "post_attention_layernorm") | _norm("norm2_out", "post_feedforward_layernorm"),
    _LLAMA_GLOBALS,
)  # fmt: skip
MIXTRAL = Family(
    "model.layers.{i}.",
    {ours: theirs for ours, theirs in _llama_names().items() if not ours.startswith("ff.")}
    | {"ff.router": "block_sparse_moe.gate.weight", "ff.W1[{e}]": "block_sparse_moe.experts.{e}.w1.weight",
       "ff.W3[{e}]": "block_sparse_moe.experts.{e}.w3.weight", "ff.W2[{e}]": "block_sparse_moe.experts.{e}.w2.weight"},
    _LLAMA_GLOBALS,
)  # fmt: skip


def _qwen_moe_names() -> dict[str, str]:
    """Qwen2-MoE, Qwen3-MoE: LLaMA's block (and its mlp in dense layers), mlp.gate the router, mlp.experts.{e}.*
    the experts, mlp.shared_expert.* and mlp.shared_expert_gate the shared expert (Qwen2-MoE)."""
    names = _llama_names() | {"ff.router": "mlp.gate.weight", "ff.shared.W_gate": "mlp.shared_expert_gate.weight"}
    for n, proj in (("1", "gate_proj"), ("3", "up_proj"), ("2", "down_proj")):
        names[f"ff.W{n}[{{e}}]"] = f"mlp.experts.{{e}}.{proj}.weight"
        names[f"ff.shared.W{n}"] = f"mlp.shared_expert.{proj}.weight"
    return names


QWEN_MOE = Family("model.layers.{i}.", _qwen_moe_names(), _LLAMA_GLOBALS)
PHI3 = Family(
    "model.layers.{i}.",
    _llama_names(),
    _LLAMA_GLOBALS,
    fused=(("self_attn.qkv_proj.weight", ("attention.W_Q", "attention.W_K", "attention.W_V"), _one),
           ("mlp.gate_up_proj.weight", ("ff.W1", "ff.W3"), _one)),
)  # fmt: skip


def _phi_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for x, proj in (("Q", "q_proj"), ("K", "k_proj"), ("V", "v_proj"), ("O", "dense")):
        names |= _linear("attention.{}_" + x, f"self_attn.{proj}")
    names |= _linear("ff.{}1", "mlp.fc1") | _linear("ff.{}2", "mlp.fc2")
    names |= _norm("attention.q_norm", "self_attn.q_layernorm") | _norm("attention.k_norm", "self_attn.k_layernorm")
    return names | _norm("norm1", "input_layernorm")


PHI = Family(
    "model.layers.{i}.",
    _phi_names(),
    {"embedding.E": "model.embed_tokens.weight", "head.W": "lm_head.weight", "head.b": "lm_head.bias"}
    | _norm("final_norm", "model.final_layernorm"),
)


def _neox_names(attention: str, norms: tuple[str, str]) -> dict[str, str]:
    names = _linear("attention.{}_O", f"{attention}.dense")
    names |= _linear("ff.{}1", "mlp.dense_h_to_4h") | _linear("ff.{}2", "mlp.dense_4h_to_h")
    return names | _norm("norm1", norms[0]) | _norm("norm2", norms[1])


_QKV = ("attention.W_Q", "attention.W_K", "attention.W_V")
_QKV_BIAS = ("attention.b_Q", "attention.b_K", "attention.b_V")
GPT_NEOX = Family(
    "gpt_neox.layers.{i}.",
    _neox_names("attention", ("input_layernorm", "post_attention_layernorm")),
    {"embedding.E": "gpt_neox.embed_in.weight", "head.W": "embed_out.weight"}
    | _norm("final_norm", "gpt_neox.final_layer_norm"),
    fused=(("attention.query_key_value.weight", _QKV, lambda spec: spec.H),
           ("attention.query_key_value.bias", _QKV_BIAS, lambda spec: spec.H)),
)  # fmt: skip


def falcon(new_architecture: bool, norms: tuple[str, str]) -> Family:
    """Falcon's fused query_key_value: grouped per key/value head in the new architecture (falcon-40b), else
    [all queries | key | value] with multi-query (falcon-7b), or per head like GPT-NeoX without it."""

    def groups(spec: Spec) -> int:
        if new_architecture:
            return spec.kv_heads
        return 1 if spec.kv_heads == 1 else spec.H

    return Family(
        "transformer.h.{i}.",
        _neox_names("self_attention", norms),
        {"embedding.E": "transformer.word_embeddings.weight", "head.W": "lm_head.weight"}
        | _norm("final_norm", "transformer.ln_f"),
        fused=(("self_attention.query_key_value.weight", _QKV, groups),
               ("self_attention.query_key_value.bias", _QKV_BIAS, groups)),
    )  # fmt: skip


GPT2 = Family(
    "transformer.h.{i}.",
    _linear("attention.{}_O", "attn.c_proj") | _linear("ff.{}1", "mlp.c_fc") | _linear("ff.{}2", "mlp.c_proj")
    | _norm("norm1", "ln_1") | _norm("norm2", "ln_2"),
    {"embedding.E": "transformer.wte.weight", "positional.P": "transformer.wpe.weight", "head.W": "lm_head.weight"}
    | _norm("final_norm", "transformer.ln_f"),
    fused=(("attn.c_attn.weight", _QKV, _one), ("attn.c_attn.bias", _QKV_BIAS, _one)),
    transposed=frozenset({"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"}),
)  # fmt: skip


def _plain_block_names(attention: tuple[str, str, str, str], ff: tuple[str, str], norms: tuple[str, str]
                       ) -> dict[str, str]:  # fmt: skip
    """A block with a plain feedforward: the checkpoint's names of W_Q, W_K, W_V, W_O, of W1, W2, and of the norms
    around attention and the feedforward (weights and biases each)."""
    names: dict[str, str] = {}
    for x, proj in zip("QKVO", attention, strict=True):
        names |= _linear("attention.{}_" + x, proj)
    names |= _linear("ff.{}1", ff[0]) | _linear("ff.{}2", ff[1])
    return names | _norm("norm1", norms[0]) | _norm("norm2", norms[1])


def _bert_names() -> dict[str, str]:
    return _plain_block_names(("attention.self.query", "attention.self.key", "attention.self.value",
                               "attention.output.dense"), ("intermediate.dense", "output.dense"),
                              ("attention.output.LayerNorm", "output.LayerNorm"))  # fmt: skip


BERT = Family(
    "encoder.layer.{i}.",
    _bert_names(),
    {"embedding.E": "embeddings.word_embeddings.weight", "positional.P": "embeddings.position_embeddings.weight",
     "embedding.T": "embeddings.token_type_embeddings.weight", "pooler.W": "pooler.dense.weight",
     "pooler.b": "pooler.dense.bias"} | _norm("embedding.norm", "embeddings.LayerNorm"),
)  # fmt: skip


def _gpt_neo_names() -> dict[str, str]:
    attention = ("attn.attention.q_proj", "attn.attention.k_proj", "attn.attention.v_proj", "attn.attention.out_proj")
    return _plain_block_names(attention, ("mlp.c_fc", "mlp.c_proj"), ("ln_1", "ln_2"))


GPT_NEO = Family(
    "transformer.h.{i}.",
    _gpt_neo_names(),
    {"embedding.E": "transformer.wte.weight", "positional.P": "transformer.wpe.weight", "head.W": "lm_head.weight"}
    | _norm("final_norm", "transformer.ln_f"),
)  # fmt: skip


def _distilbert_names() -> dict[str, str]:
    attention = ("attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin")
    return _plain_block_names(attention, ("ffn.lin1", "ffn.lin2"), ("sa_layer_norm", "output_layer_norm"))


DISTILBERT = Family(
    "transformer.layer.{i}.",
    _distilbert_names(),
    {"embedding.E": "embeddings.word_embeddings.weight", "positional.P": "embeddings.position_embeddings.weight"}
    | _norm("embedding.norm", "embeddings.LayerNorm"),
)  # fmt: skip


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
    present = {t.name for t in _tensors(spec, first)}
    out: list[Rule] = []
    for stack in stacks(spec):
        block, names = _stack_layout(family, stack)
        for i in _firsts(stack) if first else range(stack.spec.N):
            out += _block_rules(family, block.format(i=i), names, f"{stack.prefix}{i}.", present, stack.layer(i))
    out += [Rule(theirs, (ours,)) for ours, theirs in family.globals_.items() if ours in present]
    return out


def rule_count(family: Family, spec: Spec) -> tuple[int, int]:
    """How many checkpoint tensors the spec's model holds, and how many its largest kind of block: from each kind
    of block's first, at once, for any number of blocks."""
    present = {t.name for t in _tensors(spec, True)}
    per_group = []  # (blocks, rules of the group's first block) of each group of each stack
    for stack in stacks(spec):
        block, names = _stack_layout(family, stack)
        for group in stack.groups():
            i = group.layers[0]
            rules_of = _block_rules(family, block.format(i=i), names, f"{stack.prefix}{i}.", present, stack.layer(i))
            per_group.append((len(group.layers), len(rules_of)))
    outside = [ours for ours in family.globals_ if ours in present]
    return sum(count * size for count, size in per_group) + len(outside), max(size for _, size in per_group)


def _stack_layout(family: Family, stack: Stack) -> tuple[str, dict[str, str]]:
    """A stack's block names in the checkpoint and its tensors' names: the encoder's, or the blocks'."""
    if stack.name == "encoder":
        return family.encoder_block, family.encoder_names
    return family.block, family.names


def _block_rules(family: Family, block: str, names: dict[str, str], prefix: str, present: set[str],
                 spec: Spec) -> list[Rule]:  # fmt: skip
    """One block's rules (tfm's names from `prefix`, the checkpoint's from `block`; `spec` the block's own):
    fused tensors, then the rest. A routed block's ff.W1 .. are its experts' (names with "{e}"), a dense block's
    its one feedforward's."""
    out: list[Rule] = []
    used: set[str] = set()
    for theirs, pieces, groups in family.fused:
        fused = tuple(prefix + p for p in pieces)
        if all(n in present for n in fused):
            out.append(Rule(block + theirs, fused, groups(spec), theirs in family.transposed))
            used |= set(fused)
    for ours, theirs in names.items():
        if "{e}" in ours:  # one checkpoint tensor per expert
            if spec.E and prefix + ours.split("[")[0] in present:
                out += [Rule(block + theirs.format(e=e), (prefix + ours.format(e=e),)) for e in range(spec.E)]
        elif spec.E and ours.startswith(("ff.W", "ff.b")) and f"{ours}[{{e}}]" in names:
            continue  # the experts' stacked tensor, held expert by expert
        elif prefix + ours in present and prefix + ours not in used:
            out.append(Rule(block + theirs, (prefix + ours,), 1, theirs in family.transposed))
    return out


def tensor_shapes(spec: Spec, first: bool = False) -> dict[str, tuple[int, ...]]:
    """tfm's tensor shapes by name, experts also one by one ('blocks.0.ff.W1[3]'); with `first`, those of
    block 0 (and encoder block 0) and outside the blocks only."""
    shapes = {t.name: t.shape for t in _tensors(spec, first)}
    if spec.E:
        shapes |= {f"{name}[{e}]": shape[1:] for name, shape in list(shapes.items()) if ".ff.W" in name
                   for e in range(spec.E)}  # fmt: skip
    return shapes
