"""Training memory from the spec: the model states an optimizer keeps (split by ZeRO over D devices) and the
activations the backward pass needs, as exact integers.

Model states: the optimizer's bytes a parameter (optimizers.py), split by ZeRO over D devices.

Activations: what autograd keeps for the backward pass, counted as Korthikanti et al. (2022) count them (every
tensor a kernel saves, once, however many kernels save it), for the spec's block without dropout, with the
kernels of PyTorch 2.13 (checked against `torch.autograd.graph.saved_tensors_hooks` in the tests):
- a linear layer keeps its input; a residual add and a scale by a constant keep nothing;
- layer norm keeps its input and a mean and 1/std per token; RMS norm (F.rms_norm, composite) keeps its input
  and its normalised input in float32 (at least) and 1/rms per token; its output is kept by the next linear;
- relu keeps its output (the same tensor the next linear keeps), gelu and silu their input; a gated product
  keeps both factors;
- fused attention (F.scaled_dot_product_attention, FlashAttention): Q, K and V (G heads), the output (which
  W_O keeps too) and a float32 log-sum-exp per query and head, no n^2 term; unfused ("eager": matmul,
  softmax, matmul, with K and V repeated to H heads as transformers' eager attention does): Q, the repeated
  K and V, and the softmax's (H, n, n) output; the additive mask is made once and kept by no kernel;
- rotary positions keep their (n, m) cosines and sines once, relative positions the (n, n) int64 bucket ids
  of the bias table's lookup once a stack; an embedding keeps the int64 ids; the loss
  (cross-entropy) keeps the log-softmax (V per token) and the int64 targets; a spec without a vocabulary is
  trained on a loss of its output columns that keeps nothing;
- routed experts (an estimate, not checked against autograd): each token's k experts keep their feedforward's
  tensors, the token's gathered input and the expert's output; the router keeps its softmax (E per token);
- full recomputation (checkpointing every block): each block keeps its input, and the backward pass holds one
  block's tensors again while it recomputes it.
Not included: the gradients of the activations while the backward pass runs, and temporary buffers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..spec.definition import Spec
from ..spec.stacks import decoder
from ..spec.stacks import encoder as encoder_of
from .optimizers import OPTIMIZERS, model_states, tensor_sizes

if TYPE_CHECKING:
    from .lora import Adapters

ELEMENT = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


def _norm(spec: Spec, width: int, s: int, frozen: bool = False) -> int:
    """Bytes a norm over `width` entries keeps per token (its output is counted where a linear keeps it)."""
    from ..components.norm import norm_kind  # (here: `tfm --help` imports this module for the optimizers' names)

    return norm_kind(spec).saved_bytes(width, s, frozen)


@dataclass(frozen=True)
class Tuned:
    """LoRA on one stack's blocks, the rest frozen: the kinds its adapters target (attention.W_Q, ff.W2, cross.W_K,
    ...), the adapters a block has, their rank. In the stack's first block nothing before the first adapter needs a
    gradient (`first`)."""

    kinds: frozenset[str]
    adapters: int
    rank: int
    first: bool = False

    def trains(self, *kinds: str) -> bool:
        return any(kind in self.kinds for kind in kinds)


def _feedforward(spec: Spec, s: int, down: bool = True, gate: bool = True, up: bool = True) -> int:
    """Bytes one token's feedforward keeps beyond its input (its kind's, plain, gated or routed). Under LoRA some
    tensors need no gradient: W2's input is kept only when W2 trains (`down`), the gate's and the up row's when
    they need a gradient (`gate`, `up`)."""
    from ..components.experts import block_feedforward  # (here: `tfm --help` imports this module)

    return block_feedforward(spec).saved_bytes(s, down, gate, up)


def block_bytes(spec: Spec, n: int, s: int, fused: bool, tuned: Tuned | None = None) -> dict[str, int]:
    """Bytes one block keeps per token at length n, by part: norms, linear inputs, attention, feedforward (and
    LoRA's adapters, their A's outputs of r a token each, `tuned`: then a frozen linear module keeps no input, a
    norm no normalised copy, and in a stack's first block whatever needs no gradient before the first adapter
    keeps nothing)."""
    from ..components import attention_component  # (here: `tfm --help` imports this module)
    from ..components.residual import Residuals

    d, H, m = spec.d, spec.H, spec.m
    layout = Residuals(spec)

    def trains(*kinds: str) -> bool:
        return tuned is None or tuned.trains(*kinds)

    grad = tuned is None or not tuned.first  # the block's input needs a gradient
    q, k, v = (grad or trains(f"attention.W_{c}") for c in "QKV")
    core = q or k or v  # attention's kernel keeps its tensors
    attended = core or trains("attention.W_O")  # attention's output needs a gradient
    middle = grad or attended  # the stream between the sublayers
    fed_in = layout.feedforward_input(grad, middle)  # the feedforward's input needs a gradient
    gate, up = fed_in or trains("ff.W1"), fed_in or trains("ff.W3")
    fed = gate or up or trains("ff.W2")  # the feedforward's output needs a gradient
    inputs = layout.norm_inputs(grad, attended, middle, fed)  # does each norm's input need a gradient
    norm = _norm(spec, d, s, frozen=tuned is not None)
    qkv, w1 = trains("attention.W_Q", "attention.W_K", "attention.W_V"), trains("ff.W1", "ff.W3")
    linear = (qkv + w1) * d * s + (H * m * s if (fused and core) or trains("attention.W_O") else 0)
    if layout.shared_norm and qkv and w1:
        linear -= d * s  # the one norm's output, kept once
    attention = attention_component(spec).saved_bytes(n, s, fused, (q, k, v), frozen=tuned is not None)
    out = {
        "norms": sum(inputs) * norm,
        "linear_inputs": linear,
        "attention": attention,
        "feedforward": _feedforward(spec, s, trains("ff.W2"), gate, up),
    }
    if tuned is not None:
        out["adapters"] = tuned.adapters * tuned.rank * s
    return out


def _cross_bytes(spec: Spec, n_src: int, s: int, fused: bool, tuned: Tuned | None = None) -> tuple[int, int]:
    """Bytes a decoder block's cross-attention keeps per target token and per source token."""
    from ..components.encoder import CrossAttention  # (here: `tfm --help` imports this module)

    def trains(kind: str) -> bool:
        return tuned is None or tuned.trains(kind)

    frozen = tuned is not None
    return CrossAttention(spec).saved_bytes(n_src, s, fused, trains("cross.W_Q"), trains("cross.W_O"), frozen)


def _model_bytes(spec: Spec, s: int, frozen: bool = False) -> int:
    """Bytes per token kept outside the blocks, each component's: the ids, the embedding's norm, the final norm,
    the head, the loss (frozen, LoRA: no ids nor embedding norm, which need no gradient, nor the frozen head's
    input)."""
    from ..components import outside_components  # (here: `tfm --help` imports this module)

    return sum(c.saved_per_token(s, frozen) for c in outside_components(spec))


def _source_bytes(spec: Spec, s: int, kept: bool, frozen: bool = False) -> int:
    """Bytes per source token kept outside the encoder's blocks: the source ids (looked up as the targets' are),
    the encoder's norms of its embedding and of its output, and its output, which the cross-attentions' K and V
    keep (under LoRA: when they train, `kept`)."""
    from ..components import encoder_model_components  # (here: `tfm --help` imports this module)
    from ..components.embedding import id_bytes

    ids = 0 if frozen else id_bytes(spec)
    norms = sum(c.saved_per_token(s, frozen) for c in encoder_model_components(spec))
    return ids + spec.d * s * kept + norms


def _positions(spec: Spec, n: int, s: int, frozen: bool = False) -> int:
    """Bytes a stack keeps once for its positions (rotary cosines and sines, relative positions' bucket ids)."""
    from ..components.positional import POSITIONALS  # (here: `tfm --help` imports this module)

    return POSITIONALS[spec.positional](spec).saved_bytes(n, s, frozen)


def _tuned(lora: Adapters | None, stack: str, first: bool) -> Tuned | None:
    if lora is None:
        return None
    return Tuned(lora.kinds.get(stack, frozenset()), lora.per_block.get(stack, 0), lora.rank, first)


def activation_bytes(
    spec: Spec,
    b: int,
    n: int,
    dtype: str = "bfloat16",
    fused: bool = True,
    recompute: bool = False,
    n_src: int | None = None,
    lora: Adapters | None = None,
) -> dict[str, int]:
    """Bytes autograd keeps for the backward pass of b sequences of n tokens (an encoder-decoder: targets of n,
    sources of n_src, default n), by part, and their total; with `lora`, of its adapters, the rest frozen."""
    s = ELEMENT[dtype]
    frozen = lora is not None
    groups = decoder(spec).groups()  # blocks alike (dense and routed ones keep different hidden rows)

    def block(g_spec: Spec, stack: str, length: int, first: bool = False) -> int:
        return sum(block_bytes(g_spec, length, s, fused, _tuned(lora, stack, first)).values())

    parts = block_bytes(groups[0].spec, n, s, fused, _tuned(lora, "blocks", False))
    # (blocks, tokens, bytes of one block) of each group
    stacks = [(g.spec.N, b * n, b * n * block(g.spec, "blocks", n)) for g in groups]
    # the first block under LoRA (nothing before its first adapter needs a gradient), unless recomputed
    first = b * n * (block(groups[0].spec, "blocks", n, True) - block(groups[0].spec, "blocks", n)) if frozen else 0
    model = b * n * _model_bytes(spec, s, frozen)
    positions = _positions(spec, n, s, frozen)
    source = encoder_of(spec)
    if source is not None:
        n_src = n_src or n
        target, memory = _cross_bytes(spec, n_src, s, fused, _tuned(lora, "blocks", False))
        cross = b * (target * n + memory * n_src)  # each decoder block's cross-attention
        stacks = [(count, tokens, size + cross) for count, tokens, size in stacks]
        stacks.append((source.spec.N, b * n_src, b * n_src * block(source.spec, "encoder", n_src)))
        if frozen:
            first += b * n_src * (block(source.spec, "encoder", n_src, True) - block(source.spec, "encoder", n_src))
        kept = lora is None or lora.trains_any("blocks", "cross.W_K", "cross.W_V")
        model += b * n_src * _source_bytes(spec, s, kept, frozen)
        positions += _positions(spec, n_src, s, frozen)
    out: dict[str, Any] = {"per_block": {k: v * b * n for k, v in parts.items()}}  # block 0's
    merged = [elements * s for elements in lora.merged] if lora is not None else []  # peft's wrapped experts
    if recompute:  # each block's input; one block's tensors while it is recomputed, the position tables with it
        out["recomputed"] = max(x for *_, x in stacks) + max(merged, default=0) + positions
        out["blocks"] = sum(count * tokens * spec.stream_rows * s for count, tokens, _ in stacks) + out["recomputed"]
    else:
        out["blocks"] = sum(count * size for count, _, size in stacks) + first + sum(merged)
        model += positions
    out["model"] = model
    out["total"] = out["blocks"] + model
    return out


@dataclass(frozen=True)
class Training:
    """One device's training memory in bytes: its model states, and the activations (and the total) in each of
    the three ways of keeping them."""

    optimizer: str
    optimizer_note: str
    activation_dtype: str
    zero_stage: int
    devices: int
    states: dict[str, int]  # weights, gradients, optimizer, total
    activations: dict[str, int]  # by way: unfused_attention, fused_attention, full_recomputation
    total: dict[str, int]
    lora: dict[str, Any] | None = None  # rank, targets, trainable parameters, frozen weights' bytes and type
    paged: bool = False  # the optimizer's states may move to CPU memory (the device needs total - optimizer)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def training_memory(
    spec: Spec,
    params: int,
    b: int,
    n: int,
    optimizer: str = "adam-mixed",
    zero: int = 0,
    devices: int = 1,
    n_src: int | None = None,
    lora: Adapters | None = None,
    frozen: tuple[str, int] = ("bfloat16", 0),
) -> Training:
    """One device's training memory: its model states, and the activations of its b sequences of n tokens in the
    three ways of keeping them. With `lora`, fine-tuning its adapters: the optimizer's states for the adapters
    only, the base weights frozen in `frozen` = (their type, their bytes), split over the devices by ZeRO 3."""
    opt = OPTIMIZERS[optimizer]
    dtype = "bfloat16" if optimizer == "adam-mixed" else "float32"
    if lora is not None:  # the base's compute type
        dtype = "float32" if frozen[0] == "float32" else "bfloat16"
    sizes = (lora.sizes if lora else tensor_sizes(spec)) if opt.blockwise else None
    states = model_states(lora.parameters if lora else params, optimizer, zero, devices, sizes)
    notes = None
    if lora is not None:
        base = -(-frozen[1] // devices) if zero >= 3 else frozen[1]
        notes = {
            "rank": lora.rank,
            "targets": lora.targets,
            "trainable_parameters": lora.parameters,
            "frozen_weights": base,
            "frozen_dtype": frozen[0],
            "adapter_weights": states["weights"],
        }
        states = states | {"weights": states["weights"] + base, "total": states["total"] + base}
    ways = {
        "unfused_attention": activation_bytes(spec, b, n, dtype, False, n_src=n_src, lora=lora)["total"],
        "fused_attention": activation_bytes(spec, b, n, dtype, True, n_src=n_src, lora=lora)["total"],
        "full_recomputation": activation_bytes(spec, b, n, dtype, True, True, n_src, lora)["total"],
    }
    total = {way: states["total"] + size for way, size in ways.items()}
    return Training(optimizer, opt.note, dtype, zero, devices, states, ways, total, notes, opt.paged)
