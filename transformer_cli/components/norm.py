"""Norms over the d entries of each column, placed before (pre) or after (post) each sublayer.

layernorm: (x - mean) / sqrt(var + eps) * gamma + beta; rmsnorm: x / sqrt(mean(x^2) + eps) * gamma.
Each block has norm1 (around attention) and norm2 (around the feedforward); the sandwich layout adds norm1_out and
norm2_out on the sublayers' outputs, and the output layout has those alone (OLMo 2); pre-norm, sandwich and output
models add a final norm.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import kernels
from ..spec.choices import NORM_TYPES
from .base import Component, Pairs, Tensor, Term

NORM_PER_ENTRY = 7  # layernorm: mean, subtract, square, variance, scale, gamma, beta
RMS_PER_ENTRY = 4  # rmsnorm: square, mean, scale, gamma

Get = Callable[[str], "kernels.Array"]
BLOCK_NORMS = ("norm1", "norm2", "norm1_out", "norm2_out")  # the order of a block's norms (residual.py reads it)


class NoNorm(Component):
    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"norms": 0}

    def saved_bytes(self, width: int, s: int, frozen: bool = False) -> int:
        return 0

    def prepare(self, get: Get) -> tuple:
        return (None, None, None, None)

    def apply(self, X: kernels.Array, params: tuple) -> kernels.Array:
        return X


@NORM_TYPES.register("layernorm")
class LayerNorm(Component):
    params: tuple[str, ...] = ("gamma", "beta")
    per_entry = NORM_PER_ENTRY
    label = "layer norm"
    temporary = True  # tfm's pass holds a (d, b, n) temporary beside the output (the centred columns)

    def saved_bytes(self, width: int, s: int, frozen: bool = False) -> int:
        """Bytes autograd keeps per token for this norm over `width` entries in s-byte elements (training.py):
        F.layer_norm keeps its input, a mean and 1/std, its gains frozen (LoRA) or not."""
        return width * s + 2 * s

    @property
    def norms(self) -> tuple[str, ...]:
        """The block's norms: norm1 and norm2, or norm1 alone when parallel blocks share it; the sandwich layout's
        norms of the sublayers' outputs too."""
        if self.spec.norm == "sandwich" and self.spec.E and self.spec.expert_norms:  # (Gemma 4's: norm2 the mixture's)
            return ("norm1", "norm1_out", "norm2_out")
        if self.spec.norm == "sandwich":
            return ("norm1", "norm2", "norm1_out", "norm2_out")
        if self.spec.norm == "output":  # OLMo 2: the sublayers' outputs only
            return ("norm1_out", "norm2_out")
        if not self.spec.first_attn_norm:  # (a group of block 0 alone: ModernBERT's has none before attention)
            return ("norm2",)
        if self.spec.attention == "mamba2_memory":  # (Zamba2's: its mixer normalises its own input, memory.py)
            return ()
        if self.spec.feedforward == "none":  # (a block of its mixer alone: Mamba-2's)
            return ("norm1",)
        if self.spec.attention == "none":  # (a block of its feedforward alone: Nemotron-H's MLP and MoE blocks)
            return ("norm2",)
        return ("norm1",) if self.spec.parallel and self.spec.shared_norm else ("norm1", "norm2")

    def tensors(self, prefix: str) -> list[Tensor]:
        d = self.spec.d
        return [Tensor(prefix + f"{ln}.{g}", (d,), self.label) for ln in self.norms for g in self.params]

    def terms(self) -> list[Term]:
        k = len(self.norms) * len(self.params)
        return [Term(f"{k}d" if k > 1 else "d", k * self.spec.d, "block")] if k else []

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"norms": len(self.norms) * self.spec.N * self.per_entry * self.spec.d * b * n}

    def prepare(self, get: Get) -> tuple:
        """The block's norms (norm1, norm2, norm1_out, norm2_out), each the tuple of its (d, 1, 1) columns or None
        where the layout has no such norm (a shared norm: norm2 is None)."""
        return tuple(
            self.stacked(lambda g, ln=ln: get(f"{ln}.{g}")) if ln in self.norms else None  # type: ignore[misc]
            for ln in BLOCK_NORMS
        )

    def stacked(self, get: Get, flat: bool = True) -> tuple:
        """One norm's parameters as (d, 1, 1) columns (flat: false, as stored); with norm_plus_one the gain is
        1 + gamma (Gemma)."""
        out = [get(g).reshape(-1, 1, 1) if flat else get(g) for g in self.params]
        if self.spec.norm_plus_one:
            out[0] = out[0] + 1.0
        return tuple(out)

    def apply(self, X: kernels.Array, params: tuple) -> kernels.Array:
        """The norm of each column of X (d, b, n)."""
        gamma, beta = params
        return kernels.layer_norm(X, gamma, beta, self.spec.norm_eps)


class LayerNormWithoutBias(LayerNorm):
    """(x - mean) / sqrt(var + eps) * gamma: a layer norm with no beta (norm_bias: false)."""

    params: tuple[str, ...] = ("gamma",)
    per_entry = NORM_PER_ENTRY - 1

    def apply(self, X: kernels.Array, params: tuple) -> kernels.Array:
        return kernels.layer_norm(X, params[0], 0.0, self.spec.norm_eps)


@NORM_TYPES.register("rmsnorm")
class RMSNorm(LayerNorm):
    params: tuple[str, ...] = ("gamma",)
    per_entry = RMS_PER_ENTRY
    temporary = False  # the mean square is summed in one pass (kernels.rms_norm)

    def saved_bytes(self, width: int, s: int, frozen: bool = False) -> int:
        """F.rms_norm, composite, works in float32 at least: its input, 1/rms, and the normalised input (the gain's
        gradient needs it: not when the gain is frozen, LoRA)."""
        u = max(s, 4)
        return (width + 1) * u if frozen else (2 * width + 1) * u

    label = "rms norm"

    def apply(self, X: kernels.Array, params: tuple) -> kernels.Array:
        return kernels.rms_norm(X, params[0], self.spec.norm_eps)


class FinalNorm(Component):
    """Pre-norm's norm after the last block: the block norm's kind, one copy."""

    where = "output"

    def __init__(self, spec):
        super().__init__(spec)
        self.kind = norm_kind(spec)

    def tensors(self, prefix: str) -> list[Tensor]:
        return [Tensor(prefix + f"final_norm.{g}", (self.spec.d,), "final norm") for g in self.kind.params]

    def terms(self) -> list[Term]:
        k = len(self.kind.params)
        return [Term(f"{k}d" if k > 1 else "d", k * self.spec.d, "model")] if k else []

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return {"norms": self.kind.per_entry * self.spec.d * b * n}

    def saved_per_token(self, s: int, frozen: bool = False) -> int:
        return self.kind.saved_bytes(self.spec.d, s, frozen)


class LayerNormWithoutParams(LayerNorm):
    """(x - mean) / sqrt(var + eps): a layer norm with no gain or bias (norm_affine: false; OLMo 1)."""

    params: tuple[str, ...] = ()
    per_entry = NORM_PER_ENTRY - 2

    def apply(self, X: kernels.Array, params: tuple) -> kernels.Array:
        return kernels.layer_norm(X, 1.0, 0.0, self.spec.norm_eps)


class RMSNormWithoutParams(RMSNorm):
    """x / sqrt(mean(x^2) + eps): an RMS norm with no gain (norm_affine: false)."""

    params: tuple[str, ...] = ()
    per_entry = RMS_PER_ENTRY - 1

    def apply(self, X: kernels.Array, params: tuple) -> kernels.Array:
        return kernels.rms_norm(X, 1.0, self.spec.norm_eps)


def norm_kind(spec) -> LayerNorm:
    """The spec's norm (norm_type, and norm_bias and norm_affine): what every norm of the model computes."""
    if not spec.norm_affine:
        return LayerNormWithoutParams(spec) if spec.norm_type == "layernorm" else RMSNormWithoutParams(spec)
    if spec.norm_type == "layernorm" and not spec.norm_bias:
        return LayerNormWithoutBias(spec)
    return NORM_TYPES[spec.norm_type](spec)


def block_norm(spec) -> NoNorm | LayerNorm:
    return NoNorm(spec) if spec.norm == "none" else norm_kind(spec)


def final_norm(spec) -> Component:
    return FinalNorm(spec) if spec.final_norm else Component(spec)
