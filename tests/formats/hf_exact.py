"""transformers' float32 steps recomputed in float64, so that its float64 models can be compared with tfm's to 1e-10:
the rotary angles (every rope type, by transformers' own formulas), RMSNorm, Gemma's sqrt(d), the routers and
GPT-Neo's scores. Everything else is the model's own arithmetic."""

from __future__ import annotations

import math
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")

from helpers_transformers import _float64_gemma_rms_norm, _float64_rms_norm, _float64_router  # noqa: E402
from hf_exact_gemma3n import GEMMA3N  # noqa: E402
from hf_exact_gemma4 import GEMMA4  # noqa: E402
from hf_exact_hyper import HYPER  # noqa: E402
from hf_exact_laguna import LAGUNA  # noqa: E402
from hf_exact_llama4 import LLAMA4  # noqa: E402
from hf_exact_mamba import MAMBA  # noqa: E402
from hf_exact_rope import _inv_freq  # noqa: E402
from hf_exact_routers import (  # noqa: E402
    _float64_afmoe_router,
    _float64_cohere_router,
    _float64_deepseek_router,
    _float64_ernie_router,
    _float64_granite_router,
    _float64_longcat_router,
    _float64_minimax_router,
)

DEEPSEEK_ROUTERS = (
    "DeepseekV2TopkRouter",
    "DeepseekV3TopkRouter",
    "Glm4MoeTopkRouter",
    "Glm4MoeLiteTopkRouter",
    "Dots1TopkRouter",
    "SolarOpenTopkRouter",
    "ExaoneMoeTopkRouter",
    "NemotronHTopkRouter",
    "DeepseekV32TopkRouter",
    "GlmMoeDsaTopkRouter",
    "KimiLinearTopkRouter",
)


GRANITE_ROUTERS = ("GraniteMoeTopKRouter", "GraniteMoeSharedTopKRouter", "GraniteMoeHybridTopKRouter")
COHERE_ROTARIES = ("CohereRotaryEmbedding", "Cohere2RotaryEmbedding", "Cohere2MoeRotaryEmbedding")


def exact(model):
    """transformers' float32 internals recomputed in float64 (the model's own arithmetic otherwise)."""
    cfg = model.config
    for module in model.modules():
        kind = type(module).__name__
        if kind.startswith("Llama4") and kind in LLAMA4:  # its rotary, norms, router and temperature in float32
            LLAMA4[kind](model, module)
        elif kind in GEMMA4:  # its norms (x w, some without a gain), router and embeddings' scales in float32
            GEMMA4[kind](model, module)
        elif kind in MAMBA:  # its scan, state update, A and gated norm in float32
            MAMBA[kind](model, module)
        elif kind in HYPER:  # hyper-connections' streams (and the residual between them) in float32
            HYPER[kind](model, module)
        elif kind in GEMMA3N:  # its norms, embeddings' scales, AltUp's router, sparsity and per-layer scales
            GEMMA3N[kind](model, module)
        elif kind in ("GPTJRotaryEmbedding", "CodeGenRotaryEmbedding"):  # its sin/cos table made in float32
            module.forward = _float64_gptj_rotary.__get__(module)
            sys.modules[type(module).__module__].eager_attention_forward = _float64_gptj_attention
        elif kind == "PhimoeRotaryEmbedding":  # the short factors at every length, cos and sin times an mscale
            module.forward = _float64_phimoe_rotary.__get__(module)
        elif kind == "DeepseekV2RotaryEmbedding":  # complex rotations, made and applied in float32
            module.forward = _float64_complex_rotary.__get__(module)
            sys.modules[type(module).__module__].apply_rotary_emb = _float64_complex_rotate
        elif kind.endswith("RotaryEmbedding"):  # one set of parameters, or one per layer type (Gemma 3)

            def forward(x, position_ids, layer_type=None, module=module, kind=kind):
                prefix = f"{layer_type}_" if layer_type else ""
                rotated = 2 * getattr(module, prefix + "inv_freq").shape[0]
                scaling = getattr(module, prefix + "attention_scaling")  # a Python float (YaRN's, LongRoPE's; or 1)
                own = getattr(module, "config", cfg)  # (Granite SWA's: a copy per base, its rope_theta replaced)
                params = own.rope_parameters[layer_type] if layer_type else own.rope_parameters
                inv_freq = _inv_freq(own, rotated, int(position_ids.max()) + 1, params)
                freqs = position_ids[..., None].double() * inv_freq
                emb = freqs if kind == "GptOssRotaryEmbedding" else torch.cat((freqs, freqs), dim=-1)  # (its halves)
                if kind in COHERE_ROTARIES:  # each angle twice in a row: interleaved
                    emb = torch.repeat_interleave(freqs, 2, dim=-1)
                return (emb.cos() * scaling).to(x.dtype), (emb.sin() * scaling).to(x.dtype)

            module.forward = forward
            if kind in COHERE_ROTARIES:  # its rotation in float32: here the model's dtype
                sys.modules[type(module).__module__].apply_rotary_pos_emb = _float64_cohere_rotate
        elif kind == "Ernie4_5_MoeTopKRouter":  # its softmax in float32 even in float64
            module.forward = _float64_ernie_router.__get__(module)
        elif kind in ("Ernie4_5Attention", "Ernie4_5_MoeAttention"):  # its rotation in float32: here in float64
            sys.modules[type(module).__module__].apply_rotary_pos_emb = _float64_ernie_rotate
        elif kind == "OlmoLayerNorm":  # OLMo 1's norm of no parameters, in float32 even in float64
            module.forward = lambda x, module=module: torch.nn.functional.layer_norm(
                x, module.normalized_shape, eps=1e-5
            )
        elif kind in ("CohereLayerNorm", "Cohere2LayerNorm", "Cohere2MoeLayerNorm"):  # mean, variance in float32
            module.forward = _float64_cohere_layer_norm.__get__(module)
        elif kind == "Cohere2MoeTopKRouter":  # its softmax over the top k in float32
            module.forward = _float64_cohere_router.__get__(module)
        elif kind == "NanoChatRMSNorm":  # no gain, in float32
            module.forward = _float64_plain_rms_norm.__get__(module)
        elif kind.endswith("RMSNorm") or kind in ("T5LayerNorm", "MT5LayerNorm", "UMT5LayerNorm"):  # (T5's: RMS)
            plus_one = ("Gemma", "VaultGemma", "T5Gemma", "Qwen3Next", "Qwen3_5")  # (their gains: 1 + w)
            norm = _float64_gemma_rms_norm if kind.startswith(plus_one) else _float64_rms_norm
            module.forward = norm.__get__(module)
        elif kind in GRANITE_ROUTERS:  # the top k logits softmaxed in float32
            module.forward = _float64_granite_router.__get__(module)
        elif kind == "HYV3MoE":  # its routed and shared outputs added in float32: here in the model's dtype
            module.enable_moe_fp32_combine = False
        elif kind in LAGUNA:  # its router and its attention's gate in float32
            module.forward = LAGUNA[kind].__get__(module)
        elif kind == "AfmoeTokenChoiceRouter":  # its sigmoid in float32 even in float64
            module.forward = _float64_afmoe_router.__get__(module)
        elif kind in ("MiniMaxM2TopKRouter", "HYV3TopKRouter"):  # its sigmoid in float32 even in float64
            module.forward = _float64_minimax_router.__get__(module)
        elif kind.endswith("TopKRouter") and kind not in ("PhimoeTopKRouter", "Lfm2MoeTopKRouter"):  # (theirs route
            # in the model's dtype)
            module.forward = _float64_router.__get__(module)
        elif kind == "LongcatFlashTopkRouter":  # routed in float32 even in float64
            module.forward = _float64_longcat_router.__get__(module)
        elif kind in DEEPSEEK_ROUTERS:  # routed in float32 even in float64
            module.forward = _float64_deepseek_router.__get__(module)
        elif kind in ("Ministral3Attention", "Mistral4Attention"):  # Llama 4's query scale made in float32
            sys.modules[type(module).__module__].get_llama_4_attn_scale = _float64_llama_4_scale
        elif kind == "GraniteSWAAttention":  # its softmax and its sinks' scale in float32
            sys.modules[type(module).__module__].eager_attention_forward = _float64_sink_attention
        elif kind == "MarianSinusoidalPositionalEmbedding":  # its table made in float32 (not in its files)
            with torch.no_grad():
                module.weight.copy_(torch.from_numpy(_marian_sinusoids(*module.weight.shape)))
        elif kind == "M2M100SinusoidalPositionalEmbedding":  # its table made in float32
            _float64_fairseq_table(module)
        elif kind == "MptModel":  # its ALiBi slopes in float32
            module.build_mpt_alibi_tensor = _float64_mpt_alibi
        elif kind == "MptAttention":  # its softmax in float32
            module.forward = _float64_mpt_attention.__get__(module)
        elif kind == "BloomAttention":  # its ALiBi slopes and its softmax in float32
            bloom = sys.modules[type(module).__module__]
            bloom._get_alibi_slopes = _float64_alibi_slopes
            bloom.F = _Float64Functional()
        elif kind in ("Gemma2Attention", "Gemma3Attention", "VaultGemmaAttention", *T5GEMMA):  # softmax in float32
            sys.modules[type(module).__module__].eager_attention_forward = _float64_eager  # (float32: the same)
        elif kind in ("ModernBertAttention", "ModernBertDecoderAttention"):  # rotation, eager softmax in float32
            modern = sys.modules[type(module).__module__]
            modern.eager_attention_forward, modern.apply_rotary_pos_emb = _float64_plain_eager, _float64_rotate
        elif kind == "DisentangledSelfAttention":  # its scale's square root in float32
            sys.modules[type(module).__module__].scaled_size_sqrt = _float64_sqrt
        elif kind == "GPTNeoSelfAttention":  # its scores in float32 even in a float64 model: here in float64
            module._attn = _float64_neo_attention.__get__(module)
        elif isinstance(getattr(module, "embed_scale", None), torch.Tensor):  # Gemma's sqrt(d), a float32 tensor
            module.embed_scale = torch.tensor(cfg.hidden_size**0.5, dtype=torch.float64)
    return model


T5GEMMA = ("T5GemmaSelfAttention", "T5GemmaCrossAttention")


def _float64_cohere_layer_norm(self, x):
    """CohereLayerNorm (no bias; over the last axis, also each head's (H, m) gains) in the model's dtype."""
    mean = x.mean(-1, keepdim=True)
    variance = (x - mean).pow(2).mean(-1, keepdim=True)
    return self.weight * ((x - mean) * torch.rsqrt(variance + self.variance_epsilon))


def _float64_phimoe_rotary(self, x, position_ids=None):
    """PhimoeRotaryEmbedding.forward in float64: its rope_init_fn called without a length (so LongRoPE's short
    factors always), cos and sin times long_mscale past the original context, else short_mscale."""
    params, seq_len = self.config.rope_parameters, int(position_ids.max()) + 1
    inv_freq = _inv_freq(self.config, 2 * self.inv_freq.shape[0], 1, params)
    scale = 1.0
    if params["rope_type"] != "default":
        scale = params["long_mscale" if seq_len > params["original_max_position_embeddings"] else "short_mscale"]
    freqs = position_ids[..., None].double() * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return (emb.cos() * scale).to(x.dtype), (emb.sin() * scale).to(x.dtype)


def _float64_cohere_rotate(q, k, cos, sin, unsqueeze_dim=1):
    """Cohere's apply_rotary_pos_emb without its cast to float32 (pairs 2i, 2i + 1)."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)

    def turned(x):
        return torch.stack([-x[..., 1::2], x[..., ::2]], dim=-1).flatten(-2)

    return q * cos + turned(q) * sin, k * cos + turned(k) * sin


def _float64_ernie_rotate(q, k, cos, sin, unsqueeze_dim=1):
    """ERNIE 4.5's apply_rotary_pos_emb (GLM's pairs 2i, 2i + 1, each angle of the first half twice) without its
    cast to float32."""
    half = cos.shape[-1] // 2
    cos, sin = (x[..., :half].repeat_interleave(2, dim=-1).unsqueeze(unsqueeze_dim) for x in (cos, sin))

    def turned(x):
        return torch.stack([-x[..., 1::2], x[..., ::2]], dim=-1).flatten(-2)

    return q * cos + turned(q) * sin, k * cos + turned(k) * sin


def _float64_rotate(q, k, cos, sin, unsqueeze_dim=1):
    """apply_rotary_pos_emb (halves) without a cast to float32 (ModernBERT's)."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)

    def turned(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    return q * cos + turned(q) * sin, k * cos + turned(k) * sin


def _float64_plain_eager(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """An eager_attention_forward of as many key heads as query heads, its softmax in the scores' dtype."""
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.softmax(weights, dim=-1)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


def _float64_sqrt(query_layer, scale_factor):
    """DeBERTa's scaled_size_sqrt in float64: sqrt(m f)."""
    return torch.sqrt(torch.tensor(query_layer.size(-1) * scale_factor, dtype=torch.float64))


def _float64_eager(module, query, key, value, attention_mask, dropout=0.0, scaling=None, softcap=None, **kwargs):
    """Gemma 2's and 3's eager_attention_forward with its softmax in the scores' dtype (float32 in float32)."""
    from transformers.models.gemma2.modeling_gemma2 import repeat_kv

    key, value = repeat_kv(key, module.num_key_value_groups), repeat_kv(value, module.num_key_value_groups)
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if softcap is not None:
        weights = torch.tanh(weights / softcap) * softcap
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.softmax(weights, dim=-1)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


def _float64_complex_rotary(self, x, position_ids):
    """DeepseekV2RotaryEmbedding.forward with its angles in float64 (its frequencies recomputed so)."""
    params = self.config.rope_parameters
    rotated = 2 * self.inv_freq.shape[0]
    inv_freq = _inv_freq(self.config, rotated, int(position_ids.max()) + 1, params)
    freqs = position_ids[..., None].double() * inv_freq
    return torch.polar(torch.ones_like(freqs), freqs) * self.attention_scaling


def _float64_complex_rotate(xq, xk, freqs_cis):
    """DeepSeek-V2's apply_rotary_emb without its cast to float32 (complex128 in float64)."""
    as_complex = lambda t: torch.view_as_complex(t.double().reshape(*t.shape[:-1], -1, 2))  # noqa: E731
    freqs_cis = freqs_cis.unsqueeze(1)
    return (torch.view_as_real(as_complex(t) * freqs_cis).flatten(3).type_as(t) for t in (xq, xk))


def _float64_gptj_rotary(self, x, position_ids):
    """GPTJRotaryEmbedding.forward with its sinusoid table in float64: (sin, cos) of the rotary_dim / 2 angles."""
    dim = self.pos_embd_dim
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    angles = position_ids[..., None].double() * inv_freq
    return angles.sin().to(x.dtype), angles.cos().to(x.dtype)


def _float64_gptj_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """GPT-J's eager attention without its cast of the scores to float32 (float32 in float32: the same)."""
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.softmax(weights, dim=-1)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


def _float64_plain_rms_norm(self, x):
    """Llama4TextL2Norm.forward (NanoChat's norms) in the model's dtype: x / sqrt(mean(x^2) + eps)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


def _float64_llama_4_scale(position_ids, beta, max_position_embeddings):
    """get_llama_4_attn_scale in float64: 1 + beta ln(1 + floor(t / L))."""
    scale = 1 + beta * torch.log1p(torch.floor(position_ids.double() / max_position_embeddings))
    return scale[:, None, :, None]


def _float64_sink_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """Granite SWA's eager attention in the model's dtype: the softmax times sigmoid(logsumexp - sink)."""
    groups = module.num_key_value_groups
    key, value = (x.repeat_interleave(groups, dim=1) for x in (key, value))
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask
    sink = (torch.logsumexp(weights, dim=-1) - module.sinks.view(1, -1, 1)).sigmoid()
    weights = torch.softmax(weights, dim=-1)
    out = torch.matmul(weights, value) * sink.unsqueeze(-1)
    return out.transpose(1, 2).contiguous(), weights


def _marian_sinusoids(rows: int, d: int):
    """MarianSinusoidalPositionalEmbedding.create_weight in float64."""
    import numpy as np

    angle = np.array([[pos / np.power(10000, 2 * (j // 2) / d) for j in range(d)] for pos in range(rows)])
    half = d // 2 if d % 2 == 0 else d // 2 + 1
    out = np.empty((rows, d))
    out[:, :half], out[:, half:] = np.sin(angle[:, 0::2]), np.cos(angle[:, 1::2])
    return out


def _float64_fairseq_table(module) -> None:
    """M2M100SinusoidalPositionalEmbedding's table remade in float64 (transformers makes it in float32)."""
    rows, d = module.weights.shape
    half = d // 2
    freq = torch.exp(torch.arange(half, dtype=torch.float64) * -(math.log(10000) / (half - 1)))
    angle = torch.arange(rows, dtype=torch.float64)[:, None] * freq[None, :]
    table = torch.cat([torch.sin(angle), torch.cos(angle), torch.zeros(rows, d - 2 * half, dtype=torch.float64)], 1)
    table[module.padding_idx] = 0
    module.weights = table


def _float64_mpt_alibi(num_heads, sequence_length, alibi_bias_max=8, device=None):
    """build_mpt_alibi_tensor in float64."""
    alibi = torch.arange(1 - sequence_length, 1, dtype=torch.float64, device=device).view(1, 1, 1, sequence_length)
    power = 2 ** math.ceil(math.log2(num_heads))
    slopes = 1.0 / torch.pow(2, torch.arange(1, power + 1, dtype=torch.float64) * (alibi_bias_max / power))
    slopes = slopes.view(1, power, 1, 1)
    if power != num_heads:
        slopes = torch.concat([slopes[:, 1::2, ...], slopes[:, ::2, ...]], dim=1)[:, :num_heads, ...]
    return (alibi * slopes).squeeze(0)


def _float64_mpt_attention(self, hidden_states, position_bias, cache=None, attention_mask=None, **kwargs):
    """MptAttention.forward with its softmax in the model's dtype."""
    batch, n = hidden_states.shape[:2]
    fused = self.Wqkv(hidden_states)
    if self.clip_qkv:
        fused = fused.clamp(min=-self.clip_qkv, max=self.clip_qkv)
    q, k, v = (x.reshape(batch, n, self.n_heads, self.head_dim).transpose(1, 2) for x in fused.chunk(3, dim=2))
    if cache is not None:
        k, v = cache.update(k, v, self.layer_idx, kwargs=kwargs)
    scores = torch.matmul(q, k.transpose(-1, -2)) * self.softmax_scale
    queries = n if cache is None else n + cache.get_seq_length()
    bias = position_bias[:, max(0, position_bias.size(1) - queries) :, max(0, position_bias.size(2) - k.shape[-2]) :]
    scores = scores + bias
    if attention_mask is not None:
        scores = scores.masked_fill(attention_mask, torch.finfo(q.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    context = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(batch, n, -1)
    return self.out_proj(context), weights


def _float64_alibi_slopes(num_heads, device):
    """BLOOM's _get_alibi_slopes in float64."""
    top = 2 ** math.floor(math.log2(num_heads))
    slopes = [2.0 ** (-8.0 * h / top) for h in range(1, top + 1)]
    slopes += [2.0 ** (-8.0 * h / (2 * top)) for h in range(1, 2 * min(top, num_heads - top), 2)]
    return torch.tensor(slopes, dtype=torch.float64, device=device)


class _Float64Functional:
    """torch.nn.functional for modeling_bloom, its softmax in the scores' dtype (float32 in float32: the same)."""

    def __getattr__(self, name):
        return getattr(torch.nn.functional, name)

    @staticmethod
    def softmax(x, dim=-1, dtype=None):
        return torch.softmax(x, dim=dim)


def _float64_neo_attention(self, query, key, value, attention_mask=None):
    """GPTNeoSelfAttention._attn without its casts to float32."""
    weights = torch.matmul(query, key.transpose(-1, -2))
    q, k = query.size(-2), key.size(-2)
    allowed = self.bias[:, :, k - q : k, :k]
    weights = torch.where(allowed, weights, torch.tensor(torch.finfo(weights.dtype).min, dtype=weights.dtype))
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.softmax(weights, dim=-1)
    return torch.matmul(weights, value), weights
