"""Gemma 4's float32 steps recomputed in float64 (hf_exact.py): its RMSNorm, x w (not Gemma 1-3's x (1 + w)), some
without a gain (the values' norm)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")


def _float64_gemma4_rms_norm(self, x):
    """Gemma4RMSNorm.forward in the model's dtype: x (mean(x^2) + eps)^-1/2, times the weight where it has one."""
    y = x * torch.pow(x.pow(2).mean(-1, keepdim=True) + self.eps, -0.5)
    return y * self.weight if self.with_scale else y


GEMMA4 = {"Gemma4RMSNorm": _float64_gemma4_rms_norm}
