"""Gemma 3n's float32 steps recomputed in float64 (hf_exact.py): its RMSNorms (x w, the values' without a gain),
its embeddings' scales (float32 tensors of sqrt(d) and sqrt(P)), AltUp's router (its 1/d a float32 tensor, its
tanh's input cast to float32), the activation sparsity's normal quantile (made in float32) and the per-layer
inputs' two scales (float32 tensors of d^-1/2 and 2^-1/2)."""

from __future__ import annotations

from statistics import NormalDist

import pytest
from hf_exact_gemma4 import _bound, _float64_gemma4_rms_norm

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")


def _scale(model, module):
    module.embed_scale = torch.tensor(module.scalar_embed_scale, dtype=torch.float64)


def _altup(model, module):
    module.router_input_scale = torch.tensor(1.0 / model.config.hidden_size, dtype=torch.float64)
    module.compute_router_modalities = lambda x, self=module: torch.tanh(
        self.modality_router(self.router_norm(x) * self.router_input_scale)
    )


def _gaussian_topk(self, x):
    z = torch.tensor(NormalDist().inv_cdf(self.activation_sparsity), dtype=x.dtype)
    cutoff = x.mean(-1, keepdim=True) + x.std(-1, keepdim=True, unbiased=False) * z
    return torch.relu(x - cutoff)


def _model(model, module):
    module.per_layer_projection_scale = torch.tensor(model.config.hidden_size**-0.5, dtype=torch.float64)
    module.per_layer_input_scale = torch.tensor(2.0**-0.5, dtype=torch.float64)


GEMMA3N = {
    "Gemma3nRMSNorm": _bound(_float64_gemma4_rms_norm),
    "Gemma3nTextScaledWordEmbedding": _scale,
    "Gemma3nTextAltUp": _altup,
    "Gemma3nTextMLP": lambda model, module: setattr(module, "_gaussian_topk", _gaussian_topk.__get__(module)),
    "Gemma3nTextModel": _model,
}
