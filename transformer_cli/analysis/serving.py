"""Serving memory from the spec: weights + KV cache + the prefill's transient peak, and the largest batch or
context that fits a memory.

The transient peak is what a plain (not chunked) prefill of b prompts of n tokens holds at once beyond the
weights and the cache, in the compute dtype (bfloat16 unless the weights are float32): the residual stream,
and the largest of
- attention: the norm's output, Q and the heads' output, and the scores: without a fused kernel the (H, n, n)
  scores and their softmax, both alive (K and V go straight into the cache); a fused kernel (FlashAttention)
  keeps its tiles on chip, so no n^2 term;
- feedforward: the norm's output and the hidden rows (plain: the pre-activation and activation; gated: gate,
  up and their product; routed experts: the same for every token, as if one expert took them all);
- the head: the final norm's output of every position and the logits of each prompt's last position (b V: what
  a serving engine computes, `logits="last"`, the default), or of every position (b n V: what a forward pass
  returns, `logits="all"`).
An encoder-decoder runs its encoder first; its output (b n_src d) is held while the decoder runs, and the
cross-attention's scores are (H_c, n, n_src). Not included: the framework's own memory (CUDA context, the
allocator's reserve), which adds a constant.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..spec.definition import Spec
from ..spec.stacks import decoder as decoder_of
from ..spec.stacks import encoder as encoder_of
from .kv_cache import served_cache_bytes

if TYPE_CHECKING:  # (quantized.py counts parameters: not imported by `tfm --help`)
    from ..components.held import Held
    from .parallel import Split

WEIGHT_DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "float8",
    "int8",
    "int4",
    "nf4",
    "bnb_int8",
    "q8_0",
    "q4_0",
    "q4_1",
    "q5_0",
    "q5_1",
    "q2_k",
    "q3_k",
    "q4_k",
    "q5_k",
    "q6_k",
    "iq4_nl",
    "iq4_xs",
)  # (quantized.py's GGML types last)
# llama.cpp's file types mixing types, as llama-quantize types each tensor (gguf/quant_rules.py); those named as a
# GGML type above (q4_0, q6_k, iq4_xs, ...) are that file type where llama.cpp has the model (its head Q6_K, ...)
FILE_TYPES_AS_GGML = ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q6_k", "iq4_nl", "iq4_xs")
GGUF_MIXES: tuple[str, ...] = (
    "q2_k_s",
    "q3_k_s",
    "q3_k_m",
    "q3_k_l",
    "q4_k_s",
    "q4_k_m",
    "q5_k_s",
    "q5_k_m",
    "iq1_s",
    "iq1_m",
)
GGUF_MIXES += (
    "iq2_xxs",
    "iq2_xs",
    "iq2_s",
    "iq2_m",
    "iq3_xxs",
    "iq3_xs",
    "iq3_s",
    "iq3_m",
    "tq1_0",
    "tq2_0",
    "mxfp4_moe",
)
KERNELS = {"fused_attention": True, "unfused_attention": False}  # the two ways attention is computed


def compute_bytes(weights: str | Held) -> int:
    """Bytes an activation: float32 weights compute in float32, the rest in 16 bits."""
    return 4 if weights == "float32" else 2


MAX_CONTEXT = 1 << 40  # the search for the largest context stops here


@dataclass(frozen=True)
class Transient:
    """The prefill's transient peak in bytes, and its parts (see the module's docstring)."""

    residual_stream: int
    blocks: int
    logits: int
    encoder: int
    total: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Serving:
    """A served model's memory in bytes: weights, the KV cache at the context, the prefill's transient peak."""

    weights: int
    kv_cache: int
    transient: int
    total: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Fit:
    """What fits a memory budget: the largest batch at the context, the largest context at the batch."""

    memory: int
    context: int
    max_batch_at_context: int
    batch: int
    max_context_at_batch: int
    context_cap: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _stack_peak(spec: Spec, b: int, n: int, keys: int, s: int, fused: bool) -> int:
    """The largest transient of one stack's blocks over b sequences of n queries reading `keys` keys each."""
    from ..components import attention_component, block_feedforward  # (here: `tfm --help` imports this module)

    T, d = b * n, spec.d
    attention = attention_component(spec).transient_bytes(b, n, keys, s, fused)
    feedforward = T * (d + block_feedforward(spec).transient_per_token()) * s
    return max(attention, feedforward)


LOGITS = ("last", "all")  # the prefill's logits: of each prompt's last position, or of every position


def transient(
    spec: Spec, b: int, n: int, s: int, fused: bool = True, n_src: int | None = None, logits: str = "last"
) -> Transient:
    """The prefill's transient peak and its parts, in bytes."""
    from ..components.embedding import head as head_of  # (here: `tfm --help` imports this module)
    from ..components.encoder import CrossAttention

    T, d = b * n, spec.d
    blocks = max(_stack_peak(group.spec, b, n, n, s, fused) for group in decoder_of(spec).groups())
    rows = T if logits == "all" else b  # the positions the head multiplies
    head = head_of(spec).prefill_bytes(T, rows, s)  # its input(s), the logits
    memory = encoder = 0
    source = encoder_of(spec)
    if source is not None:
        n_src = n_src or n
        memory = b * n_src * d * s  # the encoder's output, held while the decoder runs
        encoder = b * n_src * d * s + _stack_peak(source.spec, b, n_src, n_src, s, fused)
        blocks = max(blocks, CrossAttention(spec).transient_bytes(b, n, n_src, s, fused))
    stream = T * spec.stream_rows * s  # the residual stream (Gemma 3n's: its K streams)
    decoder = memory + stream + max(blocks, head)  # the residual stream and the largest phase
    return Transient(stream, blocks, head, encoder, max(decoder, encoder))


def _device(
    spec: Spec, weights: str | Held, kv: str, fused: bool, n_src: int | None, split: Split | None, logits: str = "last"
):
    """(weights, cache(b, n), transient(b, n)) of one device: the whole model's, or a split one's largest stage
    (parallel.py)."""
    from .quantized import total_bytes  # (here: `tfm --help` imports this module for the weights' types)

    s = compute_bytes(weights)
    if split is None or split.trivial:
        return (
            total_bytes(spec, weights),
            lambda b, n: served_cache_bytes(spec, b, n, kv, n_src),
            lambda b, n: transient(spec, b, n, s, fused, n_src, logits).total,
        )
    from .parallel import local_spec, stage_cache, stage_weights  # (here: it imports the components)

    local = local_spec(spec, split)
    return (
        max(stage_weights(spec, split, weights)),
        lambda b, n: max(stage_cache(spec, split, b, n, kv, n_src)),
        lambda b, n: transient(local, b, n, s, fused, n_src, logits).total,
    )


def serving_memory(
    spec: Spec,
    b: int,
    n: int,
    weights: str | Held = "bfloat16",
    kv: str = "bfloat16",
    fused: bool = True,
    n_src: int | None = None,
    split: Split | None = None,
    logits: str = "last",
) -> Serving:
    """Weights + KV cache at context n + the prefill's transient peak, for b sequences (of one device of a split
    model: its largest stage's)."""
    fixed, cache, peak = _device(spec, weights, kv, fused, n_src, split, logits)
    parts = (fixed, cache(b, n), peak(b, n))
    return Serving(*parts, sum(parts))


def _largest(ok, limit: int) -> int:
    """The largest x in 1..limit with ok(x), for ok true up to some x and false after; 0 if ok(1) is false."""
    if not ok(1):
        return 0
    low = 1
    while low < limit and ok(min(2 * low, limit)):  # double while it fits
        low = min(2 * low, limit)
    if low == limit:
        return limit
    high = min(2 * low, limit)  # does not fit
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if ok(mid) else (low, mid)
    return low


def context_cap(spec: Spec) -> int | None:
    """The longest context the model takes: learned positions' max_len, else the context it was made for."""
    caps = [c for c in (spec.max_len, spec.context) if c]
    return min(caps) if caps else None


def fits(
    spec: Spec,
    budget: int,
    b: int,
    n: int,
    weights: str | Held = "bfloat16",
    kv: str = "bfloat16",
    fused: bool = True,
    n_src: int | None = None,
    split: Split | None = None,
    logits: str = "last",
) -> Fit:
    """The largest batch at context n, and the largest context at batch b, whose serving memory fits `budget`
    (on each device of a split model; 0 when not even one sequence of n tokens, or b sequences of one token,
    fits); the context is capped at the model's own (context_cap)."""
    fixed, cache, peak = _device(spec, weights, kv, fused, n_src, split, logits)  # weights do not grow with b, n

    def total(b: int, n: int) -> int:
        return fixed + cache(b, n) + peak(b, n)

    cap = context_cap(spec) or MAX_CONTEXT
    return Fit(
        budget,
        n,
        _largest(lambda x: total(x, n) <= budget, MAX_CONTEXT),
        b,
        _largest(lambda x: total(b, x) <= budget, cap),
        context_cap(spec),
    )
