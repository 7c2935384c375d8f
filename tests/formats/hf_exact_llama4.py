"""Llama 4's float32 steps in a float64 model (its rotary, norms, router and attention temperature), as hf_exact.py's
`exact` replaces them: the same computation in the model's dtype."""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")


def _inv_freq(cfg, rotated: int, seq_len: int, params: dict):
    from hf_exact import _inv_freq as inv_freq

    return inv_freq(cfg, rotated, seq_len, params)


def _llama4_rotary(model, module):
    """Llama4TextRotaryEmbedding: its complex rotations (freqs_cis) in float64; applied in float64 too."""
    cfg = model.config

    def forward(x, position_ids):
        inv_freq = _inv_freq(cfg, cfg.head_dim, int(position_ids.max()) + 1, cfg.rope_parameters)
        angles = position_ids[..., None].double() * inv_freq
        return torch.polar(torch.ones_like(angles), angles)

    def apply(xq, xk, freqs_cis):
        pairs = lambda t: torch.view_as_complex(t.double().reshape(*t.shape[:-1], -1, 2))  # noqa: E731
        turned = (torch.view_as_real(pairs(t) * freqs_cis[:, :, None, :]).flatten(3) for t in (xq, xk))
        return tuple(t.type_as(x) for t, x in zip(turned, (xq, xk), strict=True))

    module.forward = forward
    sys.modules[type(module).__module__].apply_rotary_emb = apply


def _llama4_norm(model, module):
    """Llama4TextRMSNorm (a gain) and Llama4TextL2Norm (none) in the model's dtype."""
    gain = getattr(module, "weight", None)
    module.forward = lambda x: (
        (1 if gain is None else gain) * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + module.eps))
    )


def _llama4_router(model, module):
    """Llama4Router: the top k logits' sigmoid (the others' -inf: 0) in the model's dtype."""

    def forward(hidden):
        logits = torch.nn.functional.linear(hidden, module.weight)
        top, index = torch.topk(logits, module.top_k, dim=1)
        return torch.full_like(logits, float("-inf")).scatter_(1, index, top).sigmoid(), logits

    module.forward = forward


def _llama4_attention(model, module):
    """Llama4TextAttention: its temperature (positions made float32) in the model's dtype, `float` made `double`
    for its forward alone."""
    forward = module.forward

    def float64(*args, **kwargs):
        plain, torch.Tensor.float = torch.Tensor.float, torch.Tensor.double
        try:
            return forward(*args, **kwargs)
        finally:
            torch.Tensor.float = plain

    module.forward = float64


LLAMA4 = {
    "Llama4TextRotaryEmbedding": _llama4_rotary,
    "Llama4TextRMSNorm": _llama4_norm,
    "Llama4TextL2Norm": _llama4_norm,
    "Llama4Router": _llama4_router,
    "Llama4TextAttention": _llama4_attention,
}
