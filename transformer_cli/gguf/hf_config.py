"""The Hugging Face config.json of a GGUF file's model, for `tfm convert FILE.gguf -o FOLDER`: the model_type its
architecture comes from (llama with experts: mixtral), and the keys transformers reads to build that model. The
config is checked by reading it back: its spec must be the file's, or the folder is not written."""

from __future__ import annotations

from typing import Any

from ..families import GGUF_ARCHS, RECORDS
from ..families.config_keys import rope_keys
from ..hf.families import FAMILIES
from ..spec.definition import Spec
from .archs import MODEL_TYPE

CLASSES = {kind: model_class for kind, (model_class, _) in FAMILIES.items()}  # a model_type's transformers class


BIASED = ("llama", "mixtral", "qwen3", "phi3", "olmo2")


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
    kind = MODEL_TYPE[arch]
    if kind == "llama" and spec.E:
        kind = "mixtral"
    family = GGUF_ARCHS.get(arch)
    if family is not None and family.gguf is not None and family.gguf.model_type is not None:
        kind = family.gguf.model_type(spec)  # (where the file's model decides it)
    sizes = {
        "vocab_size": spec.V,
        "hidden_size": spec.d,
        "intermediate_size": spec.r,
        "num_hidden_layers": spec.N,
        "num_attention_heads": spec.H,
        "num_key_value_heads": spec.kv_heads,
        "head_dim": spec.m,
        "max_position_embeddings": spec.context or spec.max_len or 2048,
        "tie_word_embeddings": spec.tie_embeddings,
    }
    out: dict[str, Any] = {"architectures": [CLASSES[kind]], "model_type": kind}
    if kind in RECORDS and RECORDS[kind].config_alone:
        return out | RECORDS[kind].config(spec)
    if kind == "falcon":
        two = not spec.shared_norm
        return (
            out
            | {k: v for k, v in sizes.items() if k not in ("num_key_value_heads", "head_dim", "intermediate_size")}
            | {
                "ffn_hidden_size": spec.r,
                "layer_norm_epsilon": spec.norm_eps,
                "new_decoder_architecture": two,
                "multi_query": spec.kv_heads == 1,
                "num_kv_heads": spec.kv_heads,
                "parallel_attn": True,
                "bias": False,
                "alibi": False,
                **rope_keys(spec),
            }
        )
    if kind == "t5":
        return _t5(spec)
    out |= sizes | rope_keys(spec)
    if spec.norm_type == "layernorm":
        out["layer_norm_eps"] = spec.norm_eps
    if kind in RECORDS:  # the family's own keys (families/)
        out |= RECORDS[kind].config(spec)
    if spec.norm_type == "rmsnorm":
        out["rms_norm_eps"] = spec.norm_eps
    if kind in BIASED:
        out["attention_bias"] = spec.attention_bias
    if kind in ("llama", "mixtral", "qwen2", "qwen3", "phi3", "olmo2"):
        out["hidden_act"] = "silu"
    if kind == "mixtral":
        out |= {"num_local_experts": spec.E, "num_experts_per_tok": spec.k, "sliding_window": None}
    if kind in ("qwen2", "qwen3"):
        out["use_sliding_window"] = False
    if kind == "phi3":
        out["sliding_window"] = spec.window
    return out


def _t5(spec: Spec) -> dict[str, Any]:
    """T5's keys: its own head as T5 1.1's config (t5, untied); a tied one unscaled as mT5's config is (T5's
    config would scale it by d^-1/2, which the GGUF file's model does not)."""
    kind = "t5" if not spec.tie_embeddings else "mt5"
    return {
        "architectures": [CLASSES[kind]],
        "model_type": kind,
        "is_encoder_decoder": True,
        "vocab_size": spec.V,
        "d_model": spec.d,
        "d_kv": spec.m,
        "d_ff": spec.r,
        "num_layers": spec.N_enc,
        "num_decoder_layers": spec.N,
        "num_heads": spec.H,
        "relative_attention_num_buckets": spec.rel_buckets,
        "relative_attention_max_distance": spec.rel_max_distance,
        "layer_norm_epsilon": spec.norm_eps,
        "feed_forward_proj": "gated-gelu" if spec.feedforward == "gated" else spec.activation,
        "tie_word_embeddings": spec.tie_embeddings,
        "decoder_start_token_id": 0,
    }


__all__ = ["MODEL_TYPE", "hf_config"]
