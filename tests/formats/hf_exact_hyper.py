"""The float32 steps of 2026's sparse-attention models (HY-V4's and GLM-5-Next's hyper-connections' streams, Mistral
Large 4's learned rotary and temperatures), recomputed in float64: their
forwards recompiled from transformers' source with the float32 casts made float64 (hf_exact_mamba.float64_source).
HY-V4 rounds the whole residual to float32 after every sublayer (HYV4DecoderLayer), even in a float64 model; its
streams' weights, head, unweighted norm, router and indexer scores are float32 too."""

from __future__ import annotations

import sys

from hf_exact_mamba import _forward, float64_source

HY_V4 = (
    "HYV4DecoderLayer",
    "HYV4HyperConnection",
    "HYV4HyperHead",
    "HYV4UnweightedRMSNorm",
    "HYV4TopkRouter",
    "HYV4Indexer",
)


GLM5_NEXT = (
    "Glm5NextTextHyperConnection",
    "Glm5NextTextUnweightedRMSNorm",
    "Glm5NextTextForgetGate",
    "Glm5NextTextTopkRouter",
)


def _float64_indexer(model, module) -> None:
    """GLM-5-Next's indexer: its scores and its pools' weights in float32 (which pools are chosen)."""
    namespace = dict(vars(sys.modules[type(module).__module__]))
    for name in ("forward", "get_pooled_states"):
        setattr(module, name, float64_source(getattr(type(module), name), namespace).__get__(module))


MISTRAL_LARGE4 = ("MistralLarge4TextSoftmaxScaling", "MistralLarge4TextTopkRouter", "MistralLarge4TextIndexer")
QWEN4 = ("Qwen4ExpTextRMSNorm", "Qwen4ExpTextQSAIndexer")  # (its grouped norms, 1 + w; its block scores)


def _float64_lerope(model, module) -> None:
    """Mistral Large 4's rotary: its YaRN frequencies (made in float32) made again in float64, times exp(alpha)."""
    import torch
    from hf_exact_rope import _inv_freq

    cfg = module.config
    rotated = 2 * module.inv_freq.shape[0]

    def forward(x, position_ids):
        inv_freq = _inv_freq(cfg, rotated, int(position_ids.max()) + 1, cfg.rope_parameters)
        freqs = position_ids[..., None].double() * (inv_freq * module.alpha.double().exp())
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * module.attention_scaling).to(x.dtype), (emb.sin() * module.attention_scaling).to(x.dtype)

    module.forward = forward


DEEPSEEK_V4 = (  # (its norms, streams, head, pools, indexer scores and the rotations they call: float32)
    "DeepseekV4RMSNorm",
    "DeepseekV4UnweightedRMSNorm",
    "DeepseekV4HyperConnection",
    "DeepseekV4HyperHead",
    "DeepseekV4HCACompressor",
    "DeepseekV4CSACompressor",
    "DeepseekV4Indexer",
    "DeepseekV4IndexerScorer",
    "DeepseekV4Attention",
)


def _float64_v4(model, module) -> None:
    """A DeepSeek-V4 module's forward in float64, compiled where apply_rotary_pos_emb is float64 too."""
    namespace = dict(vars(sys.modules[type(module).__module__]))
    namespace["apply_rotary_pos_emb"] = float64_source(namespace["apply_rotary_pos_emb"], namespace)
    module.forward = float64_source(type(module).forward, namespace).__get__(module)


def _float64_v4_rotary(model, module) -> None:
    """DeepSeek-V4's two rotary tables (main, compress): their frequencies made again in float64 (transformers makes
    them in float32, YaRN's too), its forward in float64."""
    from hf_exact_rope import _inv_freq

    cfg = module.config
    for kind in module.layer_types:
        params = cfg.rope_parameters[kind]
        rotated = int(cfg.head_dim * params.get("partial_rotary_factor", 1.0))
        setattr(module, f"{kind}_inv_freq", _inv_freq(cfg, rotated, 1, params))
    namespace = dict(vars(sys.modules[type(module).__module__]))
    forward = float64_source(type(module).forward.__wrapped__, namespace)  # (without dynamic_rope_update)
    module.forward = forward.__get__(module)


HYPER = dict.fromkeys(HY_V4 + GLM5_NEXT + MISTRAL_LARGE4 + QWEN4, _forward) | dict.fromkeys(DEEPSEEK_V4, _float64_v4)
HYPER |= {"DeepseekV4RotaryEmbedding": _float64_v4_rotary, "DeepseekV4TopKRouter": lambda model, module: None}  # (it
# routes in the model's dtype: its own forward, not the other TopKRouters' patch)
HYPER |= {
    "Glm5NextTextIndexer": _float64_indexer,
    "MistralLarge4TextRotaryEmbedding": _float64_lerope,
}
