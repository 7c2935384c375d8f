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

from ..components import Pairs, check_one_stack, components, is_causal
from ..components.attention import SOFTMAX_PER_SCORE
from ..components.feedforward import ACTIVATION_PER_ENTRY
from ..components.norm import NORM_PER_ENTRY
from ..spec.definition import Spec
from .memory import estimate_forward
from .params import count_params

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


def _summed(parts: list[dict[str, int]]) -> dict[str, int]:
    """Rows of several components, rows of the same name added (the order of first appearance kept)."""
    out: dict[str, int] = {}
    for part in parts:
        for name, value in part.items():
            out[name] = out.get(name, 0) + value
    return out


def multiply_adds(spec: Spec, b: int, n: int, causal_pairs: bool = False) -> dict[str, int]:
    """Multiply-adds of the forward pass's matrix products, by product, for b sequences of n tokens."""
    pairs = Pairs(b, n, causal_pairs, spec.window)
    return _summed([c.multiply_adds(b, n, pairs) for c in components(spec)])


def forward_flops(spec: Spec, b: int, n: int, causal_pairs: bool = False) -> dict[str, int]:
    """Forward FLOPs by component for b sequences of n tokens; `causal_pairs` counts allowed pairs only."""
    pairs = Pairs(b, n, causal_pairs, spec.window)
    return _summed([c.flops(b, n, pairs) for c in components(spec)])


def _with_total(parts: dict[str, int]) -> dict[str, Any]:
    return {"by_component": parts, "total": sum(parts.values())}


def costs(spec: Spec, b: int, n: int, dtype: str = "float64") -> dict[str, Any]:
    """FLOPs and memory of a spec at batch b and length n, as exact integers."""
    check_one_stack(spec, "FLOPs and memory")
    params = count_params(spec).total
    out: dict[str, Any] = {
        "batch": b,
        "seq_len": n,
        "flop_convention": CONVENTION,
        "flops": _with_total(forward_flops(spec, b, n)),
        "multiply_adds": _with_total(multiply_adds(spec, b, n)),
        "memory": {
            "weights": {name: params * size for name, size in BYTES.items()},
            "training_adam": {name: params * size for name, size in ADAM_BYTES.items()},
            "training_adam_bytes_per_parameter": ADAM_BYTES,
            "training_adam_note": ADAM_NOTE,
            "forward_peak": estimate_forward(spec, b, n, dtype).to_dict() | {"dtype": dtype},
        },
    }
    if is_causal(spec):
        out["flops_causal_pairs"] = _with_total(forward_flops(spec, b, n, causal_pairs=True))
        out["multiply_adds_causal_pairs"] = _with_total(multiply_adds(spec, b, n, causal_pairs=True))
    return out


__all__ = ["ACTIVATION_PER_ENTRY", "NORM_PER_ENTRY", "SOFTMAX_PER_SCORE", "costs", "forward_flops", "multiply_adds"]
