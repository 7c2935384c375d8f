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

from typing import Any

from ..components import is_causal
from ..components.attention import SOFTMAX_PER_SCORE
from ..components.feedforward import ACTIVATION_PER_ENTRY
from ..components.norm import NORM_PER_ENTRY
from ..spec.definition import Spec
from .decode import decode_step, training_flops_per_token
from .flops import forward_flops, multiply_adds
from .kv_cache import KV_NOTE, kv_cache
from .memory import estimate_encoder_decoder, estimate_forward
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


def _with_total(parts: dict[str, int]) -> dict[str, Any]:
    return {"by_component": parts, "total": sum(parts.values())}


def costs(spec: Spec, b: int, n: int, dtype: str = "float64", n_src: int | None = None) -> dict[str, Any]:
    """FLOPs and memory of a spec at batch b and length n, as exact integers (an encoder-decoder: targets of n
    tokens, sources of n_src, default n)."""
    params = count_params(spec).total
    n_src = (n_src or n) if spec.N_enc else None
    if spec.N_enc:
        peak = estimate_encoder_decoder(spec, b, n_src, n, dtype)
    else:
        peak = estimate_forward(spec, b, n, dtype)
    out: dict[str, Any] = {
        "batch": b,
        "seq_len": n,
        **({"source_len": n_src} if spec.N_enc else {}),
        "flop_convention": CONVENTION,
        "flops": _with_total(forward_flops(spec, b, n, n_src=n_src)),
        "multiply_adds": _with_total(multiply_adds(spec, b, n, n_src=n_src)),
        "memory": {
            "weights": {name: params * size for name, size in BYTES.items()},
            "training_adam": {name: params * size for name, size in ADAM_BYTES.items()},
            "training_adam_bytes_per_parameter": ADAM_BYTES,
            "training_adam_note": ADAM_NOTE,
            "forward_peak": peak.to_dict() | {"dtype": dtype},
        },
    }
    quantised = weight_bytes(spec)
    out["memory"]["weights_quantized"] = {dtype: quantised[dtype] for dtype in ("float8", "int8", "int4")}
    out["memory"]["weights_quantized_note"] = QUANT_NOTE.format(g=GROUP)
    out["memory"]["kv_cache"] = kv_cache(spec, b, n, n_src)  # decoding at context n: what the decoder keeps
    out["memory"]["kv_cache_note"] = KV_NOTE
    out["kv_cache_bytes"] = out["memory"]["kv_cache"][dtype]
    out["training_flops_per_token"] = training_flops_per_token(spec, n)
    out["decode_step"] = decode_step(spec, n, "bfloat16", n_src)
    if is_causal(spec):
        out["flops_causal_pairs"] = _with_total(forward_flops(spec, b, n, causal_pairs=True, n_src=n_src))
        out["multiply_adds_causal_pairs"] = _with_total(multiply_adds(spec, b, n, causal_pairs=True, n_src=n_src))
    return out


__all__ = ["ACTIVATION_PER_ENTRY", "NORM_PER_ENTRY", "SOFTMAX_PER_SCORE", "costs"]
