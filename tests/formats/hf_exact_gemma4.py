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


def _exact_scale(model, module):
    """Gemma4TextScaledWordEmbedding's scale, a float32 tensor: sqrt(d), or sqrt(P) for the per-layer inputs' table."""
    config, per_layer = model.config, getattr(model.model, "embed_tokens_per_layer", None)
    width = config.hidden_size_per_layer_input if module is per_layer else config.hidden_size
    module.embed_scale = torch.tensor(width**0.5, dtype=torch.float64)


def _bound(forward):
    def patch(model, module):
        module.forward = forward.__get__(module)

    return patch


GEMMA4 = {
    "Gemma4RMSNorm": _bound(_float64_gemma4_rms_norm),
    "Gemma4TextRouter": _bound(_float64_gemma4_router),
    "Gemma4TextScaledWordEmbedding": _exact_scale,
}
