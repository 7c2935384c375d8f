"""llama.cpp's memory as it runs a model: its context's cells, its KV cache (K and V apart, in GGML's types), its
recurrent states, its output buffer and its compute buffer, ported from its source (src/llama-context.cpp,
llama-kv-cache.cpp, llama-kv-cache-iswa.cpp, llama-kv-cache-dsa.cpp, llama-memory-recurrent.cpp) and checked against
its own logs (tests/data/llama_cpp_buffers.json, recorded by scripts/record_llamacpp_buffers.py).

- The context: n_ctx padded to 256; with several sequences (--parallel P, not unified), P streams of
  pad(n_ctx / P, 256) cells each; unified (-kvu), one stream of n_ctx cells the sequences share.
- A block that attends keeps K and V for every cell; a sliding-window block (SWA) pad(min(cells, window x (P if
  unified) + ubatch), 256) cells, unless --swa-full; latent attention keeps K alone (the latent and its rotary part);
  an indexer (DeepSeek-V3.2's, GLM-DSA's) its keys besides, in K's type. Without flash attention V is held
  transposed, every block's V as wide as the widest.
- A recurrent block keeps R (its convolution's last columns) and S (its state) per sequence, in float32, whatever
  the context.
- The output buffer holds the logits of one token per sequence (float32), as llama.cpp reserves it at creation
  (it grows later if a batch asks for more).
- The compute buffer is ggml-alloc's peak over the graph llama.cpp reserves (a prefill of one ubatch against the
  whole cache): no closed form exists in llama.cpp's source. tfm estimates it as the largest of three moments:
  the head's logits, attention's scores (without flash attention: the (cells, ubatch, H) scores and the float32
  mask; with it, the float16 mask), and a mixture's routed tokens; each beside the block's activations
  (COMPUTE_NOTE). The tests measure its error against llama.cpp's own figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..components import attention_component
from ..components.base import GgmlCache
from ..errors import SpecError
from ..spec.definition import Spec
from ..spec.stacks import decoder, encoder
from .quantized import GGML

# GGML's types a cache may take (-ctk, -ctv): elements per block, bytes per block (quantized.GGML's, gguf's own)
GGML_BLOCKS = {"f32": (1, 4), "f16": (1, 2), "bf16": (1, 2)}
GGML_BLOCKS |= {kind: GGML[kind] for kind in ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")}
CACHE_TYPES = tuple(GGML_BLOCKS)
PAD = 256  # GGML_PAD(n_ctx, 256): llama-context.cpp
COMPUTE_NOTE = (
    "estimate of ggml-alloc's peak: the largest of the head's logits (ubatch x V floats), attention's scores "
    "(without flash attention cells x ubatch x H floats and a float32 mask; with it a float16 mask; an indexer's "
    "scores and the mask of the keys it keeps) and a mixture's routed tokens, each beside the block's activations"
)


@dataclass(frozen=True)
class Runtime:
    """llama.cpp's context parameters (llama_context_params; its CLI's flags in the comments)."""

    n_ctx: int  # -c
    ubatch: int = 512  # -ub
    batch: int = 2048  # -b
    parallel: int = 1  # -np: sequences (n_seq_max)
    unified: bool = False  # -kvu: one cache the sequences share
    type_k: str = "f16"  # -ctk
    type_v: str = "f16"  # -ctv
    flash_attn: bool = True  # -fa (auto: on where the device runs it, as on the CPU)
    swa_full: bool = False  # --swa-full


@dataclass(frozen=True)
class Cells:
    """The context as llama.cpp lays it out: n_ctx after padding, cells per stream, streams."""

    n_ctx: int
    per_stream: int
    streams: int
    ubatch: int  # min(ubatch, batch, the context asked)


@dataclass(frozen=True)
class LayerMemory:
    """One block's memory in llama.cpp: K, V and an indexer's keys over its cells, R and S of its state."""

    cells: int  # per stream (a sliding window's fewer)
    k: int
    v: int
    r: int
    s: int
    window: bool
    index: int = 0  # (llama-kv-cache-dsa.cpp: a cache of its own, in K's type)

    @property
    def total(self) -> int:
        return self.k + self.v + self.r + self.s + self.index


def row_bytes(kind: str, n: int, what: str = "a row") -> int:
    """Bytes of n elements of GGML type `kind` (ggml_row_size): whole blocks only."""
    block, size = GGML_BLOCKS[kind]
    if n % block:
        raise SpecError(f"{what} of {n} entries is no whole number of {kind}'s blocks of {block}")
    return n // block * size


def cells(rt: Runtime) -> Cells:
    """n_ctx, its cells per stream and its streams (llama-context.cpp: padding to 256, a stream per sequence)."""
    if rt.parallel < 1 or rt.parallel > 256:
        raise SpecError(f"--parallel {rt.parallel}: llama.cpp runs 1 to 256 sequences (LLAMA_MAX_SEQ)")
    batch = min(rt.n_ctx, rt.batch)  # (a causal model's batch: at most the context)
    ubatch = min(batch, rt.ubatch)
    n_ctx = -(-rt.n_ctx // PAD) * PAD
    if rt.unified:
        return Cells(n_ctx, n_ctx, 1, ubatch)
    per_stream = -(-(n_ctx // rt.parallel) // PAD) * PAD
    return Cells(per_stream * rt.parallel, per_stream, rt.parallel, ubatch)


def block_caches(spec: Spec) -> list[tuple[GgmlCache, int | None]]:
    """Each block's GgmlCache and sliding window (None: it sees every cell), in order."""
    if encoder(spec) is not None or spec.mask != "causal":
        raise SpecError(f"{spec.label}: llama.cpp's memory is modelled for decoders alone, not an encoder's")
    stack = decoder(spec)
    if spec.N > 100_000:
        raise SpecError(f"{spec.label}: N = {spec.N} blocks; llama.cpp's plan takes up to 100,000")
    out: list = [None] * spec.N
    for group in stack.groups():
        mixer = attention_component(group.spec)
        cache = mixer.ggml_cache()
        if cache is None:
            raise SpecError(f"{spec.label}: llama.cpp's memory of a block of '{group.spec.attention}' is not modelled")
        window = group.spec.window or group.spec.chunk
        for i in group.layers:
            out[i] = (cache, window)
    return out


def check(spec: Spec, rt: Runtime) -> None:
    """What llama.cpp refuses of these caches (llama_init_from_model), in its words."""
    for kind, option in ((rt.type_k, "kv-dtype"), (rt.type_v, "v-dtype")):
        if kind not in GGML_BLOCKS:
            raise SpecError(f"--{option} {kind}: expected one of {', '.join(CACHE_TYPES)}")
    blocks = [cache for cache, _ in block_caches(spec)]
    latent = any(c.k and not c.v for c in blocks)
    if latent and rt.type_k != rt.type_v:
        raise SpecError(
            f"{spec.label}: llama.cpp's latent attention keeps K alone: --v-dtype {rt.type_v} must be K's "
            f"{rt.type_k} (llama.cpp: model does not support different K and V cache types)"
        )
    quantised_v = GGML_BLOCKS[rt.type_v][0] > 1
    if quantised_v and not rt.flash_attn:
        raise SpecError(f"--v-dtype {rt.type_v}: a quantised V cache needs flash attention (llama.cpp refuses it)")
    if rt.flash_attn:
        for kind, sizes, name in (
            (rt.type_k, [c.head_k for c in blocks], "k"),
            (rt.type_v, [c.head_v for c in blocks], "v"),
        ):
            block = GGML_BLOCKS[kind][0]
            bad = next((m for m in sizes if m % block), None)
            if bad is not None:
                raise SpecError(
                    f"{spec.label}: {kind}'s blocks of {block} do not divide a head of {bad} entries "
                    f"(llama.cpp: {name.upper()} cache type {kind} does not divide n_embd_head_{name}={bad})"
                )


def layer_memory(spec: Spec, rt: Runtime) -> list[LayerMemory]:
    """Each block's memory (llama_kv_cache, llama_kv_cache_iswa, llama_memory_recurrent): its window is the one
    tfm writes in the file (attention.sliding_window), which llama.cpp reads."""
    check(spec, rt)
    c = cells(rt)
    blocks = block_caches(spec)
    widest_v = max((cache.v for cache, _ in blocks), default=0)
    sequences = max(1, rt.parallel)
    out = []
    for cache, window in blocks:
        size = c.per_stream
        if window and not rt.swa_full:
            span = window * (rt.parallel if rt.unified else 1) + c.ubatch
            size = -(-min(c.per_stream, span) // PAD) * PAD
        v = cache.v if rt.flash_attn or not cache.v else widest_v  # (transposed V: the widest, llama.cpp pads)
        keys, index = row_bytes(rt.type_k, cache.k, "a K"), row_bytes(rt.type_k, cache.index_k, "an index key")
        values = row_bytes(rt.type_v, v, "a cache's V")
        r, s = (4 * x * sequences for x in (cache.r, cache.s))
        cells_held = size * c.streams
        out.append(LayerMemory(size, keys * cells_held, values * cells_held, r, s, bool(window), index * cells_held))
    return out


def output_bytes(spec: Spec, rt: Runtime) -> int:
    """The output buffer llama.cpp reserves at creation: one token's logits per sequence, float32."""
    return 4 * (spec.V or 0) * max(1, rt.parallel)


def compute_bytes(spec: Spec, rt: Runtime, head: bool = True) -> int:
    """An estimate of the compute buffer (ggml-alloc's peak over the graph llama.cpp reserves: a prefill of one
    ubatch against the whole cache): the largest of the moments in COMPUTE_NOTE; without the head's (a device
    holding blocks but not the output layer), the blocks' alone."""
    c = cells(rt)
    T, d, V = c.ubatch, spec.d, spec.V or 0
    memory = layer_memory(spec, rt)
    masks = _masks(memory, rt)  # (alive until the last block attends)
    rows = -(-T // c.streams) * c.streams  # (each stream's queries against its own cells)
    moments = [4 * T * (V + 2 * d) if head else 0]  # the head's logits beside the last stream
    for group in decoder(spec).groups():
        cache = attention_component(group.spec).ggml_cache()
        assert cache is not None  # (layer_memory refused it)
        if cache.k:
            H, keys = group.spec.H, memory[group.layers[0]].cells
            scores = 0 if rt.flash_attn else 4 * rows * keys * H
            if cache.index_k:  # (an indexer's scores, float32, and the mask of the keys it keeps)
                scores += (4 + (2 if rt.flash_attn else 4)) * rows * keys
            moments.append(masks + scores + 4 * T * (3 * d + 2 * H * group.spec.m + 2 * cache.k))
        if group.spec.E:
            routed = group.spec.expert_r or group.spec.r
            moments.append(masks + 4 * T * ((group.spec.k or 1) * 3 * routed + group.spec.E + 4 * d))
    return max(moments)


def masks_bytes(spec: Spec, rt: Runtime) -> int:
    """The attention masks a pass reads (llama-graph.cpp: one per cache size, cells x ubatch, float16 with flash
    attention, else float32)."""
    return _masks(layer_memory(spec, rt), rt)


def _masks(memory: list[LayerMemory], rt: Runtime) -> int:
    c = cells(rt)
    rows = -(-c.ubatch // c.streams) * c.streams
    return sum((2 if rt.flash_attn else 4) * rows * size for size in {m.cells for m in memory if m.k})


def input_bytes(spec: Spec, rt: Runtime) -> int:
    """What a device's part of the graph reads from another backend: the stream of the ubatch's tokens and the
    masks (llama.cpp's pipeline parallelism keeps 4 copies of these: ggml-backend's GGML_SCHED_MAX_COPIES)."""
    return 4 * cells(rt).ubatch * spec.d + masks_bytes(spec, rt)


__all__ = [
    "CACHE_TYPES",
    "GGML_BLOCKS",
    "Runtime",
    "cells",
    "compute_bytes",
    "input_bytes",
    "layer_memory",
    "masks_bytes",
    "output_bytes",
]
