"""One mapping per Hugging Face family: its config keys, with the defaults transformers 5.24 gives them, onto
tfm's spec keys (docs/families.md lists them; each default is the family's `configuration_*.py`).

A null is the default, except where transformers types the key `int | None` and gives None a meaning of its own
(Qwen2's `num_key_value_heads: null` is H where an absent one is 32; Mistral's `sliding_window: null` is no window).
Sizes (hidden size, layers, heads, vocabulary, feedforward) are required: transformers would fill them in
from the 7B model its class describes, which a config.json without them never means.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..families import RECORDS
from ..families.keys import REQUIRED, Keys
from ..families.parts import CAUSAL_PRE, activation, kv_heads, llama_like, rope, whole_heads, window_key
from .bert_families import bert, distilbert, roberta
from .encoder_decoder import bart, mbart, mt5, t5


def llama(c: Keys) -> dict[str, Any]:
    """LlamaForCausalLM: attention_bias puts biases on q, k, v and o; mlp_bias on the three projections."""
    biases = {"attention_bias": c.flag("attention_bias", False), "ff_bias": c.flag("mlp_bias", False)}
    return llama_like(c, c.count("num_key_value_heads", None), None, 1e-6, False, 2048) | biases


def mistral(c: Keys) -> dict[str, Any]:
    """MistralForCausalLM: 8 key/value heads and a window of 4096 unless the file says otherwise (null: none)."""
    spec = llama_like(c, c.count("num_key_value_heads", 8), None, 1e-6, False, 131072)
    return spec | window_key(c.nullable_count("sliding_window", 4096))


def mixtral(c: Keys) -> dict[str, Any]:
    """MixtralForCausalLM: Mistral's blocks with E gated experts, the top k per token."""
    E, k = c.count("num_local_experts", 8, "num_experts"), c.count("num_experts_per_tok", 2)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_local_experts = {E}")
    spec = llama_like(c, c.count("num_key_value_heads", 8), None, 1e-5, False, 131072, theta=1e6)
    return spec | window_key(c.nullable_count("sliding_window", None)) | {"E": E, "k": k}


def qwen2(c: Keys) -> dict[str, Any]:
    """Qwen2ForCausalLM: biases on q, k and v (always, no key), none on o."""
    spec = llama_like(c, c.nullable_count("num_key_value_heads", 32), None, 1e-6, False, 32768)
    return spec | {"attention_bias": True, "out_bias": False} | _layer_windows(c, spec["N"])


def qwen3(c: Keys) -> dict[str, Any]:
    """Qwen3ForCausalLM: an RMSNorm of each query and key head; heads of 128 unless head_dim says otherwise."""
    spec = llama_like(c, c.nullable_count("num_key_value_heads", 32), 128, 1e-6, False, 32768)
    return spec | {"attention_bias": c.flag("attention_bias", False), "qk_norm": True} | _layer_windows(c, spec["N"])


def olmo2(c: Keys) -> dict[str, Any]:
    """Olmo2ForCausalLM: LLaMA's attention and MLP, each sublayer's output normalised before its residual (no norm
    of its input), RMSNorms of all query and all key projections together (widths Hm and Gm), a final norm."""
    spec = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 2048)
    return spec | {
        "attention_bias": c.flag("attention_bias", False),
        "norm": "output",
        "qk_norm": True,
        "qk_norm_over": "all",
    }


def phi3(c: Keys) -> dict[str, Any]:
    """Phi3ForCausalLM: fused qkv_proj and gate_up_proj (the same tensors), an optional window, partial rotary."""
    spec = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 4096, partial=1.0)
    return spec | window_key(c.nullable_count("sliding_window", None))


def falcon(c: Keys) -> dict[str, Any]:
    """FalconForCausalLM: multi-query, grouped (new_decoder_architecture) or per-head fused attention; parallel
    blocks with one or two LayerNorms, or sequential ones. Old files name the sizes n_embed, n_head, n_layer."""
    if c.flag("alibi", False):
        raise c.refuse("alibi", True, "tfm has no ALiBi position biases (alibi: false gives rotary positions)")
    d = c.count("n_embed", None) or c.count("hidden_size")  # n_embed wins, as in FalconConfig
    H = c.count("num_attention_heads", REQUIRED, "n_head")
    parallel, shared = _falcon_blocks(c)
    bias = c.flag("bias", False)
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers", REQUIRED, "n_layer"),
        "H": H,
        "m": whole_heads(c, d, H),
        "d": d,
        "r": c.count("ffn_hidden_size", 4 * d),
        "V": c.count("vocab_size"),
        **_falcon_kv(c, H),
        "tie_embeddings": c.flag("tie_word_embeddings", True),
        **rope(c, c.count("max_position_embeddings", 2048), d // H),
        "norm_eps": c.number("layer_norm_epsilon", 1e-5),
        "parallel": parallel,
        "shared_norm": shared,
        "attention_bias": bias,
        "ff_bias": bias,
        "activation": activation(c, "activation", "gelu"),
    }


def _falcon_kv(c: Keys, H: int) -> dict[str, Any]:
    """G: num_kv_heads with new_decoder_architecture, else 1 (multi_query) or H (FalconAttention.__init__)."""
    G = c.nullable_count("num_kv_heads", None) or H
    if c.flag("new_decoder_architecture", False):
        return kv_heads(c, "num_kv_heads", G, H)
    if not c.flag("multi_query", True) and G != H:  # the fused tensor holds H keys, the reshape wants G
        raise c.refuse("num_kv_heads", G, "fewer key/value heads than queries need new_decoder_architecture")
    return kv_heads(c, "num_kv_heads", 1 if c.flag("multi_query", True) else H, H)


def _falcon_blocks(c: Keys) -> tuple[bool, bool]:
    """(parallel, one shared norm), as FalconDecoderLayer builds and runs them; other settings crash it."""
    new, parallel = c.flag("new_decoder_architecture", False), c.flag("parallel_attn", True)
    norms = c.count("num_ln_in_parallel_attn", 2 if new else None)
    if new and not parallel:
        raise c.refuse("parallel_attn", False, "transformers' Falcon needs parallel_attn with new_decoder_architecture")
    if new and norms not in (1, 2):
        raise c.refuse("num_ln_in_parallel_attn", norms, "transformers' Falcon builds 1 or 2 norms per block")
    if not new and parallel and norms == 2:
        raise c.refuse("num_ln_in_parallel_attn", 2, "2 norms need new_decoder_architecture in transformers' Falcon")
    return parallel, parallel and (norms == 1 or not new)


def _layer_windows(c: Keys, N: int) -> dict[str, Any]:
    """Qwen2/Qwen3: a window only with use_sliding_window, on layers max_window_layers.. (or as layer_types says):
    the blocks' attention_layers where some slide and some do not."""
    window = c.nullable_count("sliding_window", 4096) if c.flag("use_sliding_window", False) else None
    key, kinds = "layer_types", c.data.get("layer_types")
    if kinds is None:
        key, first = "max_window_layers", c.index("max_window_layers", 28)
        kinds = ["sliding_attention" if window and i >= first else "full_attention" for i in range(N)]
    elif not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= {"full_attention", "sliding_attention"}:
        raise c.fail(key, kinds, f"a list of {N} 'full_attention' or 'sliding_attention'")
    if "sliding_attention" not in kinds:
        return {}
    if window is None:
        raise c.refuse(key, c.data.get(key, kinds), "sliding layers need use_sliding_window and a sliding_window")
    layers = {"attention_layers": ["sliding" if k == "sliding_attention" else "full" for k in kinds]}
    return window_key(window) | (layers if "full_attention" in kinds else {})


FAMILIES: dict[str, tuple[str, Callable[[Keys], dict[str, Any]]]] = {
    "bert": ("BertModel", bert),
    "roberta": ("RobertaModel", roberta),
    "xlm-roberta": ("XLMRobertaModel", roberta),
    "distilbert": ("DistilBertModel", distilbert),
    "llama": ("LlamaForCausalLM", llama),
    "mistral": ("MistralForCausalLM", mistral),
    "mixtral": ("MixtralForCausalLM", mixtral),
    "qwen2": ("Qwen2ForCausalLM", qwen2),
    "qwen3": ("Qwen3ForCausalLM", qwen3),
    "olmo2": ("Olmo2ForCausalLM", olmo2),
    "phi3": ("Phi3ForCausalLM", phi3),
    "falcon": ("FalconForCausalLM", falcon),
    "t5": ("T5ForConditionalGeneration", t5),
    "bart": ("BartForConditionalGeneration", bart),
    "mt5": ("MT5ForConditionalGeneration", mt5),
    "mbart": ("MBartForConditionalGeneration", mbart),
}
FAMILIES |= {kind: (record.hf_class, record.spec) for kind, record in RECORDS.items()}  # (families/)

__all__ = ["FAMILIES"]
