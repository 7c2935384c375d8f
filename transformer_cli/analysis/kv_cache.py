"""The key/value cache of decoding: the bytes a decoder holds to produce the next token, exact integers.

Each block keeps the keys and values of the tokens its queries may still read: G key/value heads of size m per
token (grouped-query attention caches G heads, not H). Convention for a sliding window w: the cache counts the
w keys a query reads at its step (the w - 1 kept from earlier steps and its own, held together while it
attends), so at most w tokens; tfm's decoder holds exactly that (checked byte for byte in the tests). An
encoder-decoder's decoder also keeps the cross-attention's keys and values of the source, made once from the
encoder's output: H_c heads of size m_c per source token, in each block. The encoder keeps nothing.

Element types: float64 (tfm's own decoder's default), float32, float16, bfloat16, float8 (one byte, no scales
modelled) and int8 with a float16 scale per head and token for K and for V (per-token quantisation); and GGML's,
as llama.cpp names them (-ctk: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl), at the bytes per entry their
blocks hold (Q8_0: 34 bytes per 32 entries); the plan's llama.cpp part holds them row by row as llama.cpp does, K
and V apart (analysis/llama_cpp.py).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import decoder

GGML_KV: dict[str, Any] = {"f32": 4, "f16": 2, "bf16": 2}  # (bytes an entry: int or Fraction)
GGML_KV |= {k: Fraction(size, 32) for k, size in (("q8_0", 34), ("q4_0", 18), ("q4_1", 20), ("q5_0", 22))}
GGML_KV |= {k: Fraction(size, 32) for k, size in (("q5_1", 24), ("iq4_nl", 18))}
TENSOR_KV: dict[str, Any] = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8": 1, "int8": 1}
KV_BYTES = TENSOR_KV | GGML_KV
SCALE_BYTES = {"int8": 2}  # a float16 scale per head and token, for K and for V
KV_NOTE = (
    "2 (K and V) x batch x bytes x sum over blocks of (G x m x cached tokens), cached tokens = min(n, window); "
    "encoder-decoders add 2 x batch x bytes x N x H_c x m_c x n_src for the cross-attention; int8 adds a float16 "
    "scale per head and token; a block of another mixer (LFM2's short convolutions) keeps a fixed state per sequence "
    "instead (its last L columns of d)"
)


NO_DECODING = (
    "no causal mask: the model reads its whole input in one forward pass and does not decode token by token, so "
    "it keeps no KV cache and takes no decoding steps"
)


def decodes(spec: Spec) -> bool:
    """Whether the model decodes token by token (a causal stack, an encoder-decoder's decoder), keeping a KV
    cache; an encoder (no causal mask, BERT) runs one forward pass over its whole input."""
    return spec.mask == "causal"


def cached_tokens(spec: Spec, n: int) -> int:
    """Tokens each block's self-attention cache holds while the n-th token attends: n, or at most the window."""
    span = spec.window or spec.chunk  # (a chunk's keys at most: Llama 4's chunked blocks)
    return min(n, span) if span else n


def block_bytes(mixer, n: int, size: Any, scale: int, tensor: int = 1) -> Any:
    """One block's cache for one sequence at context n, on one of `tensor` devices: its window's (or all) tokens'
    keys and values and its fixed state, or what the mixer says it holds at n (DeepSeek-V4's entries: bytes_at)."""
    from ..components import ngram_parts

    others = sum(part.state_bytes(size) for part in ngram_parts(mixer.spec))  # (Qwen4's n-gram inputs' state)
    if hasattr(mixer, "bytes_at"):
        return mixer.bytes_at(n, size, scale) + others
    per_token = mixer.cache_per_token(size, scale) if tensor == 1 else mixer.device_cache_per_token(size, scale, tensor)
    return cached_tokens(mixer.spec, n) * per_token + -(-mixer.state_bytes(size) // tensor) + others


def kv_cache_bytes(spec: Spec, b: int, n: int, dtype: str = "float32", n_src: int | None = None) -> int:
    """The cache's bytes for b sequences at context n (an encoder-decoder: sources of n_src, default n; a GGML
    type's blocks whole)."""
    from ..components import attention_component  # (here: `tfm --help` imports this module for KV_BYTES)

    size, scale = KV_BYTES[dtype], SCALE_BYTES.get(dtype, 0)
    # each group of blocks alike keeps its own window's tokens, each token what its attention caches (G keys and
    # values of m, or latent attention's latent and rotary key); a recurrent mixer's blocks (LFM2's convolutions)
    # a fixed state per sequence instead
    total = sum(b * g.spec.N * block_bytes(attention_component(g.spec), n, size, scale) for g in decoder(spec).groups())
    if decoder(spec).reads_memory:
        cross = spec.N * spec.cross_kv_heads * (n_src or n)
        total += 2 * b * cross * (spec.cross_size * size + scale)
    return math.ceil(total)


def state_bytes(spec: Spec, b: int, dtype: str = "float32") -> int:
    """The part of the cache that does not grow with the context: b sequences' recurrent states (LFM2's last L
    columns per convolution block), 0 for a model that attends in every block."""
    from ..components import attention_component, ngram_parts

    size = KV_BYTES[dtype]
    parts = ((g.spec.N, (attention_component(g.spec), *ngram_parts(g.spec))) for g in decoder(spec).groups())
    return math.ceil(sum(b * N * sum(part.state_bytes(size) for part in own) for N, own in parts))


def served_state_bytes(spec: Spec, b: int, dtype: str = "float32") -> int:
    """state_bytes for a model that decodes, 0 for an encoder."""
    return state_bytes(spec, b, dtype) if decodes(spec) else 0


def served_cache_bytes(spec: Spec, b: int, n: int, dtype: str = "float32", n_src: int | None = None) -> int:
    """The cache a served model holds: kv_cache_bytes for a model that decodes, 0 for an encoder (it keeps none)."""
    return kv_cache_bytes(spec, b, n, dtype, n_src) if decodes(spec) else 0


def kv_cache(spec: Spec, b: int, n: int, n_src: int | None = None) -> dict[str, int]:
    """The cache in every element type of the frameworks' tensors (GGML's: `tfm plan --kv-dtype`)."""
    return {dtype: kv_cache_bytes(spec, b, n, dtype, n_src) for dtype in TENSOR_KV}
