"""The 2026 dense families of issue 44 added after hf_models.py filled (CodeGen, MPT, Granite SWA, Ministral 3,
NanoChat, Apertus): their transformers models for the conformance tests, as hf_models.py's MODELS (which holds
these too)."""

from __future__ import annotations

from hf_small import SMALL

DENSE = {  # name: (config class, model class, config)
    "codegen": ("CodeGenConfig", "CodeGenForCausalLM", dict(  # q, v, k fused over four shards; a head spans two
        vocab_size=97, n_embd=24, n_layer=2, n_head=3, rotary_dim=4, n_positions=64, bos_token_id=None,
        eos_token_id=None)),
    "codegen-whole-heads": ("CodeGenConfig", "CodeGenForCausalLM", dict(
        vocab_size=97, n_embd=32, n_layer=2, n_head=4, rotary_dim=8, n_inner=40, activation_function="gelu_new",
        tie_word_embeddings=True, bos_token_id=None, eos_token_id=None)),
    "mpt": ("MptConfig", "MptForCausalLM", dict(  # ALiBi over 6 heads (not a power of 2), Wqkv fused
        vocab_size=97, d_model=24, n_heads=6, n_layers=2, max_seq_len=64, attn_implementation="eager")),
    "mpt-scaled-untied": ("MptConfig", "MptForCausalLM", dict(
        vocab_size=97, d_model=32, n_heads=4, n_layers=2, max_seq_len=64, layer_norm_epsilon=1e-6,
        tie_word_embeddings=False, attn_config={"softmax_scale": 0.3}, attn_implementation="eager")),
    "mpt-clipped": ("MptConfig", "MptForCausalLM", dict(  # q, k and v clamped (clip_qkv), as DBRX's
        vocab_size=97, d_model=32, n_heads=4, n_layers=2, max_seq_len=64, attn_config={"clip_qkv": 0.4},
        attn_implementation="eager")),
    "olmo-clipped": ("OlmoConfig", "OlmoForCausalLM", SMALL | dict(clip_qkv=0.4, pad_token_id=None)),
    "olmoe-clipped": ("OlmoeConfig", "OlmoeForCausalLM", SMALL | dict(  # (after its norms)
        num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, clip_qkv=0.3, pad_token_id=None,
        experts_implementation="eager")),
    "flex_olmo-clip-ignored": ("FlexOlmoConfig", "FlexOlmoForCausalLM", SMALL | dict(  # (no clamp in its code)
        num_key_value_heads=2, num_experts=3, num_experts_per_tok=2, clip_qkv=0.3, pad_token_id=None,
        experts_implementation="eager")),
    "granite_swa": ("GraniteSWAConfig", "GraniteSWAForCausalLM", SMALL | dict(  # sinks, one full to three sliding
        num_hidden_layers=4, num_key_value_heads=2, sliding_window=3, embedding_multiplier=2.0,
        attention_multiplier=0.3, residual_multiplier=0.7, logits_scaling=2.0, pad_token_id=None, bos_token_id=None,
        eos_token_id=None, attn_implementation="eager")),
    "granite_swa-layer-thetas": ("GraniteSWAConfig", "GraniteSWAForCausalLM", SMALL | dict(  # NoPE and two bases
        num_hidden_layers=4, num_key_value_heads=4, sliding_window=4, layer_rope_theta=[0, 50.0, 50.0, 0],
        layer_types=["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
        attention_bias=True, mlp_bias=True, tie_word_embeddings=False, pad_token_id=None, bos_token_id=None,
        eos_token_id=None, attn_implementation="eager")),
    "granite_swa-two-bases": ("GraniteSWAConfig", "GraniteSWAForCausalLM", SMALL | dict(
        num_hidden_layers=3, num_key_value_heads=2, sliding_window=5, layer_rope_theta=[1000.0, 50.0, 50.0],
        pad_token_id=None, bos_token_id=None, eos_token_id=None, attn_implementation="eager")),
    "ministral3": ("Ministral3Config", "Ministral3ForCausalLM", SMALL | dict(  # YaRN, queries scaled from t = 4 on
        num_key_value_heads=2, head_dim=8, pad_token_id=None, rope_parameters=dict(
            rope_type="yarn", rope_theta=1e6, factor=16.0, original_max_position_embeddings=4, beta_fast=32.0,
            beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0, llama_4_scaling_beta=0.1))),
    "ministral3-plain-window": ("Ministral3Config", "Ministral3ForCausalLM", SMALL | dict(  # every layer slides
        num_key_value_heads=4, head_dim=12, sliding_window=5, tie_word_embeddings=True, pad_token_id=None,
        rope_parameters=dict(rope_type="default", rope_theta=100.0, original_max_position_embeddings=3,
                             llama_4_scaling_beta=0.5))),
    "nanochat": ("NanoChatConfig", "NanoChatForCausalLM", SMALL | dict(  # pairs turned the other way, no gains
        num_key_value_heads=2, pad_token_id=None, bos_token_id=None, eos_token_id=None)),
    "nanochat-uncapped-biases": ("NanoChatConfig", "NanoChatForCausalLM", SMALL | dict(
        final_logit_softcapping=None, attention_bias=True, tie_word_embeddings=True, pad_token_id=None,
        bos_token_id=None, eos_token_id=None)),
    "apertus": ("ApertusConfig", "ApertusForCausalLM", SMALL | dict(  # xIELU, per-head norms, LLaMA 3's rotary
        num_key_value_heads=2, pad_token_id=None, bos_token_id=None, eos_token_id=None)),
    "apertus-biases-silu": ("ApertusConfig", "ApertusForCausalLM", SMALL | dict(  # another activation, plain
        hidden_act="silu", attention_bias=True, tie_word_embeddings=True, pad_token_id=None, bos_token_id=None,
        eos_token_id=None, rope_parameters={"rope_type": "default", "rope_theta": 100.0})),
    "apertus-biases-xielu": ("ApertusConfig", "ApertusForCausalLM", SMALL | dict(  # (GGUF: llama.cpp's biases)
        attention_bias=True, pad_token_id=None, bos_token_id=None, eos_token_id=None)),
    "llama4_text": ("Llama4TextConfig", "Llama4ForCausalLM", SMALL | dict(  # chunks, NoPE, experts on the input
        intermediate_size=16, intermediate_size_mlp=40, num_hidden_layers=4, num_key_value_heads=2, head_dim=8,
        num_local_experts=4, num_experts_per_tok=2, interleave_moe_layer_step=2, attention_chunk_size=4,
        floor_scale=4, attn_scale=0.1, rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        pad_token_id=None, bos_token_id=None, eos_token_id=None, attn_implementation="eager",
        experts_implementation="eager")),
    "llama4_text-dense-plain": ("Llama4TextConfig", "Llama4ForCausalLM", SMALL | dict(  # every layer turning, dense
        intermediate_size=16, intermediate_size_mlp=40, num_hidden_layers=2, num_key_value_heads=4, head_dim=8,
        moe_layers=[], no_rope_layers=[1, 1], attention_chunk_size=None, use_qk_norm=False, tie_word_embeddings=True,
        rope_parameters={"rope_type": "llama3", "rope_theta": 1000.0, "factor": 4.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 1.0, "original_max_position_embeddings": 8},  # (Scout's: equal)
        pad_token_id=None, bos_token_id=None, eos_token_id=None, attn_implementation="eager")),
    "llama4_text-every-layer-routed": ("Llama4TextConfig", "Llama4ForCausalLM", SMALL | dict(
        intermediate_size=16, intermediate_size_mlp=40, num_hidden_layers=3, num_key_value_heads=2, head_dim=8,
        num_local_experts=3, num_experts_per_tok=1, no_rope_layers=[0, 1, 0], attention_chunk_size=5,
        floor_scale=2, attn_scale=0.3, attention_bias=True, pad_token_id=None, bos_token_id=None, eos_token_id=None,
        attn_implementation="eager", experts_implementation="eager")),
    "llama4_text-gguf": ("Llama4TextConfig", "Llama4ForCausalLM", SMALL | dict(  # what llama.cpp's llama4 holds
        intermediate_size=16, intermediate_size_mlp=40, num_hidden_layers=5, num_key_value_heads=2, head_dim=8,
        num_local_experts=4, num_experts_per_tok=1, interleave_moe_layer_step=2, attention_chunk_size=8192,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 16.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 1.0, "original_max_position_embeddings": 8192},  # (Scout's)
        pad_token_id=None, bos_token_id=None, eos_token_id=None, attn_implementation="eager",
        experts_implementation="eager")),
    "eurobert": ("EuroBertConfig", "EuroBertModel", SMALL | dict(  # LLaMA's block, unmasked, the base model
        num_key_value_heads=2, pad_token_id=None, bos_token_id=None, eos_token_id=None, mask_token_id=3)),
    "eurobert-biases": ("EuroBertConfig", "EuroBertModel", SMALL | dict(
        num_key_value_heads=4, head_dim=12, attention_bias=True, mlp_bias=True, pad_token_id=None, bos_token_id=None,
        eos_token_id=None, mask_token_id=3, rope_parameters={"rope_type": "default", "rope_theta": 250000.0})),
    "apertus1p5_text": ("Apertus1p5TextConfig", "Apertus1p5TextForCausalLM", SMALL | dict(  # Apertus's, wider vocab
        num_key_value_heads=2, pad_token_id=None, bos_token_id=None, eos_token_id=None)),
    "apertus1p5_text-tied": ("Apertus1p5TextConfig", "Apertus1p5TextForCausalLM", SMALL | dict(  # (a head of V)
        tie_word_embeddings=True, output_vocab_size=48, pad_token_id=None, bos_token_id=None, eos_token_id=None)),
    "electra": ("ElectraConfig", "ElectraModel", dict(  # the embedding at 16, projected up to 32 (with a bias)
        vocab_size=97, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=40, max_position_embeddings=64)),
    "electra-one-width": ("ElectraConfig", "ElectraModel", dict(  # no projection where the widths agree
        vocab_size=97, embedding_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=40, max_position_embeddings=64, type_vocab_size=3, hidden_act="gelu_new",
        layer_norm_eps=1e-5)),
    "albert": ("AlbertConfig", "AlbertModel", dict(  # every block one layer's weights, the embedding at 16
        vocab_size=97, embedding_size=16, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
        intermediate_size=40, max_position_embeddings=64)),
    "albert-two-groups": ("AlbertConfig", "AlbertModel", dict(  # 5 blocks in runs of 3 and 2 (int(i / 2.5))
        vocab_size=97, embedding_size=32, hidden_size=32, num_hidden_layers=5, num_hidden_groups=2,
        num_attention_heads=4, intermediate_size=40, max_position_embeddings=64, hidden_act="gelu",
        type_vocab_size=3, layer_norm_eps=1e-5)),
    "mpnet": ("MPNetConfig", "MPNetModel", dict(  # learned positions after index 1 and T5's bias (32 buckets)
        vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
        max_position_embeddings=66, attn_implementation="eager")),  # (it has no SDPA)
    "mpnet-relu-eps": ("MPNetConfig", "MPNetModel", dict(
        vocab_size=97, hidden_size=24, num_hidden_layers=3, num_attention_heads=2, intermediate_size=40,
        max_position_embeddings=40, hidden_act="relu", layer_norm_eps=1e-5, attn_implementation="eager")),
    "modernbert": ("ModernBertConfig", "ModernBertModel", dict(  # full, sliding, sliding; a band of 3 keys either way
        vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=4, num_attention_heads=4,
        max_position_embeddings=64, local_attention=6, pad_token_id=0, bos_token_id=None, eos_token_id=None,
        cls_token_id=None, sep_token_id=None, attn_implementation="eager")),
    "modernbert-biases-every-2": ("ModernBertConfig", "ModernBertModel", dict(
        vocab_size=97, hidden_size=24, intermediate_size=40, num_hidden_layers=3, num_attention_heads=2,
        max_position_embeddings=64, local_attention=4, global_attn_every_n_layers=2, norm_bias=True,
        attention_bias=True, mlp_bias=True, hidden_activation="gelu_new", norm_eps=1e-6, global_rope_theta=500.0,
        local_rope_theta=50.0, pad_token_id=0, bos_token_id=None, eos_token_id=None, cls_token_id=None,
        sep_token_id=None, attn_implementation="eager")),
    "modernbert-decoder": ("ModernBertDecoderConfig", "ModernBertDecoderForCausalLM", dict(  # 3 latest keys
        vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=4, num_attention_heads=4,
        max_position_embeddings=64, local_attention=6, pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
        sep_token_id=2, attn_implementation="eager")),
    "modernbert-decoder-biases-untied": ("ModernBertDecoderConfig", "ModernBertDecoderForCausalLM", dict(
        vocab_size=97, hidden_size=24, intermediate_size=40, num_hidden_layers=3, num_attention_heads=2,
        max_position_embeddings=64, local_attention=8, sliding_window=3, global_attn_every_n_layers=2,
        norm_bias=True, attention_bias=True, mlp_bias=True, classifier_bias=True, decoder_bias=False,
        tie_word_embeddings=False, global_rope_theta=500.0, local_rope_theta=50.0, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, cls_token_id=1, sep_token_id=2, attn_implementation="eager")),
    "deberta-v2": ("DebertaV2Config", "DebertaV2Model", dict(  # DeBERTa-v3's: both terms, 8 buckets to 20
        vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
        max_position_embeddings=64, relative_attention=True, position_buckets=8, max_relative_positions=20,
        pos_att_type="p2c|c2p", position_biased_input=False, share_att_key=True, norm_rel_ebd="layer_norm",
        attn_implementation="eager")),
    "deberta-v2-c2p-types": ("DebertaV2Config", "DebertaV2Model", dict(  # one term, token types, no max distance
        vocab_size=97, hidden_size=24, num_hidden_layers=3, num_attention_heads=2, intermediate_size=40,
        max_position_embeddings=32, relative_attention=True, position_buckets=6, pos_att_type=["c2p"],
        position_biased_input=False, share_att_key=True, norm_rel_ebd="layer_norm", type_vocab_size=2,
        hidden_act="gelu_new", layer_norm_eps=1e-5, attn_implementation="eager")),
    "deberta-v2-absolute": ("DebertaV2Config", "DebertaV2Model", dict(  # no relative attention: BERT's positions
        vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
        max_position_embeddings=64, attn_implementation="eager")),
    "gemma4_text": ("Gemma4TextConfig", "Gemma4ForCausalLM", SMALL | dict(  # full heads of 16, proportional rope
        num_hidden_layers=4, num_key_value_heads=2, head_dim=8, global_head_dim=16, sliding_window=4,
        rms_norm_eps=1e-6, hidden_size_per_layer_input=0, final_logit_softcapping=30.0,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"])),
    "gemma4_text-default-kinds": ("Gemma4TextConfig", "Gemma4ForCausalLM", SMALL | dict(  # 5:1, the last forced full
        num_hidden_layers=7, num_key_value_heads=1, head_dim=8, global_head_dim=12, sliding_window=3,
        hidden_size_per_layer_input=0, attention_bias=True, tie_word_embeddings=False,
        rope_parameters={"full_attention": {"rope_type": "proportional", "rope_theta": 100.0,
        "partial_rotary_factor": 0.5, "factor": 2.0}, "sliding_attention": {"rope_type": "default",
        "rope_theta": 50.0}})),
    "gemma4_text-k-eq-v": ("Gemma4TextConfig", "Gemma4ForCausalLM", SMALL | dict(  # full values = keys, G of 1
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, global_head_dim=16, sliding_window=4,
        hidden_size_per_layer_input=0, attention_k_eq_v=True, num_global_key_value_heads=1, attention_bias=True,
        layer_types=["sliding_attention", "full_attention", "full_attention"])),
    "gemma4_text-k-eq-v-gguf": ("Gemma4TextConfig", "Gemma4ForCausalLM", SMALL | dict(  # full values = keys, no
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, global_head_dim=16, sliding_window=4,  # biases (a
        hidden_size_per_layer_input=0, attention_k_eq_v=True, num_global_key_value_heads=1,  # GGUF file has none)
        layer_types=["sliding_attention", "full_attention", "full_attention"])),
    "gemma4_text-moe": ("Gemma4TextConfig", "Gemma4ForCausalLM", SMALL | dict(  # an MLP and 4 experts every layer
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, global_head_dim=16, sliding_window=4,
        hidden_size_per_layer_input=0, enable_moe_block=True, num_experts=4, top_k_experts=2,
        moe_intermediate_size=12, final_logit_softcapping=30.0, experts_implementation="eager")),
    "gemma4_text-ple": ("Gemma4TextConfig", "Gemma4ForCausalLM", SMALL | dict(  # per-layer inputs of 8
        num_hidden_layers=4, num_key_value_heads=2, head_dim=8, global_head_dim=16, sliding_window=4,
        hidden_size_per_layer_input=8, vocab_size_per_layer_input=97)),
    "gemma4_text-ple-moe-k-eq-v": ("Gemma4TextConfig", "Gemma4ForCausalLM", SMALL | dict(  # every piece but sharing
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, global_head_dim=12, sliding_window=3,
        hidden_size_per_layer_input=6, vocab_size_per_layer_input=120, enable_moe_block=True, num_experts=3,
        top_k_experts=2, moe_intermediate_size=10, attention_k_eq_v=True, num_global_key_value_heads=1,
        attention_bias=True, final_logit_softcapping=20.0, layer_types=["sliding_attention", "full_attention",
        "full_attention"], experts_implementation="eager")),
    "gemma4_text-kv-shared": ("Gemma4TextConfig", "Gemma4ForCausalLM", SMALL | dict(  # the last two reuse 2 and 3
        num_hidden_layers=6, num_key_value_heads=2, head_dim=8, global_head_dim=16, sliding_window=4,
        hidden_size_per_layer_input=8, vocab_size_per_layer_input=97, num_kv_shared_layers=2,
        use_double_wide_mlp=True, layer_types=["sliding_attention", "full_attention"] * 3)),
    "gemma4_text-kv-shared-moe": ("Gemma4TextConfig", "Gemma4ForCausalLM", SMALL | dict(  # three sharing 2 and 3
        layer_types=["sliding_attention", "full_attention"] * 3 + ["full_attention"], num_hidden_layers=7,
        num_key_value_heads=2, head_dim=8, global_head_dim=12, sliding_window=3, hidden_size_per_layer_input=6,
        vocab_size_per_layer_input=97, num_kv_shared_layers=3, use_double_wide_mlp=True, enable_moe_block=True,
        num_experts=3, top_k_experts=2, moe_intermediate_size=10, attention_k_eq_v=True,
        num_global_key_value_heads=1, experts_implementation="eager")),  # (with per-layer inputs: transformers runs
        # shared layers without them into its logits_to_keep slicing their None)
    "gemma4_text-whole-heads": ("Gemma4TextConfig", "Gemma4ForCausalLM", SMALL | dict(  # one head size, default rope
        num_hidden_layers=3, num_key_value_heads=4, head_dim=8, global_head_dim=8, sliding_window=5,
        hidden_size_per_layer_input=0, layer_types=["sliding_attention", "sliding_attention", "sliding_attention"],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}})),
    "gemma3n_text": ("Gemma3nTextConfig", "Gemma3nForCausalLM", SMALL | dict(  # AltUp's 4 streams, Laurel, MLPs of
        num_hidden_layers=4, num_key_value_heads=2, head_dim=8, intermediate_size=[40, 24, 40, 56],  # their own
        hidden_size_per_layer_input=6, vocab_size_per_layer_input=80, laurel_rank=5, sliding_window=4,  # widths
        num_kv_shared_layers=0, activation_sparsity_pattern=[0.95, 0.6, 0.0, 0.0], rms_norm_eps=1e-6,  # (ids past
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"])),  # 80: row 0)
    "gemma3n_text-gguf": ("Gemma3nTextConfig", "Gemma3nForCausalLM", SMALL | dict(  # a GGUF file's: no biases,
        num_hidden_layers=4, num_key_value_heads=2, head_dim=8, intermediate_size=[40, 24, 40, 56],  # the table
        hidden_size_per_layer_input=6, vocab_size_per_layer_input=97, laurel_rank=5, sliding_window=4,  # of V rows
        num_kv_shared_layers=0, activation_sparsity_pattern=[0.95, 0.6, 0.0, 0.0], rms_norm_eps=1e-6,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"])),
    "gemma3n_text-kv-shared-gguf": ("Gemma3nTextConfig", "Gemma3nForCausalLM", SMALL | dict(  # all sliding, the
        num_hidden_layers=4, num_key_value_heads=1, head_dim=8, hidden_size_per_layer_input=4,  # last 2 sharing
        vocab_size_per_layer_input=97, laurel_rank=3, sliding_window=3, num_kv_shared_layers=2,
        activation_sparsity_pattern=[0.9, 0.0, 0.0, 0.0], rope_local_base_freq=50.0)),
    "gemma3n_text-llama-cpp": ("Gemma3nTextConfig", "Gemma3nForCausalLM", SMALL | dict(  # the sizes llama.cpp's
        num_hidden_layers=4, num_key_value_heads=2, head_dim=8, hidden_size_per_layer_input=256,  # gemma3n fixes:
        vocab_size_per_layer_input=97, laurel_rank=64, altup_num_inputs=4, altup_active_idx=0, sliding_window=4,
        num_kv_shared_layers=0, activation_sparsity_pattern=[0.95] * 4, rms_norm_eps=1e-6)),  # 4 streams, rank 64
    "gemma3n_text-kv-shared": ("Gemma3nTextConfig", "Gemma3nForCausalLM", SMALL | dict(  # the last 3 reuse 1 and 2
        num_hidden_layers=6, num_key_value_heads=2, head_dim=8, hidden_size_per_layer_input=6,
        vocab_size_per_layer_input=97, laurel_rank=4, sliding_window=3, num_kv_shared_layers=3,
        activation_sparsity_pattern=[0.95, 0.95, 0.8, 0.0, 0.0, 0.0], attention_bias=True,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2)),
    "gemma3n_text-active-1-untied": ("Gemma3nTextConfig", "Gemma3nForCausalLM", SMALL | dict(  # stream 1 of 3
        num_hidden_layers=3, num_key_value_heads=1, head_dim=8, hidden_size_per_layer_input=4,  # active, all sliding
        vocab_size_per_layer_input=97, laurel_rank=3, altup_num_inputs=3, altup_active_idx=1, sliding_window=4,
        altup_correct_scale=False, num_kv_shared_layers=0, tie_word_embeddings=False, final_logit_softcapping=5.0,
        rope_theta=500.0, rope_local_base_freq=50.0)),
}  # fmt: skip
