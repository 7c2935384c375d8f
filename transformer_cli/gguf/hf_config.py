"""The Hugging Face config.json of a GGUF file's model, for `tfm convert FILE.gguf -o FOLDER`: the model_type its
architecture comes from (or the one its record's Gguf.model_type chooses by the spec: llama with experts, mixtral),
and the keys transformers reads to build that model. The config is checked by reading it back: its spec must be the
file's, or the folder is not written."""

from __future__ import annotations

from typing import Any

from ..families import GGUF_ARCHS, RECORDS
from ..families.config_keys import rope_keys, size_keys
from ..hf.families import FAMILIES
from ..spec.definition import Spec
from .archs import MODEL_TYPE

CLASSES = {kind: model_class for kind, (model_class, _) in FAMILIES.items()}  # a model_type's transformers class


# the families still here whose config.json takes attention_bias (the records write their own)
BIASED = ("qwen2_moe", "qwen3_moe", "gemma", "gemma2", "gemma3_text")


def hf_config(spec: Spec, arch: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The config.json transformers builds the GGUF file's model from (its special tokens from the metadata's
    tokenizer.ggml.*_token_id, else none: a family's default padding id may lie past a small vocabulary)."""
    tokens = {
        f"{kind}_token_id": (metadata or {}).get(f"tokenizer.ggml.{name}_token_id")
        for kind, name in (("pad", "padding"), ("bos", "bos"), ("eos", "eos"))
    }
    return hf_model_config(spec, arch) | tokens


def hf_model_config(spec: Spec, arch: str) -> dict[str, Any]:
    """The keys that make the model."""
    kind, first = MODEL_TYPE[arch], GGUF_ARCHS.get(arch)
    if first is not None and first.gguf is not None and first.gguf.model_type is not None:
        kind = first.gguf.model_type(spec)  # (the family's way: llama with experts is mixtral, a tied T5 head mT5)
    if kind == "deepseek_v2" and spec.router_score == "sigmoid":
        kind = "deepseek_v3"
    sizes = size_keys(spec)
    out: dict[str, Any] = {"architectures": [CLASSES[kind]], "model_type": kind}
    if kind in RECORDS and RECORDS[kind].config_alone:
        return out | RECORDS[kind].config(spec)
    if kind.startswith("deepseek"):
        return out | _deepseek(spec, sizes)
    out |= sizes | rope_keys(spec)
    if spec.norm_type == "layernorm" and kind != "phimoe":
        out["layer_norm_eps"] = spec.norm_eps
    if kind in RECORDS:  # the family's own keys (families/)
        out |= RECORDS[kind].config(spec)
    if kind == "gpt_oss":
        layers = spec.attention_layers or ("full",) * spec.N
        out |= {
            "attention_bias": True,
            "num_local_experts": spec.E,
            "num_experts_per_tok": spec.k,
            "sliding_window": spec.window,
            "layer_types": [f"{kind}_attention" for kind in layers],
            "swiglu_limit": spec.swiglu_limit,
        }
        if spec.rope_scaling == "yarn":
            out["rope_scaling"]["truncate"] = spec.rope_truncate
    if spec.norm_type == "rmsnorm":
        out["rms_norm_eps"] = spec.norm_eps
    if kind in BIASED:
        out["attention_bias"] = spec.attention_bias
    if kind in ("qwen2_moe", "qwen3_moe"):
        out["hidden_act"] = "silu"
        out |= {
            "num_experts": spec.E,
            "num_experts_per_tok": spec.k,
            "moe_intermediate_size": spec.expert_r,
            "norm_topk_prob": spec.router_renorm,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
            "use_sliding_window": False,
        }
        if spec.shared_r:
            out["shared_expert_intermediate_size"] = spec.shared_r
    if kind.startswith("gemma"):
        out |= {"hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh"}
    if kind in ("gemma2", "gemma3_text"):
        out |= {
            "query_pre_attn_scalar": spec.m if spec.scale == "sqrt" else float(spec.scale) ** -2,
            "sliding_window": spec.window,
            "attn_logit_softcapping": spec.attn_softcap,
            "final_logit_softcapping": spec.logit_softcap,
        }
    if kind == "gemma3_text":
        out |= {"sliding_window_pattern": 6, "rope_local_base_freq": spec.rope_local_theta or spec.rope_theta}
    if kind == "phimoe":
        out |= _phimoe(spec)
    return out


def _phimoe(spec: Spec) -> dict[str, Any]:
    """PhiMoE's keys: LayerNorms whose eps is rms_norm_eps, the head's bias, sparsemixer's threshold, and
    LongRoPE's attention factor as short_mscale and long_mscale (its original context in rope_scaling)."""
    out: dict[str, Any] = {
        "rms_norm_eps": spec.norm_eps,
        "lm_head_bias": spec.head_bias,
        "attention_bias": spec.attention_bias,
        "sliding_window": spec.window,
        "num_local_experts": spec.E,
        "num_experts_per_tok": spec.k,
        "router_jitter_noise": spec.router_jitter,
        "hidden_act": "silu",
    }
    if spec.rope_scaling == "longrope":
        out["rope_scaling"] = rope_keys(spec)["rope_scaling"] | {
            "short_mscale": spec.rope_attention_factor,
            "long_mscale": spec.rope_attention_factor,
            "original_max_position_embeddings": spec.rope_original_max_len,
        }
    return out


def _deepseek(spec: Spec, sizes: dict[str, Any]) -> dict[str, Any]:
    """DeepSeek-V2's or V3's keys (V3: the sigmoid router, its correction bias, groups by their best two)."""
    rotated, dense = spec.rotated_dims, spec.feedforward_layers or ()
    out = (
        {k: v for k, v in sizes.items() if k != "head_dim"}
        | rope_keys(spec)
        | {
            "num_key_value_heads": spec.H,
            "kv_lora_rank": spec.kv_rank,
            "q_lora_rank": spec.q_rank,
            "qk_rope_head_dim": rotated,
            "qk_nope_head_dim": spec.m - rotated,
            "v_head_dim": spec.value_size,
            "rms_norm_eps": spec.norm_eps,
            "attention_bias": False,
            "hidden_act": "silu",
            "n_routed_experts": spec.E,
            "num_experts_per_tok": spec.k,
            "moe_intermediate_size": spec.expert_r,
            "n_shared_experts": (spec.shared_r or 0) // (spec.expert_r or 1),
            "first_k_dense_replace": sum(1 for kind in dense if kind == "dense"),
            "n_group": spec.router_groups or 1,
            "topk_group": spec.router_topk_groups or 1,
            "routed_scaling_factor": spec.router_scale,
            "norm_topk_prob": spec.router_renorm,
        }
    )
    out.pop("partial_rotary_factor", None)
    if spec.rope_scaling == "yarn":
        out["rope_scaling"] |= {"mscale": spec.rope_mscale, "mscale_all_dim": spec.rope_mscale_all_dim}
    if spec.router_score == "sigmoid":
        return out | {"scoring_func": "sigmoid", "topk_method": "noaux_tc", "rope_interleave": True}
    return out | {"topk_method": "group_limited_greedy" if spec.router_groups else "greedy"}


__all__ = ["MODEL_TYPE", "hf_config"]
