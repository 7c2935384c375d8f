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

from ..components import Pairs, components, encoder_block_components, encoder_model_components, is_causal
from ..components.attention import SOFTMAX_PER_SCORE
from ..components.encoder import cross_flops, cross_multiply_adds
from ..components.feedforward import ACTIVATION_PER_ENTRY
from ..components.norm import NORM_PER_ENTRY
from ..spec.definition import Spec
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


def _summed(parts: list[dict[str, int]]) -> dict[str, int]:
    """Rows of several components, rows of the same name added (the order of first appearance kept)."""
    out: dict[str, int] = {}
    for part in parts:
        for name, value in part.items():
            out[name] = out.get(name, 0) + value
    return out


def _encoder(spec: Spec) -> list:  # type: ignore[type-arg]
    """An encoder-decoder's encoder components: its blocks', and its inputs' (its own embedding lookup too)."""
    from ..components.embedding import embedding
    from ..model.encoder_decoder import encoder_run_spec

    return encoder_block_components(spec) + encoder_model_components(spec) + [embedding(encoder_run_spec(spec))]


def multiply_adds(spec: Spec, b: int, n: int, causal_pairs: bool = False, n_src: int | None = None) -> dict[str, int]:
    """Multiply-adds of the forward pass's matrix products, by product, for b sequences of n tokens (an
    encoder-decoder: targets of n tokens and sources of n_src, default n)."""
    return _rows(spec, b, n, causal_pairs, n_src, "multiply_adds")


def forward_flops(spec: Spec, b: int, n: int, causal_pairs: bool = False, n_src: int | None = None) -> dict[str, int]:
    """Forward FLOPs by component for b sequences of n tokens; `causal_pairs` counts allowed pairs only. An
    encoder-decoder's encoder reads sources of n_src (default n) and adds its rows to the same names."""
    return _rows(spec, b, n, causal_pairs, n_src, "flops")


def _rows(spec: Spec, b: int, n: int, causal_pairs: bool, n_src: int | None, kind: str) -> dict[str, int]:
    """Every component's rows of one kind (flops or multiply_adds); an encoder-decoder's encoder and
    cross-attention too."""
    pairs = Pairs(b, n, causal_pairs, spec.window)
    parts = [getattr(c, kind)(b, n, pairs) for c in components(spec)]
    if spec.N_enc:
        n_src = n_src or n
        parts += [getattr(c, kind)(b, n_src, Pairs(b, n_src)) for c in _encoder(spec)]
        parts.append((cross_flops if kind == "flops" else cross_multiply_adds)(spec, b, n, n_src))
    return _summed(parts)


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
    from .decode import decode_step, training_flops_per_token  # (it reads multiply_adds from here)

    out["training_flops_per_token"] = training_flops_per_token(spec, n)
    out["decode_step"] = decode_step(spec, n, "bfloat16", n_src)
    if is_causal(spec):
        out["flops_causal_pairs"] = _with_total(forward_flops(spec, b, n, causal_pairs=True, n_src=n_src))
        out["multiply_adds_causal_pairs"] = _with_total(multiply_adds(spec, b, n, causal_pairs=True, n_src=n_src))
    return out


__all__ = ["ACTIVATION_PER_ENTRY", "NORM_PER_ENTRY", "SOFTMAX_PER_SCORE", "costs", "forward_flops", "multiply_adds"]
