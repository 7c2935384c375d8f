"""The metadata llama.cpp's convert_hf_to_gguf.py writes for each architecture (TextModel.set_gguf_parameters and
the classes that write their own list), for tests/formats/gguf_files.py's converter-like files."""

from __future__ import annotations

import math

import gguf_metadata_2026
import gguf_metadata_mixers as mixers
import numpy as np

ARCHS = {
    "llama": "LLAMA",
    "mistral": "LLAMA",
    "mixtral": "LLAMA",
    "qwen2": "QWEN2",
    "qwen3": "QWEN3",
    "qwen2_moe": "QWEN2MOE",
    "qwen3_moe": "QWEN3MOE",
    "gemma": "GEMMA",
    "gemma2": "GEMMA2",
    "gemma3_text": "GEMMA3",
    "phi3": "PHI3",
    "phimoe": "PHIMOE",
    "starcoder2": "STARCODER2",
    "gpt2": "GPT2",
    "falcon": "FALCON",
    "olmo2": "OLMO2",
    "granite": "GRANITE",
    "cohere": "COMMAND_R",
    "stablelm": "STABLELM",
    "bloom": "BLOOM",
    "gpt_neox": "GPTNEOX",
    "phi": "PHI2",
    "gpt_oss": "GPT_OSS",
    "deepseek_v2": "DEEPSEEK2",
    "deepseek_v3": "DEEPSEEK2",
    "bert": "BERT",
    "roberta": "BERT",
    "xlm-roberta": "BERT",
    "distilbert": "BERT",
    "t5": "T5",
    "mt5": "T5",
    "umt5": "T5",
    "gptj": "GPTJ",
    "arcee": "ARCEE",
    "seed_oss": "SEED_OSS",
    "smollm3": "SMOLLM3",
    "ernie4_5": "ERNIE4_5",
} | gguf_metadata_2026.ARCHS
LLAMA_MODELS = ("LLAMA", "GRANITE", "ARCEE", "SMOLLM3") + gguf_metadata_2026.LLAMA_MODELS  # LlamaModel, subclasses
PERMUTED = (  # those that permute Q and K as LlamaModel does
    tuple(arch for arch in LLAMA_MODELS if arch not in gguf_metadata_2026.UNPERMUTED) + gguf_metadata_2026.PERMUTED
)


GRANITES = ("granite", "granite_swa")  # GraniteModel and its subclass


def _kv_heads(cfg) -> int:
    """Key/value heads as the converter reads them from config.json (Falcon: num_kv_heads with the new
    architecture, else 1 for multi-query; GPT-2: the query heads)."""
    if cfg.model_type == "falcon":
        return cfg.num_kv_heads if cfg.new_decoder_architecture else 1 if cfg.multi_query else cfg.num_attention_heads
    return getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads


def _own_metadata(writer, cfg) -> bool:
    """The architectures whose class writes its own list (GPT2Model, FalconModel, Phi3MiniModel); True if it did."""
    import gguf

    kind = cfg.model_type
    if kind == "gpt2":
        for add, value in (
            (writer.add_block_count, cfg.n_layer),
            (writer.add_context_length, cfg.n_positions),
            (writer.add_embedding_length, cfg.n_embd),
            (writer.add_feed_forward_length, 4 * cfg.n_embd),
            (writer.add_head_count, cfg.n_head),
            (writer.add_layer_norm_eps, cfg.layer_norm_epsilon),
        ):
            add(value)
    elif kind == "falcon":
        writer.add_context_length(2048)
        writer.add_tensor_data_layout("jploski")
        for add, value in (
            (writer.add_embedding_length, cfg.hidden_size),
            (writer.add_feed_forward_length, 4 * cfg.hidden_size),
            (writer.add_block_count, cfg.num_hidden_layers),
            (writer.add_head_count, cfg.num_attention_heads),
            (writer.add_head_count_kv, _kv_heads(cfg)),
            (writer.add_layer_norm_eps, cfg.layer_norm_epsilon),
        ):
            add(value)
    elif kind.startswith("deepseek") or kind == "glm_moe_dsa":
        _deepseek(writer, cfg)
    elif ARCHS.get(kind) == "BERT":
        _bert(writer, cfg)
    elif ARCHS.get(kind) == "T5":  # T5Model.set_gguf_parameters
        for add, value in (
            (writer.add_context_length, getattr(cfg, "n_positions", 512)),
            (writer.add_embedding_length, cfg.d_model),
            (writer.add_feed_forward_length, cfg.d_ff),
            (writer.add_block_count, cfg.num_layers),
            (writer.add_head_count, cfg.num_heads),
            (writer.add_key_length, cfg.d_kv),
            (writer.add_value_length, cfg.d_kv),
            (writer.add_layer_norm_eps, cfg.layer_norm_epsilon),
            (writer.add_layer_norm_rms_eps, cfg.layer_norm_epsilon),
            (writer.add_relative_attn_buckets_count, cfg.relative_attention_num_buckets),
            (writer.add_decoder_start_token_id, cfg.decoder_start_token_id),
        ):
            add(value)
        if getattr(cfg, "num_decoder_layers", None) is not None:
            writer.add_decoder_block_count(cfg.num_decoder_layers)
    elif kind == "gptj":  # GPTJModel.set_gguf_parameters
        m = cfg.n_embd // cfg.n_head
        for add, value in (
            (writer.add_block_count, cfg.n_layer),
            (writer.add_context_length, cfg.n_positions),
            (writer.add_embedding_length, cfg.n_embd),
            (writer.add_feed_forward_length, 4 * cfg.n_embd),
            (writer.add_head_count, cfg.n_head),
            (writer.add_layer_norm_eps, cfg.layer_norm_epsilon),
        ):
            add(value)
        if (cfg.rotary_dim or m) < m:
            writer.add_rope_dimension_count(cfg.rotary_dim)
    elif kind == "bloom":  # BloomModel.set_gguf_parameters
        d = cfg.hidden_size
        for add, value in (
            (writer.add_context_length, getattr(cfg, "seq_length", d)),
            (writer.add_embedding_length, d),
            (writer.add_feed_forward_length, 4 * d),
            (writer.add_block_count, cfg.n_layer),
            (writer.add_head_count, cfg.n_head),
            (writer.add_head_count_kv, cfg.n_head),
            (writer.add_layer_norm_eps, cfg.layer_norm_epsilon),
        ):
            add(value)
    elif kind == "phi":  # Phi2Model.set_gguf_parameters
        d, H = cfg.hidden_size, cfg.num_attention_heads
        for add, value in (
            (writer.add_context_length, cfg.max_position_embeddings),
            (writer.add_embedding_length, d),
            (writer.add_feed_forward_length, 4 * d),
            (writer.add_block_count, cfg.num_hidden_layers),
            (writer.add_head_count, H),
            (writer.add_head_count_kv, H),
            (writer.add_layer_norm_eps, cfg.layer_norm_eps),
            (writer.add_rope_dimension_count, int(cfg.rope_parameters["partial_rotary_factor"] * d) // H),
            (writer.add_add_bos_token, False),
        ):
            add(value)
    elif kind in ("gpt_neox", "stablelm"):  # GPTNeoXModel's and StableLMModel's set_gguf_parameters
        m = cfg.hidden_size // cfg.num_attention_heads
        kv = [(writer.add_head_count_kv, cfg.num_key_value_heads)] if kind == "stablelm" else []  # (StableLM's only)
        for add, value in (
            (writer.add_context_length, cfg.max_position_embeddings),
            (writer.add_embedding_length, cfg.hidden_size),
            (writer.add_block_count, cfg.num_hidden_layers),
            (writer.add_feed_forward_length, cfg.intermediate_size),
            (writer.add_rope_dimension_count, int(cfg.rope_parameters["partial_rotary_factor"] * m)),
            (writer.add_head_count, cfg.num_attention_heads),
            *kv,
            (writer.add_parallel_residual, cfg.use_parallel_residual),
            (writer.add_layer_norm_eps, cfg.layer_norm_eps),
        ):
            add(value)
    elif kind in ("phi3", "phimoe"):  # Phi3MiniModel.set_gguf_parameters (and PhiMoeModel's expert counts)
        H, rope = cfg.num_attention_heads, cfg.rope_parameters
        orig = getattr(cfg, "original_max_position_embeddings", None) or rope["original_max_position_embeddings"]
        writer.add_context_length(cfg.max_position_embeddings)
        writer.add_rope_scaling_orig_ctx_len(orig)
        writer.add_embedding_length(cfg.hidden_size)
        writer.add_feed_forward_length(cfg.intermediate_size)
        writer.add_block_count(cfg.num_hidden_layers)
        writer.add_head_count(H)
        writer.add_head_count_kv(cfg.num_key_value_heads)
        writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
        writer.add_rope_dimension_count(int(rope.get("partial_rotary_factor", 1.0) * cfg.hidden_size) // H)
        writer.add_rope_freq_base(rope["rope_theta"])
        writer.add_sliding_window(cfg.sliding_window or 0)
        if kind == "phimoe":
            writer.add_expert_used_count(cfg.num_experts_per_tok)
            writer.add_expert_count(cfg.num_local_experts)
        if rope.get("rope_type") == "longrope":  # Phi3MiniModel.generate_extra_tensors
            scale = cfg.max_position_embeddings / orig
            writer.add_rope_scaling_attn_factors(math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1 else 1.0)
            writer.add_tensor("rope_factors_long.weight", np.array(rope["long_factor"], dtype=np.float32))
            writer.add_tensor("rope_factors_short.weight", np.array(rope["short_factor"], dtype=np.float32))
    elif kind in gguf_metadata_2026.OWN_LISTS:
        gguf_metadata_2026.own_list(writer, cfg)
    else:
        return False
    writer.add_name(f"tiny {kind}")
    writer.add_token_list([f"<t{i}>" for i in range(cfg.vocab_size)])
    assert gguf  # (imported for the writer's types)
    return True


def _metadata(writer, cfg) -> None:
    """The keys TextModel.set_gguf_parameters and the architecture's class write (GemmaModel and Gemma2Model
    their own list, no rope base)."""
    import gguf

    if _own_metadata(writer, cfg):
        return
    kind, H = cfg.model_type, cfg.num_attention_heads
    writer.add_name(f"tiny {kind}")
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    if getattr(cfg, "intermediate_size", None) is not None:  # (TextModel: where the config has it; Qwen3.5-MoE's none)
        writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(H)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    if getattr(cfg, "rms_norm_eps", None) is not None:
        writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    for key in ("layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"):  # TextModel: the first it finds
        if getattr(cfg, key, None) is not None:
            writer.add_layer_norm_eps(getattr(cfg, key))
            break
    rope = cfg.rope_parameters.get("full_attention", cfg.rope_parameters)
    if kind not in ("gemma", "gemma2"):
        writer.add_rope_freq_base(rope["rope_theta"])
    if rope.get("rope_type") == "linear":
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(rope["factor"])
    elif rope.get("rope_type") == "yarn":
        writer.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        writer.add_rope_scaling_factor(rope["factor"])
        writer.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
        for key, add in (
            ("attention_factor", writer.add_rope_scaling_yarn_attn_factor),
            ("beta_fast", writer.add_rope_scaling_yarn_beta_fast),
            ("beta_slow", writer.add_rope_scaling_yarn_beta_slow),
        ):
            if rope.get(key) is not None:
                add(rope[key])
    if "sliding_attention" in cfg.rope_parameters:
        writer.add_rope_freq_base_swa(cfg.rope_parameters["sliding_attention"]["rope_theta"])
    if kind in GRANITES:  # GraniteModel: the multipliers (head_dim popped)
        writer.add_attention_scale(cfg.attention_multiplier)
        writer.add_embedding_scale(cfg.embedding_multiplier)
        writer.add_residual_scale(cfg.residual_multiplier)
        writer.add_logit_scale(cfg.logits_scaling)
    if kind == "gpt_oss":  # GptOssModel
        writer.add_sliding_window(cfg.sliding_window)
        writer.add_expert_feed_forward_length(cfg.intermediate_size)
    if kind == "cohere":  # CommandR2Model
        writer.add_logit_scale(cfg.logit_scale)
        writer.add_rope_scaling_type(gguf.RopeScalingType.NONE)
    if getattr(cfg, "head_dim", None) is not None and kind not in GRANITES:  # TextModel: head_dim, if the config has it
        writer.add_key_length(cfg.head_dim)
        writer.add_value_length(cfg.head_dim)
    writer.add_token_list([f"<t{i}>" for i in range(cfg.vocab_size)])  # (set_vocab: the vocabulary's tokens)
    if ARCHS[kind] in LLAMA_MODELS:  # LlamaModel adds these
        writer.add_vocab_size(cfg.vocab_size)
        head = cfg.hidden_size // H if kind in GRANITES else getattr(cfg, "head_dim", None) or cfg.hidden_size // H
        writer.add_rope_dimension_count(head)
    E = getattr(cfg, "num_local_experts", None) or getattr(cfg, "num_experts", None)
    if E:
        writer.add_expert_count(E)
        writer.add_expert_used_count(cfg.num_experts_per_tok)
    if getattr(cfg, "moe_intermediate_size", None):
        writer.add_expert_feed_forward_length(cfg.moe_intermediate_size)
    if getattr(cfg, "shared_expert_intermediate_size", None):
        writer.add_expert_shared_feed_forward_length(cfg.shared_expert_intermediate_size)
    if kind == "gemma2":
        writer.add_attn_logit_softcapping(cfg.attn_logit_softcapping)
        writer.add_final_logit_softcapping(cfg.final_logit_softcapping)
    if kind in ("gemma2", "gemma3_text"):
        writer.add_sliding_window(cfg.sliding_window)
    gguf_metadata_2026.own_keys(writer, cfg)


def _deepseek(writer, cfg) -> None:
    """DeepseekV2Model.set_gguf_parameters and the TextModel keys it inherits (num_key_value_heads forced to 1)."""
    import gguf

    rope = cfg.rope_parameters
    for add, value in (
        (writer.add_block_count, cfg.num_hidden_layers),
        (writer.add_context_length, cfg.max_position_embeddings),
        (writer.add_embedding_length, cfg.hidden_size),
        (writer.add_feed_forward_length, cfg.intermediate_size),
        (writer.add_head_count, cfg.num_attention_heads),
        (writer.add_head_count_kv, 1),
        (writer.add_rope_freq_base, rope["rope_theta"]),
        (writer.add_layer_norm_rms_eps, cfg.rms_norm_eps),
        (writer.add_expert_used_count, cfg.num_experts_per_tok),
        (writer.add_expert_group_count, cfg.n_group),
        (writer.add_expert_group_used_count, cfg.topk_group),
        (writer.add_leading_dense_block_count, cfg.first_k_dense_replace),
        (writer.add_vocab_size, cfg.vocab_size),
        (writer.add_kv_lora_rank, cfg.kv_lora_rank),
        (writer.add_key_length, cfg.kv_lora_rank + cfg.qk_rope_head_dim),
        (writer.add_value_length, cfg.kv_lora_rank),
        (writer.add_key_length_mla, cfg.qk_nope_head_dim + cfg.qk_rope_head_dim),
        (writer.add_value_length_mla, cfg.v_head_dim),
        (writer.add_expert_feed_forward_length, cfg.moe_intermediate_size),
        (writer.add_expert_count, cfg.n_routed_experts),
        (writer.add_expert_shared_count, cfg.n_shared_experts),
        (writer.add_expert_weights_scale, cfg.routed_scaling_factor),
        (writer.add_rope_dimension_count, cfg.qk_rope_head_dim),
    ):
        add(value)
    if cfg.model_type == "glm_moe_dsa":  # (its converter writes no gating: llama.cpp's glm-dsa takes sigmoid)
        mixers.dsa_keys(writer, cfg)
    else:
        scoring = getattr(cfg, "scoring_func", "softmax")
        writer.add_expert_gating_func(
            gguf.ExpertGatingFuncType.SIGMOID if scoring == "sigmoid" else gguf.ExpertGatingFuncType.SOFTMAX
        )
    if cfg.q_lora_rank is not None:
        writer.add_q_lora_rank(cfg.q_lora_rank)
    if getattr(cfg, "norm_topk_prob", False):
        writer.add_expert_weights_norm(True)
    if rope.get("rope_type") == "yarn":
        writer.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        writer.add_rope_scaling_factor(rope["factor"])
        writer.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
        for key, add in (
            ("beta_fast", writer.add_rope_scaling_yarn_beta_fast),
            ("beta_slow", writer.add_rope_scaling_yarn_beta_slow),
        ):
            if rope.get(key) is not None:
                add(rope[key])
        if rope.get("mscale_all_dim"):
            writer.add_rope_scaling_yarn_log_mul(0.1 * rope["mscale_all_dim"])


def _bert(writer, cfg) -> None:
    """BertModel.set_gguf_parameters: TextModel's keys (RoBERTa's context less its position offset), not causal,
    the token types' count (set_vocab)."""
    d = getattr(cfg, "hidden_size", None) or cfg.dim
    offset = cfg.pad_token_id + 1 if cfg.model_type in ("roberta", "xlm-roberta") else 0
    for add, value in (
        (writer.add_block_count, getattr(cfg, "num_hidden_layers", None) or cfg.n_layers),
        (writer.add_context_length, cfg.max_position_embeddings - offset),
        (writer.add_embedding_length, d),
        (writer.add_feed_forward_length, getattr(cfg, "intermediate_size", None) or cfg.hidden_dim),
        (writer.add_head_count, getattr(cfg, "num_attention_heads", None) or cfg.n_heads),
        (writer.add_layer_norm_eps, getattr(cfg, "layer_norm_eps", 1e-12)),
        (writer.add_causal_attention, False),
        (writer.add_token_type_count, getattr(cfg, "type_vocab_size", 1)),
    ):
        add(value)
