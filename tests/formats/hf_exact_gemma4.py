"""Gemma 4's float32 steps recomputed in float64 (hf_exact.py): its RMSNorm, x w (not Gemma 1-3's x (1 + w)), some
without a gain (the values' norm, the router's), and its router's softmax."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")


def _float64_gemma4_rms_norm(self, x):
    """Gemma4RMSNorm.forward in the model's dtype: x (mean(x^2) + eps)^-1/2, times the weight where it has one."""
    y = x * torch.pow(x.pow(2).mean(-1, keepdim=True) + self.eps, -0.5)
    return y * self.weight if self.with_scale else y


def _float64_gemma4_router(self, hidden):
    """Gemma4TextRouter.forward with its softmax in the model's dtype (transformers': float32)."""
    hidden = self.norm(hidden) * self.scale * self.scalar_root_size
    probabilities = torch.softmax(self.proj(hidden), dim=-1)
    weights, index = torch.topk(probabilities, k=self.config.top_k_experts, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return probabilities, weights * self.per_expert_scale[index], index


GEMMA4 = {"Gemma4RMSNorm": _float64_gemma4_rms_norm, "Gemma4TextRouter": _float64_gemma4_router}
