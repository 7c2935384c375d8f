"""Training FLOPs per token, and one decoding step: its FLOPs, the bytes it reads, their ratio (issue 14, item 5).

Training: the matrix products of the backward pass cost twice the forward's (a gradient for the input and one for
the weight of every product, attention's included), so a training step's products are exactly 3 x the forward's.
The 6N rule is that figure with attention left out and N the parameters a token's products use: it is shown beside
the exact count. Other operations (softmax, norms, activations) are left out of both, as the 6N rule does.

Decoding: the token at context n (the n-th, its n - 1 predecessors cached) multiplies every weight matrix it uses
once (2 FLOPs a parameter: the k routed experts, not all E) and, in each block, its query with the cached keys
and the weights with the cached values (2 x 2 H m FLOPs a cached token); it reads the weights it uses (not the
embedding table, of which it needs one row) and the whole cache. FLOPs over bytes is its arithmetic
intensity: far below what a GPU needs to be compute-bound (hundreds of FLOPs a byte), which is why decoding is
limited by memory bandwidth.
"""

from __future__ import annotations

from ..components import Pairs, components
from ..components.held import Held
from ..components.tensors import global_tensors
from ..spec.definition import Spec
from ..spec.stacks import decoder
from .flops import multiply_adds
from .kv_cache import cached_tokens, kv_cache_bytes
from .params import count_params
from .quantized import tensor_bytes


def training_flops_per_token(spec: Spec, n: int) -> dict[str, int]:
    """A training step's matrix-product FLOPs per token at length n: exactly 3 x the forward's, and the 6N rule."""
    forward = 2 * sum(multiply_adds(spec, 1, n).values())  # one sequence of n tokens
    linear = 2 * multiply_adds(spec, 1, 1)["linear layers"]  # a token's products with the weights alone
    return {"exact": 3 * forward // n, "six_n_rule": 3 * linear}


LOOKUPS = ("embedding.E", "embedding.T", "positional.P")  # (the encoder's are not read at all)


def step_multiply_adds(spec: Spec, n: int, n_src: int | None = None) -> tuple[int, int]:
    """One sequence's decoding step at context n: the multiply-adds with the weights, and with the cache."""
    one = Pairs(1, 1)
    weights = sum(c.multiply_adds(1, 1, one).get("linear layers", 0) for c in components(spec))  # the decoder's
    groups = decoder(spec).groups()  # K^T q and V p, in every block, over its window's keys
    attention = sum(2 * g.spec.N * spec.H * spec.m * cached_tokens(g.spec, n) for g in groups)
    if decoder(
        spec
    ).reads_memory:  # its cross-attention: W_Q and W_O per token, and n_src cached keys and values to read
        weights += 2 * spec.N * spec.cross_heads * spec.cross_size * spec.d
        attention += 2 * spec.N * spec.cross_heads * spec.cross_size * (n_src or n)
    return weights, attention


def weights_read(spec: Spec, b: int, dtype: str | Held) -> int:
    """Bytes of weights a decoding step for b sequences reads: every tensor its tokens use once, but not the
    lookup tables (a row each; the token embedding is read whole when it is also the head), not the encoder,
    and of routed experts at most min(E, b k) a block. `dtype` a type, or the bytes a file holds (Held)."""
    if isinstance(dtype, Held):
        return _held_read(spec, b, dtype)
    sizes = {t.name: tensor_bytes(t.name, t.shape)[dtype] for t in global_tensors(spec)}
    total = sum(v for name, v in sizes.items() if not name.startswith("encoder") and name not in LOOKUPS)
    if spec.tie_embeddings and "embedding.E" in sizes:
        total += sizes["embedding.E"]
    for section in count_params(spec, check=False).decoder:  # blocks alike (dense and routed ones differ)
        for t in section.tensors:
            size = tensor_bytes(t.name, t.shape)[dtype]
            if t.component == "experts":  # (E, ...): of E experts, the b k chosen at most
                E, k = spec.E or 1, spec.k or 1  # (a block with experts: both set)
                size = size * min(E, b * k) // E
            total += section.copies * size
    return total


def _held_read(spec: Spec, b: int, held: Held) -> int:
    """weights_read on a file's own bytes, tensor by tensor (its blocks may differ: Q4_K_M's Q6_K ones)."""
    experts = {
        t.name.split(".", 2)[-1]
        for s in count_params(spec, check=False).decoder
        for t in s.tensors
        if t.component == "experts"
    }
    E, k = spec.E or 1, spec.k or 1
    total = 0
    for name, size in held.tensors.items():
        if name.startswith("encoder") or (name in LOOKUPS and not (name == "embedding.E" and spec.tie_embeddings)):
            continue
        total += size * min(E, b * k) // E if name.split(".", 2)[-1] in experts else size
    return total


def decode_step(spec: Spec, n: int, dtype: str = "bfloat16", n_src: int | None = None) -> dict[str, float | int]:
    """The n-th token's decoding step (batch 1): FLOPs of its products, bytes of the weights it reads and of the
    cache, and FLOPs per byte. An encoder-decoder's decoder reads the source's keys and values too."""
    weights, attention = step_multiply_adds(spec, n, n_src)
    flops = 2 * (weights + attention)
    read = weights_read(spec, 1, dtype) + kv_cache_bytes(spec, 1, n, dtype, n_src)
    return {"flops": flops, "bytes": read, "flops_per_byte": flops / read}
