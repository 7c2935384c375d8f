"""The 2026 families with experts routed as DeepSeek-V3 routes them, or near it (issue 44): their transformers
models for the conformance tests, as hf_models.py's MODELS (which holds these too)."""

from __future__ import annotations

from hf_small import SMALL

EXPERTS = {  # name: (config class, model class, config)
    "glm4_moe": ("Glm4MoeConfig", "Glm4MoeForCausalLM", SMALL | dict(  # DeepSeek-V3's routing under GQA
        num_hidden_layers=3, num_key_value_heads=2, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=6,
        n_shared_experts=1, first_k_dense_replace=1, n_group=4, topk_group=2, routed_scaling_factor=2.5,
        attention_bias=True, pad_token_id=None, experts_implementation="eager")),
    "glm4_moe-qk-norm": ("Glm4MoeConfig", "Glm4MoeForCausalLM", SMALL | dict(  # no dense layer, no shared expert
        num_key_value_heads=4, head_dim=12, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=6,
        n_shared_experts=0, first_k_dense_replace=0, use_qk_norm=True, norm_topk_prob=False,
        partial_rotary_factor=1.0, pad_token_id=None, experts_implementation="eager")),
    "glm4_moe_lite": ("Glm4MoeLiteConfig", "Glm4MoeLiteForCausalLM", SMALL | dict(  # latent attention, listed kinds
        num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=6,
        n_shared_experts=1, q_lora_rank=8, kv_lora_rank=10, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6,
        mlp_layer_types=["sparse", "dense", "sparse"], n_group=2, topk_group=1, pad_token_id=None,
        experts_implementation="eager")),
    "glm4_moe_lite-dense-first": ("Glm4MoeLiteConfig", "Glm4MoeLiteForCausalLM", SMALL | dict(  # as published
        num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=6,
        n_shared_experts=1, q_lora_rank=8, kv_lora_rank=10, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6,
        mlp_layer_types=["dense", "sparse", "sparse"], n_group=2, topk_group=1, pad_token_id=None,
        experts_implementation="eager")),
    "dots1": ("Dots1Config", "Dots1ForCausalLM", SMALL | dict(  # Qwen3's attention, DeepSeek-V3's routing, windows
        num_hidden_layers=3, num_key_value_heads=2, head_dim=12, n_routed_experts=8, num_experts_per_tok=2,
        moe_intermediate_size=6, n_shared_experts=2, first_k_dense_replace=1, n_group=2, topk_group=1,
        norm_topk_prob=True, routed_scaling_factor=1.5, sliding_window=4, max_window_layers=1, attention_bias=True,
        experts_implementation="eager")),
    "dots1-gguf": ("Dots1Config", "Dots1ForCausalLM", SMALL | dict(  # no window (the GGUF holds none), groups
        num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=6,
        n_shared_experts=2, first_k_dense_replace=1, n_group=2, topk_group=1, norm_topk_prob=True,
        routed_scaling_factor=1.5, attention_bias=True, experts_implementation="eager")),
    "dots1-layer-types": ("Dots1Config", "Dots1ForCausalLM", SMALL | dict(  # every layer routed, unrenormalised
        num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=3, moe_intermediate_size=6,
        n_shared_experts=1,
        sliding_window=3, layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        tie_word_embeddings=True, experts_implementation="eager")),
    "solar_open": ("SolarOpenConfig", "SolarOpenForCausalLM", SMALL | dict(  # GLM-4.5's routing in every layer
        num_key_value_heads=2, head_dim=12, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=6,
        n_shared_experts=1, n_group=2, topk_group=1, routed_scaling_factor=2.0, attention_bias=True,
        pad_token_id=None, experts_implementation="eager")),
    "solar_open-gguf": ("SolarOpenConfig", "SolarOpenForCausalLM", SMALL | dict(  # as the hub's: whole heads said
        num_key_value_heads=2, head_dim=12, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=6,
        intermediate_size=6, n_shared_experts=1, n_group=2, topk_group=1, routed_scaling_factor=2.0,
        attention_bias=True, rope_parameters={"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 1.0},
        pad_token_id=None, experts_implementation="eager")),
    "solar_open-unrenormalised": ("SolarOpenConfig", "SolarOpenForCausalLM", SMALL | dict(  # (two keys it ignores)
        num_key_value_heads=4, head_dim=8, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=6,
        n_shared_experts=2, norm_topk_prob=False, first_k_dense_replace=1, use_qk_norm=True, pad_token_id=None,
        tie_word_embeddings=True, experts_implementation="eager")),
    "exaone_moe": ("ExaoneMoeConfig", "ExaoneMoeForCausalLM", SMALL | dict(  # three sliding to one full (NoPE)
        num_hidden_layers=4, num_key_value_heads=2, head_dim=8, sliding_window=5, num_experts=8, num_experts_per_tok=2,
        moe_intermediate_size=6, num_shared_experts=2, n_group=2, topk_group=1, pad_token_id=None,
        experts_implementation="eager")),
    "exaone_moe-listed": ("ExaoneMoeConfig", "ExaoneMoeForCausalLM", SMALL | dict(  # both kinds listed
        num_hidden_layers=3, num_key_value_heads=4, sliding_window=3, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=6, num_shared_experts=1, norm_topk_prob=False, routed_scaling_factor=1.0,
        layer_types=["full_attention", "sliding_attention", "full_attention"],
        mlp_layer_types=["sparse", "dense", "sparse"], pad_token_id=None, experts_implementation="eager")),
    "minimax_m2": ("MiniMaxM2Config", "MiniMaxM2ForCausalLM", SMALL | dict(  # sigmoid routing, norms over all heads
        num_key_value_heads=2, head_dim=12, rotary_dim=8, num_local_experts=4, num_experts_per_tok=2,
        pad_token_id=None, experts_implementation="eager")),
    "minimax_m2-whole-heads": ("MiniMaxM2Config", "MiniMaxM2ForCausalLM", SMALL | dict(  # (keys it ignores)
        num_key_value_heads=4, head_dim=8, num_local_experts=3, num_experts_per_tok=3, use_qk_norm=False,
        routed_scaling_factor=2.0, tie_word_embeddings=True, pad_token_id=None, experts_implementation="eager")),
    "ernie4_5_moe": ("Ernie4_5_MoeConfig", "Ernie4_5_MoeForCausalLM", SMALL | dict(  # softmax + correction bias
        num_hidden_layers=3, num_key_value_heads=2, moe_num_experts=8, moe_k=2, moe_intermediate_size=6,
        moe_num_shared_experts=2, pad_token_id=None, experts_implementation="eager")),
    "ernie4_5_moe-interval": ("Ernie4_5_MoeConfig", "Ernie4_5_MoeForCausalLM", SMALL | dict(  # every other layer
        num_hidden_layers=4, num_key_value_heads=4, head_dim=12, moe_num_experts=4, moe_k=3, moe_intermediate_size=6,
        moe_num_shared_experts=0, moe_layer_start_index=0, moe_layer_end_index=2, moe_layer_interval=2,
        partial_rotary_factor=0.5, tie_word_embeddings=False, pad_token_id=None, experts_implementation="eager")),
    "ernie4_5_moe-dense-biases": ("Ernie4_5_MoeConfig", "Ernie4_5_MoeForCausalLM", SMALL | dict(  # no routed layer
        num_key_value_heads=2, use_bias=True, moe_layer_start_index=2, pad_token_id=None)),
    "youtu": ("YoutuConfig", "YoutuForCausalLM", SMALL | dict(  # latent attention, dense, tied
        num_key_value_heads=4, q_lora_rank=8, kv_lora_rank=10, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6,
        pad_token_id=None, bos_token_id=None, eos_token_id=None)),
    "youtu-plain-queries": ("YoutuConfig", "YoutuForCausalLM", SMALL | dict(  # q_proj, halves turned, untied
        num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=10, qk_nope_head_dim=6, qk_rope_head_dim=6,
        v_head_dim=8, rope_interleave=False, tie_word_embeddings=False, attention_bias=True, pad_token_id=None,
        bos_token_id=None, eos_token_id=None)),
    "hy_v3": ("HYV3Config", "HYV3ForCausalLM", SMALL | dict(  # sigmoid routing scaled, per-head norms, a dense first
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, num_experts=8, num_experts_per_tok=2,
        moe_intermediate_size=6, num_shared_experts=2, attention_bias=True, pad_token_id=None,
        experts_implementation="eager")),
    "hy_v3-gguf": ("HYV3Config", "HYV3ForCausalLM", SMALL | dict(  # (llama.cpp's hy_v3 applies no output bias)
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, num_experts=8, num_experts_per_tok=2,
        moe_intermediate_size=6, num_shared_experts=2, pad_token_id=None, experts_implementation="eager")),
    "hy_v3-listed-no-shared": ("HYV3Config", "HYV3ForCausalLM", SMALL | dict(  # 0 shared: one of intermediate_size
        num_hidden_layers=3, num_key_value_heads=4, head_dim=12, num_experts=4, num_experts_per_tok=3,
        moe_intermediate_size=6, num_shared_experts=0, router_scaling_factor=1.0,
        mlp_layer_types=["sparse", "dense", "sparse"], tie_word_embeddings=True, pad_token_id=None,
        experts_implementation="eager")),
    "cohere2_moe": ("Cohere2MoeConfig", "Cohere2MoeForCausalLM", SMALL | dict(  # averaged shared expert, dense first
        num_hidden_layers=4, num_key_value_heads=2, head_dim=8, sliding_window=5, num_experts=4, num_experts_per_tok=2,
        num_shared_experts=1, logit_scale=0.5, pad_token_id=None, bos_token_id=None, eos_token_id=None,
        layer_types=["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
        mlp_layer_types=["dense", "sparse", "sparse", "sparse"], prefix_dense_intermediate_size=24,
        experts_implementation="eager", rms_norm_eps=None)),
    "cohere2_moe-gguf": ("Cohere2MoeConfig", "Cohere2MoeForCausalLM", SMALL | dict(  # (llama.cpp's: one width)
        num_hidden_layers=4, num_key_value_heads=2, head_dim=8, sliding_window=5, num_experts=4, num_experts_per_tok=2,
        num_shared_experts=1, logit_scale=0.5, pad_token_id=None, bos_token_id=None, eos_token_id=None,
        layer_types=["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
        mlp_layer_types=["dense", "sparse", "sparse", "sparse"], experts_implementation="eager", rms_norm_eps=None)),
    "cohere2_moe-sigmoid-rms-gguf": ("Cohere2MoeConfig", "Cohere2MoeForCausalLM", SMALL | dict(
        num_hidden_layers=3, num_key_value_heads=4, head_dim=8, sliding_window=4, num_experts=3, num_experts_per_tok=2,
        expert_selection_fn="sigmoid", rms_norm_eps=1e-5, layer_types=["sliding_attention", "full_attention",
        "sliding_attention"], mlp_layer_types=["sparse", "sparse", "sparse"], pad_token_id=None, bos_token_id=None,
        eos_token_id=None, experts_implementation="eager")),
    "cohere2_moe-sigmoid-rms-sum": ("Cohere2MoeConfig", "Cohere2MoeForCausalLM", SMALL | dict(
        num_hidden_layers=3, num_key_value_heads=4, head_dim=8, sliding_window=4, num_experts=3, num_experts_per_tok=2,
        num_shared_experts=2, shared_expert_combination_strategy="sum", expert_selection_fn="sigmoid",
        rms_norm_eps=1e-5, attention_bias=True, prefix_dense_sliding_window_pattern=2,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        mlp_layer_types=["dense", "sparse", "sparse"], pad_token_id=None, bos_token_id=None, eos_token_id=None,
        experts_implementation="eager")),
    "afmoe": ("AfmoeConfig", "AfmoeForCausalLM", SMALL | dict(  # gated attention, sandwich norms, sigmoid routing
        num_hidden_layers=4, num_key_value_heads=2, head_dim=8, sliding_window=5, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=6, num_shared_experts=1, route_scale=2.0, experts_implementation="eager")),
    "afmoe-gguf": ("AfmoeConfig", "AfmoeForCausalLM", SMALL | dict(  # as Trinity's: MuP, three sliding in four
        num_hidden_layers=4, num_key_value_heads=2, head_dim=8, sliding_window=5, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=6, num_shared_experts=1, route_scale=2.0, mup_enabled=True,
        experts_implementation="eager")),
    "afmoe-all-full-mup": ("AfmoeConfig", "AfmoeForCausalLM", SMALL | dict(  # no layer slides: none turns
        num_hidden_layers=3, num_key_value_heads=4, head_dim=12, global_attn_every_n_layers=1, num_experts=3,
        num_experts_per_tok=2, moe_intermediate_size=6, num_shared_experts=0, num_dense_layers=2, mup_enabled=True,
        attention_bias=True, experts_implementation="eager")),
    "mistral4-gguf": ("Mistral4Config", "Mistral4ForCausalLM", SMALL | dict(  # one group, as Mistral Small 4
        num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=6,
        n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=8, kv_lora_rank=10, qk_nope_head_dim=8,
        qk_rope_head_dim=4, v_head_dim=6, routed_scaling_factor=1.5, pad_token_id=None,
        rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=4.0, original_max_position_embeddings=4,
                             beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0, llama_4_scaling_beta=0.3,
                             partial_rotary_factor=1 / 3), experts_implementation="eager")),
    "mistral4": ("Mistral4Config", "Mistral4ForCausalLM", SMALL | dict(  # latent attention, Llama 4's query scale
        num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=6,
        n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=8, kv_lora_rank=10, qk_nope_head_dim=8,
        qk_rope_head_dim=4, v_head_dim=6, n_group=2, topk_group=1, routed_scaling_factor=1.5, pad_token_id=None,
        rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=4.0, original_max_position_embeddings=4,
                             beta_fast=32.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0, llama_4_scaling_beta=0.3,
                             partial_rotary_factor=1 / 3),
        experts_implementation="eager")),
    "mistral4-plain-queries": ("Mistral4Config", "Mistral4ForCausalLM", SMALL | dict(  # q_proj, halves, no groups
        num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=6, n_shared_experts=2,
        q_lora_rank=None, kv_lora_rank=10, qk_nope_head_dim=6, qk_rope_head_dim=6, v_head_dim=8, rope_interleave=False,
        norm_topk_prob=False, pad_token_id=None, rope_parameters=dict(
            rope_type="yarn", rope_theta=100.0, factor=2.0, llama_4_scaling_beta=0.5,
            original_max_position_embeddings=3, partial_rotary_factor=0.5), experts_implementation="eager")),
    "dbrx": ("DbrxConfig", "DbrxForCausalLM", dict(  # clamped fused q, k, v; experts stacked on the rows
        vocab_size=97, d_model=32, n_heads=4, n_layers=2, max_seq_len=64,
        attn_config={"kv_n_heads": 2, "clip_qkv": 0.5, "rope_theta": 500000.0},
        ffn_config={"ffn_hidden_size": 8, "moe_num_experts": 4, "moe_top_k": 2},
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, experts_implementation="eager")),
    "dbrx-unnormalised-mha": ("DbrxConfig", "DbrxForCausalLM", dict(
        vocab_size=97, d_model=32, n_heads=4, n_layers=2, max_seq_len=64,
        attn_config={"kv_n_heads": 4, "clip_qkv": 8.0, "rope_theta": 10000.0},
        ffn_config={"ffn_hidden_size": 8, "moe_num_experts": 3, "moe_top_k": 2, "moe_normalize_expert_weights": None},
        experts_implementation="eager")),
    "laguna": ("LagunaConfig", "LagunaForCausalLM", SMALL | dict(  # softplus gate a head, a sliding layer turning all
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, layer_types=["full_attention", "sliding_attention",
        "full_attention"], sliding_window=4, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=6,
        shared_expert_intermediate_size=10, moe_routed_scaling_factor=2.0, experts_implementation="eager")),
    "laguna-gguf": ("LagunaConfig", "LagunaForCausalLM", SMALL | dict(  # llama.cpp's default kinds
        num_hidden_layers=4, num_key_value_heads=2, head_dim=8, layer_types=["full_attention", "sliding_attention",
        "sliding_attention", "sliding_attention"], sliding_window=4, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=6, shared_expert_intermediate_size=10, moe_routed_scaling_factor=2.0,
        experts_implementation="eager")),
    "laguna-per-entry-gguf": ("LagunaConfig", "LagunaForCausalLM", SMALL | dict(  # a gate an entry, tied
        num_hidden_layers=3, num_key_value_heads=4, head_dim=8, gating="per-element", num_experts=3,
        num_experts_per_tok=2, moe_intermediate_size=6, shared_expert_intermediate_size=8, sliding_window=3,
        layer_types=["full_attention", "sliding_attention", "sliding_attention"], mlp_layer_types=["dense", "sparse",
        "sparse"], tie_word_embeddings=True, rope_parameters={"full_attention": {"rope_type": "default", "rope_theta":
        100.0, "partial_rotary_factor": 0.25}, "sliding_attention": {"rope_type": "default", "rope_theta": 30.0}},
        experts_implementation="eager")),
    "laguna-per-entry-capped": ("LagunaConfig", "LagunaForCausalLM", SMALL | dict(  # a gate an entry, capped logits
        num_hidden_layers=3, num_key_value_heads=4, head_dim=8, gating="per-element", num_experts=3,
        num_experts_per_tok=2, moe_intermediate_size=6, shared_expert_intermediate_size=8,
        moe_router_logit_softcapping=0.2, mlp_layer_types=["sparse", "dense", "sparse"], attention_bias=True,
        tie_word_embeddings=True, rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 100.0,
        "partial_rotary_factor": 0.25}}, experts_implementation="eager")),
    "jetmoe": ("JetMoeConfig", "JetMoeForCausalLM", dict(  # 4 experts of 2 heads for q and o, 2 chosen; 4 MLPs
        vocab_size=97, hidden_size=32, num_hidden_layers=2, num_key_value_heads=2, kv_channels=8,
        intermediate_size=24, num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=64,
        experts_implementation="eager")),
    "jetmoe-untied-one-head": ("JetMoeConfig", "JetMoeForCausalLM", dict(  # kv heads of 12 wider than d / heads
        vocab_size=97, hidden_size=24, num_hidden_layers=3, num_key_value_heads=1, kv_channels=12,
        intermediate_size=20, num_local_experts=3, num_experts_per_tok=2, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 100.0}, experts_implementation="eager")),
    "mimo_v2_flash": ("MiMoV2FlashConfig", "MiMoV2FlashForCausalLM", SMALL | dict(  # values of 8, G doubled sliding
        num_hidden_layers=4, num_key_value_heads=1, head_dim=12, v_head_dim=8, sliding_window=4,
        moe_intermediate_size=6, n_routed_experts=4, num_experts_per_tok=2, experts_implementation="eager",
        attn_implementation="eager")),
    "mimo_v2_flash-gguf": ("MiMoV2FlashConfig", "MiMoV2FlashForCausalLM", SMALL | dict(  # what llama.cpp's mimo2 holds
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, v_head_dim=12, sliding_window=3,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"], mlp_layer_types=["sparse",
        "dense", "sparse"], moe_intermediate_size=6, n_routed_experts=8, num_experts_per_tok=2, n_group=4,
        topk_group=2, attention_value_scale=0.5, rope_parameters={"full_attention": {"rope_type": "default",
        "rope_theta": 1000.0, "partial_rotary_factor": 0.5}, "sliding_attention": {"rope_type": "default",
        "rope_theta": 50.0, "partial_rotary_factor": 0.5}}, experts_implementation="eager",
        attn_implementation="eager")),
    "mimo_v2_flash-groups-biased": ("MiMoV2FlashConfig", "MiMoV2FlashForCausalLM", SMALL | dict(  # 2 of 4 groups
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, v_head_dim=12, sliding_window=3,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"], attention_bias=True,
        mlp_layer_types=["sparse", "dense", "sparse"], moe_intermediate_size=6, n_routed_experts=8,
        num_experts_per_tok=2, n_group=4, topk_group=2, routed_scaling_factor=2.5, attention_value_scale=0.5,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000.0, "partial_rotary_factor":
        0.5}, "sliding_attention": {"rope_type": "default", "rope_theta": 50.0, "partial_rotary_factor": 1.0}},
        experts_implementation="eager", attn_implementation="eager")),
    "longcat_flash": ("LongcatFlashConfig", "LongcatFlashForCausalLM", dict(  # two blocks a layer, zero experts
        vocab_size=97, hidden_size=32, num_layers=2, num_attention_heads=4, ffn_hidden_size=40, q_lora_rank=16,
        kv_lora_rank=8, qk_nope_head_dim=6, qk_rope_head_dim=4, head_dim=4, v_head_dim=6, moe_topk=3,
        n_routed_experts=4, zero_expert_num=2, expert_ffn_hidden_size=6, routed_scaling_factor=2.0,
        max_position_embeddings=64, experts_implementation="eager")),
    "longcat_flash-yarn-no-zero": ("LongcatFlashConfig", "LongcatFlashForCausalLM", dict(  # biases, tied, YaRN
        vocab_size=97, hidden_size=32, num_layers=1, num_attention_heads=2, ffn_hidden_size=24, q_lora_rank=8,
        kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=8, head_dim=8, v_head_dim=16, moe_topk=2,
        n_routed_experts=3, zero_expert_num=0, expert_ffn_hidden_size=10, routed_scaling_factor=1.0,
        attention_bias=True, tie_word_embeddings=True, max_position_embeddings=64, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "yarn", "rope_theta": 1000.0, "factor": 4.0,
        "original_max_position_embeddings": 16, "mscale_all_dim": 1.0, "mscale": 1.0},
        experts_implementation="eager")),
}  # fmt: skip
