"""transformers' float32 steps (RMSNorm, rotary angles, routers) recomputed in float64, small random models of each
family with their weights mapped by hand, and the float64 comparison: what test_transformers.py,
test_transformers_families.py and hf_exact.py share."""

from __future__ import annotations

import numpy as np
import pytest

from transformer_cli import Spec, Transformer

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")

TOL = 1e-10  # relative, on the logits


def _float64_rms_norm(self, hidden):  # LlamaRMSNorm and its copies, without the cast to float32
    variance = hidden.pow(2).mean(-1, keepdim=True)
    return self.weight * (hidden * torch.rsqrt(variance + self.variance_epsilon))


def _float64_gemma_rms_norm(self, hidden):  # GemmaRMSNorm: x / rms * (1 + weight), without the cast
    return (hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + self.eps)) * (1.0 + self.weight)


def _float64_rotary(theta: float, rotated: int):
    def forward(x, position_ids):
        inv_freq = 1.0 / theta ** (torch.arange(0, rotated, 2, dtype=torch.float64) / rotated)
        freqs = position_ids[..., None].double() * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    return forward


def _randomised(model) -> None:
    """Every parameter random and non-zero (the library's init leaves biases and norms at 0 and 1)."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.2 + (1.0 if p.dim() == 1 else 0.0) * 0.1)


def _llama_like(model_cls, config_cls, **config):
    """A float64 model of a LLaMA-layout family, its rotary and RMSNorm recomputed in float64."""
    cfg = config_cls(attn_implementation="sdpa", **config)
    model = model_cls(cfg).double().eval()
    _randomised(model)
    m = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    model.model.rotary_emb.forward = _float64_rotary(
        cfg.rope_theta if hasattr(cfg, "rope_theta") else cfg.rope_parameters["rope_theta"], m
    )
    embed = model.model.embed_tokens
    if hasattr(embed, "embed_scale"):  # Gemma: sqrt(d), made in float32 by the library
        embed.embed_scale = torch.tensor(cfg.hidden_size**0.5, dtype=torch.float64)
    for module in model.modules():
        name = type(module).__name__
        if name.endswith("RMSNorm"):
            norm = _float64_gemma_rms_norm if name.startswith("Gemma") else _float64_rms_norm
            module.forward = norm.__get__(module)
    return model, cfg, m


def _compare(model, spec: Spec, weights: dict[str, np.ndarray], V: int) -> float:
    ids = np.random.default_rng(0).integers(0, V, size=(2, 13))
    with torch.no_grad():
        theirs = model(torch.from_numpy(ids)).logits.numpy().transpose(0, 2, 1)  # (b, V, n)
    ours = Transformer(spec, weights)(ids)
    return float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))


SMALL = dict(
    vocab_size=97,
    hidden_size=32,
    intermediate_size=40,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=64,
    rms_norm_eps=1e-5,
)


def _float64_router(self, hidden):  # Mixtral's and Qwen-MoE's TopKRouter without its cast to float32
    logits = torch.nn.functional.linear(hidden.reshape(-1, self.hidden_dim), self.weight, getattr(self, "bias", None))
    top, index = torch.topk(torch.softmax(logits, dim=-1), self.top_k, dim=-1)  # (gpt-oss's router has a bias)
    renormalise = getattr(self, "norm_topk_prob", True)  # Mixtral always renormalises
    return logits, top / top.sum(dim=-1, keepdim=True) if renormalise else top, index


def count(spec: Spec) -> int:
    from transformer_cli import count_params

    return count_params(spec).total
