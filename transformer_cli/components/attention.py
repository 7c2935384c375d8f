"""Multi-head self-attention: H heads of size m, W_Q, W_K, W_V (H, m, d) and W_O (H, d, m), optional biases.

Scores are scale * K^T Q (scale 1, 1/sqrt(m) or a number); a causal mask sets later keys' scores to -inf.
"""

from __future__ import annotations

from .base import Component, Pairs, Tensor, Term

SOFTMAX_PER_SCORE = 5  # max, subtract, exp, sum, divide


class MultiHeadAttention(Component):
    def tensors(self, prefix: str) -> list[Tensor]:
        H, m, d = self.spec.H, self.spec.m, self.spec.d
        p = prefix + "attention."
        out = [Tensor(p + w, (H, m, d), "attention") for w in ("W_Q", "W_K", "W_V")]
        out.append(Tensor(p + "W_O", (H, d, m), "attention"))
        if self.spec.attention_bias:
            out += [Tensor(p + b, (H, m), "attention bias") for b in ("b_Q", "b_K", "b_V")]
            out.append(Tensor(p + "b_O", (d,), "attention bias"))
        return out

    def terms(self) -> list[Term]:
        H, m, d = self.spec.H, self.spec.m, self.spec.d
        out = [Term("4Hmd", 4 * H * m * d, "block", seed=True)]
        if self.spec.attention_bias:
            out.append(Term("3Hm + d", 3 * H * m + d, "block"))
        return out

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H, m, d, N = self.spec.H, self.spec.m, self.spec.d, self.spec.N
        tokens, bias, per_head = b * n, int(self.spec.attention_bias), N * H * pairs.count
        return {
            "Q/K/V projections": N * (2 * 3 * H * m * d + bias * 3 * H * m) * tokens,
            "scores K^T Q": per_head * 2 * m,
            "score scaling": per_head if self.spec.score_scale != 1.0 else 0,
            "softmax": per_head * SOFTMAX_PER_SCORE,
            "weights x V": per_head * 2 * m,
            "output projection": N * (2 * d * H * m + bias * d) * tokens,
        }

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H, m, d, N = self.spec.H, self.spec.m, self.spec.d, self.spec.N
        return {
            "linear layers": N * (3 * H * m * d + d * H * m) * b * n,
            "scores K^T Q": N * H * pairs.count * m,
            "weights x V": N * H * pairs.count * m,
        }

    def breaks_equivariance(self) -> str | None:
        return "causal mask" if self.spec.mask == "causal" else None

    def causal(self) -> bool:
        return self.spec.mask == "causal"
