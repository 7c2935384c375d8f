"""How costly a spec is: forward FLOPs by component, and memory for inference and training, from the spec alone.

Conventions (stated once here, in `tfm count` and the README, and used by every figure):
- a multiply-add is 2 FLOPs, so a product of (M, K) and (K, N) matrices is 2MKN FLOPs, MKN multiply-adds;
  "multiply-adds" counts the matrix products only (the linear layers, K^T Q and V A), nothing else;
- every other operation is 1 FLOP per entry: a bias add, a residual add, the score scaling (its own row);
  softmax 5 per score (max, subtract, exp, sum, divide); layer norm 7 per entry (mean, subtract, square,
  variance, scale, gamma, beta); ReLU 1 and GELU 9 per hidden entry (the tanh form, tanh counted as 1);
- attention is counted in full (n^2 scores); for causal specs a second figure counts only the allowed
  (key <= query) pairs, n(n+1)/2 per sequence and head, which is what a masked kernel needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..components import is_causal
from ..components.attention import SOFTMAX_PER_SCORE
from ..components.feedforward import ACTIVATION_PER_ENTRY
from ..components.norm import NORM_PER_ENTRY
from ..options import choice, count
from ..spec.definition import Spec
from ..spec.stacks import source_len
from .decode import decode_step, training_flops_per_token
from .flops import forward_flops, multiply_adds
from .kv_cache import KV_NOTE, kv_cache
from .memory import MemoryEstimate, estimate_pass
from .params import count_params
from .quantized import GROUP, QUANT_NOTE, weight_bytes

BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}
# training with Adam, bytes per parameter before activations: weights + gradients + two moments, and in mixed
# precision half-precision weights and gradients beside float32 master weights and moments (2 + 2 + 4 + 4 + 4)
ADAM_BYTES = {"float64": 32, "float32": 16, "float16_mixed": 16, "bfloat16_mixed": 16}
ADAM_NOTE = (
    "weights + gradients + Adam's two moments; mixed precision (float16/bfloat16) keeps float32 master weights "
    "and moments: 2 + 2 + 4 + 4 + 4 = 16 B per parameter; activations are not included"
)
CONVENTION = (
    "multiply-add = 2 FLOPs (multiply-adds: the matrix products only); other ops 1/entry; softmax 5/score, "
    "layer norm 7/entry, relu 1, gelu 9/entry"
)


@dataclass(frozen=True)
class Rows:
    """FLOPs or multiply-adds by row of `tfm count` (by component), and their total."""

    by_component: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.by_component.values())

    def to_dict(self) -> dict[str, Any]:
        return {"by_component": self.by_component, "total": self.total}


@dataclass(frozen=True)
class MemoryCosts:
    """Bytes: the weights by dtype (and quantised), training with Adam (no activations), a forward pass's peak
    in `dtype`, and the KV cache at the context by dtype."""

    weights: dict[str, int]
    training_adam: dict[str, int]
    forward_peak: MemoryEstimate
    dtype: str
    weights_quantized: dict[str, int]
    kv_cache: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights": self.weights,
            "training_adam": self.training_adam,
            "training_adam_bytes_per_parameter": ADAM_BYTES,
            "training_adam_note": ADAM_NOTE,
            "forward_peak": self.forward_peak.to_dict() | {"dtype": self.dtype},
            "weights_quantized": self.weights_quantized,
            "weights_quantized_note": QUANT_NOTE.format(g=GROUP),
            "kv_cache": self.kv_cache,
            "kv_cache_note": KV_NOTE,
        }


@dataclass(frozen=True)
class Costs:
    """FLOPs and memory of a spec at batch b and length n (an encoder-decoder: sources of source_len); the
    causal-pairs rows only for a causal spec. to_dict() is the JSON of `tfm count --seq-len`."""

    batch: int
    seq_len: int
    source_len: int | None
    flops: Rows
    multiply_adds: Rows
    memory: MemoryCosts
    training_flops_per_token: dict[str, int]
    decode_step: dict[str, Any]
    flops_causal_pairs: Rows | None = None
    multiply_adds_causal_pairs: Rows | None = None

    @property
    def kv_cache_bytes(self) -> int:
        """The KV cache at the context in the memory's dtype."""
        return self.memory.kv_cache[self.memory.dtype]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"batch": self.batch, "seq_len": self.seq_len}
        if self.source_len is not None:
            out["source_len"] = self.source_len
        out |= {
            "flop_convention": CONVENTION,
            "flops": self.flops.to_dict(),
            "multiply_adds": self.multiply_adds.to_dict(),
            "memory": self.memory.to_dict(),
            "kv_cache_bytes": self.kv_cache_bytes,
            "training_flops_per_token": self.training_flops_per_token,
            "decode_step": self.decode_step,
        }
        if self.flops_causal_pairs is not None and self.multiply_adds_causal_pairs is not None:
            out["flops_causal_pairs"] = self.flops_causal_pairs.to_dict()
            out["multiply_adds_causal_pairs"] = self.multiply_adds_causal_pairs.to_dict()
        return out


COST_DTYPES = ("float64", "float32")  # tfm's own NumPy pass, whose peak the memory figures give


def costs(spec: Spec, b: int, n: int, dtype: str = "float64", n_src: int | None = None) -> Costs:
    """FLOPs and memory of a spec at batch b and length n, as exact integers (an encoder-decoder: targets of n
    tokens, sources of n_src, default n); b, n, n_src and dtype checked as `tfm count` checks its options."""
    b, n = count(b, "batch"), count(n, "seq-len")
    n_src = None if n_src is None else count(n_src, "source-len")
    choice(dtype, "dtype", COST_DTYPES)
    params = count_params(spec).total
    n_src = source_len(spec, n, n_src)
    peak = estimate_pass(spec, b, n, dtype, n_src)
    quantised = weight_bytes(spec)
    memory = MemoryCosts(
        weights={name: params * size for name, size in BYTES.items()},
        training_adam={name: params * size for name, size in ADAM_BYTES.items()},
        forward_peak=peak,
        dtype=dtype,
        weights_quantized={kind: quantised[kind] for kind in ("float8", "int8", "int4")},
        kv_cache=kv_cache(spec, b, n, n_src),  # decoding at context n: what the decoder keeps
    )
    causal = is_causal(spec)
    return Costs(
        batch=b,
        seq_len=n,
        source_len=n_src,
        flops=Rows(forward_flops(spec, b, n, n_src=n_src)),
        multiply_adds=Rows(multiply_adds(spec, b, n, n_src=n_src)),
        memory=memory,
        training_flops_per_token=training_flops_per_token(spec, n),
        decode_step=decode_step(spec, n, "bfloat16", n_src),
        flops_causal_pairs=Rows(forward_flops(spec, b, n, causal_pairs=True, n_src=n_src)) if causal else None,
        multiply_adds_causal_pairs=Rows(multiply_adds(spec, b, n, causal_pairs=True, n_src=n_src)) if causal else None,
    )


__all__ = ["ACTIVATION_PER_ENTRY", "NORM_PER_ENTRY", "SOFTMAX_PER_SCORE", "Costs", "MemoryCosts", "Rows", "costs"]
