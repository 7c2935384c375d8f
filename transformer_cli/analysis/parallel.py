"""Several devices: what one device holds when a model is split Megatron's way (Shoeybi et al. 2019), and what the
devices send each other a token.

- Tensor parallelism over T devices: attention's heads split (W_Q, W_K, W_V by their output heads, W_O by its
  input heads, their biases with them; key/value heads replicated when there are fewer than T, one a device);
  the feedforward's hidden units split (W1, W3 by rows, W2 by columns, b1 and b3 with them); the embedding and
  the head split by vocabulary rows, ceil(V / T) a device (an engine pads V to a multiple of T); norms, the
  feedforward's and the output projection's biases, positions and routers replicated. H, G (or T / G), r and
  an expert's r must divide by T, or the split is refused.
- Expert parallelism over E_p devices: a mixture's experts split, E / E_p whole experts a device (each still
  split over T); routers and everything else as above. Devices: T x P x E_p.
- Pipeline parallelism over P stages: N / P consecutive blocks a stage (N must divide by P); the first stage
  holds the embedding (and learned positions), the last the final norm and the head (a tied head's copy of the
  embedding too, as Megatron keeps it). A device's figure is its stage's, the largest stage reported.
- The KV cache a device holds: its stage's blocks, its share of the key/value heads (G / T, or one).
- Communication a token (bytes a device sends): tensor parallelism all-reduces each sublayer's output (d values)
  in the forward pass, two a block (one for a parallel block, three with cross-attention) and one after the
  vocabulary-parallel embedding, a ring all-reduce sending 2 (T - 1) / T of the message; training all-reduces as
  much again in the backward pass. A pipeline stage passes each token's d values on to the next, and its
  gradient back in training. The busiest stage's device is counted (the first: its blocks and the embedding).
  Experts: a routed token's d values go to its k experts and come back, (E_p - 1) / E_p
  of them to another device.
Latent attention (DeepSeek's) is not split here (refused). Sequence parallelism is not modelled.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from ..components import attention_component
from ..components.residual import Residuals
from ..errors import SpecError
from ..spec.definition import Spec
from ..spec.stacks import decoder, stacks
from .kv_cache import KV_BYTES, SCALE_BYTES, block_bytes, decodes

if TYPE_CHECKING:
    from ..components.held import Held

HEADS = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "sinks")  # split by heads (axis 0)
ROWS = ("W1", "W3", "b1", "b3")  # the hidden units' rows
COLUMNS = ("W2",)  # the hidden units' columns (last axis)


@dataclass(frozen=True)
class Split:
    """A model split over devices: tensor parallelism T, pipeline stages P, expert parallelism E_p."""

    tensor: int = 1
    pipeline: int = 1
    expert: int = 1

    @property
    def devices(self) -> int:
        return self.tensor * self.pipeline * self.expert

    @property
    def trivial(self) -> bool:
        return self.devices == 1


def check_split(spec: Spec, split: Split) -> None:
    """Refuse a split that does not divide what it must, naming it."""
    T, P, X = split.tensor, split.pipeline, split.expert
    refusal = attention_component(spec).tensor_split_refusal
    if T > 1 and refusal:
        raise SpecError(f"--tensor-parallel {T}: {spec.label}'s {refusal}")
    G = spec.kv_heads
    tp, pp, ep = "--tensor-parallel", "--pipeline-parallel", "--expert-parallel"
    needs = [("H (attention heads)", spec.H, T, tp), ("r (feedforward size)", spec.r, T, tp)]
    if spec.E:
        needs += [("expert_r (an expert's size)", spec.expert_r or spec.r, T, tp), ("E (experts)", spec.E, X, ep)]
        if spec.shared_r:
            needs.append(("shared_r (the shared expert's size)", spec.shared_r, T, tp))
    elif X > 1:
        raise SpecError(f"{ep} {X}: {spec.label} has no experts (no E)")
    if decoder(spec).reads_memory:
        needs.append(("cross_heads (cross-attention heads)", spec.cross_heads, T, tp))
        needs.append(("cross_G (cross-attention key/value heads)", spec.cross_kv_heads, T, tp))
        if P > 1:
            raise SpecError(f"{pp} {P}: an encoder-decoder's stages are not split here")
    needs.append(("N (blocks)", spec.N, P, pp))
    for name, size, parts, flag in needs:
        if size % parts:
            raise SpecError(f"{flag} {parts}: {spec.label}'s {name} = {size:,} does not divide by {parts}")
    if G % T and T % G:
        raise SpecError(
            f"--tensor-parallel {T}: {spec.label}'s G (key/value heads) = {G} neither divides by {T} nor "
            f"divides it (each device holds G / T heads, or one of them)"
        )


def shard_shape(name: str, shape: tuple[int, ...], spec: Spec, split: Split) -> tuple[int, ...]:
    """The part of a tensor one device holds."""
    T, out = split.tensor, list(shape)
    leaf, section = name.rsplit(".", 1)[-1], name.split(".")[-2] if "." in name else ""
    if section in ("attention", "cross") and leaf in HEADS:
        kv = section == "attention" and leaf in ("W_K", "W_V", "b_K", "b_V")
        out[0] = max(out[0] // T, 1) if kv else out[0] // T
    elif leaf in ("q_norm.gamma", "k_norm.gamma") or name.endswith(("q_norm.gamma", "k_norm.gamma")):
        if len(shape) == 2:  # per-head gains: with their heads
            out[0] = max(out[0] // T, 1)
    elif name.startswith(("blocks.", "encoder.")) and ".ff." in name and leaf in (*ROWS, *COLUMNS, "b2"):
        routed = bool(spec.E) and ".shared." not in name and len(shape) == (3 if leaf[0] == "W" else 2)
        if routed:  # (E, ...): whole experts over the expert-parallel devices
            out[0] //= split.expert
        if leaf != "b2":
            out[len(shape) - 1 if leaf in COLUMNS else int(routed)] //= T
    elif name in ("embedding.E", "head.W", "head.b"):
        axis = 1 if name == "embedding.E" else 0  # E is (d, V), the head (V, d)
        out[axis] = -(-out[axis] // T)
    return tuple(out)


def _per_stage(layers, N: int, P: int) -> list[int]:
    """How many of `layers` (a range of any size, or a list) each of P stages of N / P blocks holds."""
    size = N // P
    if isinstance(layers, range) and layers.step == 1:
        return [max(0, min(layers.stop, (p + 1) * size) - max(layers.start, p * size)) for p in range(P)]
    out = [0] * P
    for i in layers:
        out[i // size] += 1
    return out


def stage_weights(spec: Spec, split: Split, weights: str | Held = "bfloat16") -> list[int]:
    """Bytes each pipeline stage's devices hold of the weights (in a type's formula, or a file's bytes scaled to
    the shard)."""
    from ..components.held import Held
    from ..components.tensors import global_tensors, stack_tensors
    from .quantized import tensor_bytes

    def price(name: str, shape: tuple[int, ...]) -> int:
        shard = shard_shape(name, shape, spec, split)
        if isinstance(weights, Held):
            return -(-weights.tensors.get(name, 0) * math.prod(shard) // max(math.prod(shape), 1))
        return tensor_bytes(name, shard)[weights]

    P = split.pipeline
    out = [0] * P
    for stack in stacks(spec):
        for group in stack.groups():
            counts = _per_stage(group.layers, stack.spec.N, P) if stack.name == "blocks" else [len(group.layers)]
            if isinstance(weights, Held):  # a file's bytes, block by block
                for i in group.layers:
                    stage = i // (stack.spec.N // P) if stack.name == "blocks" else 0
                    out[stage] += sum(price(t.name, t.shape) for t in stack_tensors(stack, i))
                continue
            one = sum(price(t.name, t.shape) for t in stack_tensors(stack, group.layers[0]))
            for stage, count in enumerate(counts):
                out[stage] += count * one
    for t in global_tensors(spec):
        first = t.name.startswith(("embedding.", "positional.", "encoder_"))
        out[0 if first else -1] += price(t.name, t.shape)
        if t.name == "embedding.E" and spec.tie_embeddings and spec.head and P > 1:
            out[-1] += price(t.name, t.shape)  # the last stage's copy of a tied embedding
    return out


def kv_heads_per_device(spec: Spec, split: Split) -> int:
    return max(spec.kv_heads // split.tensor, 1)


def stage_cache(spec: Spec, split: Split, b: int, n: int, kv: str = "bfloat16", n_src: int | None = None) -> list[int]:
    """Bytes of KV cache each stage's devices hold for b sequences at context n."""
    out: list[Any] = [0] * split.pipeline  # (a GGML type's bytes an entry: a Fraction until the sum)
    if not decodes(spec):
        return out
    size, scale = KV_BYTES[kv], SCALE_BYTES.get(kv, 0)
    stack = decoder(spec)
    for group in stack.groups():
        held = block_bytes(attention_component(group.spec), n, size, scale, split.tensor)  # (a state's rows split)
        for stage, count in enumerate(_per_stage(group.layers, spec.N, split.pipeline)):
            out[stage] += count * b * held
    if stack.reads_memory:
        out[0] += (
            2 * b * spec.N * (spec.cross_kv_heads // split.tensor) * (n_src or n) * (spec.cross_size * size + scale)
        )
    return [math.ceil(bytes_) for bytes_ in out]


def local_spec(spec: Spec, split: Split) -> Spec:
    """The model as one tensor-parallel device runs it: H / T heads, its key/value heads, r / T hidden units,
    ceil(V / T) vocabulary rows (its activations and transient buffers are this spec's; d stays whole)."""
    T = split.tensor
    if T == 1:
        return spec
    changes: dict[str, Any] = {"H": spec.H // T, "r": spec.r // T}
    if spec.G is not None or spec.kv_heads != spec.H:
        changes["G"] = kv_heads_per_device(spec, split)
    if spec.V:
        changes["V"] = -(-spec.V // T)
    for key in ("expert_r", "shared_r", "cross_H"):
        if getattr(spec, key):
            changes[key] = getattr(spec, key) // T
    if decoder(spec).reads_memory and not spec.cross_H:
        changes["cross_H"] = spec.H // T
    return replace(spec, **changes)


def communication(spec: Spec, split: Split, s: int = 2) -> dict[str, int]:
    """Bytes a device of the busiest stage sends a token, by kind (the module's docstring): in the forward pass,
    and in training (as much again backwards)."""
    T, P, X, d = split.tensor, split.pipeline, split.expert, spec.d
    reductions = 1  # the embedding's, and each of its blocks' sums (the decoder's stage's N / P blocks)
    for stack in stacks(spec):
        blocks = stack.spec.N // P if stack.name == "blocks" else stack.spec.N
        reductions += blocks * Residuals(stack.spec).joins(stack.reads_memory)
    tensor = reductions * 2 * (T - 1) * d * s // T
    pipeline = d * s if P > 1 else 0  # each stage but the last passes the token on
    routed = sum(g.spec.N for g in decoder(spec).groups() if g.spec.E) // P if spec.E else 0
    expert = routed * 2 * (spec.k or 0) * (X - 1) * d * s // X
    forward = tensor + pipeline + expert
    return {
        "tensor_parallel": tensor,
        "pipeline_parallel": pipeline,
        "expert_parallel": expert,
        "forward": forward,
        "training": 2 * forward,
    }


@dataclass(frozen=True)
class Devices:
    """A split model's per-device figures (bytes): each stage's weights and KV cache, the largest of them, and
    the communication a token."""

    tensor_parallel: int
    pipeline_parallel: int
    expert_parallel: int
    devices: int
    weights_per_stage: list[int]
    kv_cache_per_stage: list[int]
    weights: int  # the largest stage's
    kv_cache: int
    communication_per_token: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def devices(
    spec: Spec,
    split: Split,
    b: int,
    n: int,
    weights: str | Held = "bfloat16",
    kv: str = "bfloat16",
    n_src: int | None = None,
) -> Devices:
    check_split(spec, split)
    held = stage_weights(spec, split, weights)
    cache = stage_cache(spec, split, b, n, kv, n_src)
    s = 4 if weights == "float32" else 2
    return Devices(
        split.tensor,
        split.pipeline,
        split.expert,
        split.devices,
        held,
        cache,
        max(held),
        max(cache),
        communication(spec, split, s),
    )


__all__ = [
    "Devices",
    "Split",
    "check_split",
    "communication",
    "devices",
    "local_spec",
    "shard_shape",
    "stage_cache",
    "stage_weights",
]
