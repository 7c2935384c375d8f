"""The conformance tests' models whose blocks mix their columns by more than attention (issue 45): LFM2's short
convolutions, each variant exercising a path (a bias, a longer kernel than the prompt, the MLP's adjusted width)."""

from __future__ import annotations

_LFM2 = dict(vocab_size=97, hidden_size=32, intermediate_size=60, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64, norm_eps=1e-5, block_multiple_of=8)  # fmt: skip

_MAMBA2 = dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_heads=4, head_dim=16, expand=2,
               state_size=8, n_groups=2, conv_kernel=4, chunk_size=4, residual_in_fp32=False,
               attn_implementation="eager")  # fmt: skip

_BAMBA = dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=3, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=64, attn_layer_indices=[1], mamba_n_heads=4,
              mamba_d_state=8, mamba_n_groups=2, mamba_chunk_size=4, rms_norm_eps=1e-5)  # fmt: skip

_GRANITE_HYBRID = _BAMBA | dict(layer_types=["linear_attention", "full_attention", "linear_attention"],
                                num_local_experts=4, num_experts_per_tok=2, shared_intermediate_size=24,
                                embedding_multiplier=1.5, residual_multiplier=0.7, attention_multiplier=0.3,
                                logits_scaling=2.0, experts_implementation="eager", rms_norm_eps=1e-6)  # fmt: skip

_GRANITE_DENSE = _GRANITE_HYBRID | dict(
    num_local_experts=0,
    position_embedding_type="rope",  # the shared MLP alone
    layer_types=["full_attention", "linear_attention", "linear_attention"],
)

_MAMBA = dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, state_size=6, expand=2, conv_kernel=4,
              time_step_rank=3, residual_in_fp32=False, attn_implementation="eager")  # fmt: skip

_JAMBA = dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=4, num_attention_heads=4,
              num_key_value_heads=2, mamba_d_state=6, mamba_dt_rank=3, attn_layer_period=2, attn_layer_offset=1,
              expert_layer_period=2, expert_layer_offset=0, num_experts=4, num_experts_per_tok=2,
              experts_implementation="eager", use_mamba_kernels=False)  # fmt: skip

_QWEN_LINEAR = dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=4, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=8, max_position_embeddings=64, linear_num_key_heads=2,
                   linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=6, linear_conv_kernel_dim=4,
                   rms_norm_eps=1e-6, layer_types=["linear_attention", "full_attention"] * 2)  # fmt: skip

_LFM3 = dict(vocab_size=97, pad_token_id=0, bos_token_id=1, eos_token_id=2, hidden_size=32, intermediate_size=40,
             num_hidden_layers=6, num_attention_heads=4,
             num_key_value_heads=2, head_dim=8, max_position_embeddings=64, sliding_window=3, conv_L_cache=4,
             layer_types=["conv", "sliding_attention", "full_attention", "conv", "sliding_attention", "conv"],
             rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 500.0},
                              "full_attention": {"rope_type": "proportional", "rope_theta": 10000.0,
                                                 "partial_rotary_factor": 0.5}})  # fmt: skip

_NEMOTRON_H = dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_attention_heads=4, num_key_value_heads=2,
                   head_dim=8, max_position_embeddings=64, mamba_num_heads=4, mamba_head_dim=8, ssm_state_size=6,
                   n_groups=2, chunk_size=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=12,
                   moe_shared_expert_intermediate_size=16, routed_scaling_factor=1.5, experts_implementation="eager",
                   layers_block_type=["linear_attention", "moe", "full_attention", "mlp",
                                      "linear_attention"])  # fmt: skip

MIXERS = {  # name: (config class, model class, config)
    "lfm2": ("Lfm2Config", "Lfm2ForCausalLM", _LFM2 | dict(  # conv, conv, attention, conv; width int(40) -> 40
        layer_types=["conv", "conv", "full_attention", "conv"])),
    "lfm2-bias-long-kernel-untied": ("Lfm2Config", "Lfm2ForCausalLM", _LFM2 | dict(  # attention in block 1 alone,
        full_attn_idxs=[1], conv_bias=True, conv_L_cache=5, tie_word_embeddings=False,  # the width as given
        block_auto_adjust_ff_dim=False, rope_parameters=dict(rope_type="default", rope_theta=5000.0))),
    "lfm2-multiplier": ("Lfm2Config", "Lfm2ForCausalLM", _LFM2 | dict(  # 1.5 x int(2 x 60 / 3) = 60 -> 64
        block_ffn_dim_multiplier=1.5, layer_types=["full_attention", "conv", "conv", "full_attention"])),
    "lfm2_moe": ("Lfm2MoeConfig", "Lfm2MoeForCausalLM", _LFM2 | dict(  # 1 dense layer, then 6 experts, 2 chosen
        num_dense_layers=1, num_experts=6, num_experts_per_tok=2, moe_intermediate_size=12, routed_scaling_factor=1.5,
        experts_implementation="eager",
        layer_types=["conv", "full_attention", "conv", "conv"])),
    "lfm2_moe-unbiased-unnormalised": ("Lfm2MoeConfig", "Lfm2MoeForCausalLM", _LFM2 | dict(  # routed from block 0
        num_dense_layers=0, num_experts=5, num_experts_per_tok=3, moe_intermediate_size=12, use_expert_bias=False,
        norm_topk_prob=False, conv_bias=True, experts_implementation="eager",
        layer_types=["conv", "conv", "full_attention", "full_attention"])),
    "lfm2_moe-gguf": ("Lfm2MoeConfig", "Lfm2MoeForCausalLM", _LFM2 | dict(  # what llama.cpp's lfm2moe holds: scale
        num_dense_layers=2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12,  # 1, renormalised
        experts_implementation="eager", layer_types=["conv", "conv", "full_attention", "conv"])),
    "mamba2": ("Mamba2Config", "Mamba2ForCausalLM", _MAMBA2),  # 13 tokens: 4 chunks of 4, the last of 1
    "mamba2-biases-one-group-tied": ("Mamba2Config", "Mamba2ForCausalLM", _MAMBA2 | dict(  # the projections'
        n_groups=1, use_bias=True, use_conv_bias=False, tie_word_embeddings=True, conv_kernel=2, chunk_size=5)),
    "bamba": ("BambaConfig", "BambaForCausalLM", _BAMBA),  # mamba, attention, mamba
    "bamba-biases-tied": ("BambaConfig", "BambaForCausalLM", _BAMBA | dict(  # attention first and last, biases
        attn_layer_indices=[0, 2], mamba_proj_bias=True, mamba_conv_bias=False, mamba_d_conv=2, attention_bias=True,
        tie_word_embeddings=True, mamba_n_groups=1, mamba_expand=1, mlp_bias=True)),
    "granitemoehybrid": ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", _GRANITE_HYBRID),  # no rotary
    "granitemoehybrid-dense-rope": ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", _GRANITE_DENSE | dict(
        mamba_proj_bias=True)),  # the shared MLP alone
    "granitemoehybrid-narrow": ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", _GRANITE_HYBRID | dict(
        mamba_expand=1)),  # (a state space of d: not llama.cpp's)
    "granitemoehybrid-gguf": ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", _GRANITE_HYBRID | dict(
        vocab_size=96)),  # (the converter's vocabulary: a multiple of 8)
    "granitemoehybrid-dense-rope-gguf": ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", _GRANITE_DENSE | dict(
        attention_bias=True, vocab_size=96)),  # (no biases of the projections: llama.cpp's)
    "mamba2-gguf": ("Mamba2Config", "Mamba2ForCausalLM", _MAMBA2 | dict(vocab_size=96)),
    "mamba2-one-group-tied-gguf": ("Mamba2Config", "Mamba2ForCausalLM", _MAMBA2 | dict(  # what llama.cpp's
        n_groups=1, tie_word_embeddings=True, conv_kernel=2, chunk_size=5, vocab_size=96)),
    "mamba": ("MambaConfig", "MambaForCausalLM", _MAMBA),
    "mamba-biases-untied-auto-rank": ("MambaConfig", "MambaForCausalLM", _MAMBA | dict(  # rank ceil(32 / 16)
        use_bias=True, use_conv_bias=False, tie_word_embeddings=False, time_step_rank="auto", conv_kernel=2)),
    "mamba-saved-width": ("MambaConfig", "MambaForCausalLM", _MAMBA | dict(  # intermediate_size kept over expand's
        intermediate_size=40)),
    "falcon_mamba": ("FalconMambaConfig", "FalconMambaForCausalLM", _MAMBA | dict(mixer_rms_eps=1e-3)),
    "mamba-gguf": ("MambaConfig", "MambaForCausalLM", _MAMBA | dict(vocab_size=96, time_step_rank="auto")),
    "falcon_mamba-gguf": ("FalconMambaConfig", "FalconMambaForCausalLM", _MAMBA | dict(  # one eps, as llama.cpp's
        vocab_size=96, mixer_rms_eps=1e-5, layer_norm_epsilon=1e-5, tie_word_embeddings=False)),
    "jamba": ("JambaConfig", "JambaForCausalLM", _JAMBA),  # mamba+experts, attention+MLP, mamba+experts, ...
    "jamba-gguf": ("JambaConfig", "JambaForCausalLM", _JAMBA | dict(attn_layer_offset=0, expert_layer_offset=1)),
    "jamba-dense-biases": ("JambaConfig", "JambaForCausalLM", _JAMBA | dict(  # attention at 2 of 4, no experts
        attn_layer_period=4, attn_layer_offset=2, num_experts=1, mamba_proj_bias=True, mamba_conv_bias=False,
        mamba_dt_rank="auto", tie_word_embeddings=True)),
    "qwen3_next": ("Qwen3NextConfig", "Qwen3NextForCausalLM", _QWEN_LINEAR | dict(  # routed, a gated shared expert
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12, shared_expert_intermediate_size=16,
        norm_topk_prob=True, experts_implementation="eager", mlp_only_layers=[1])),
    "qwen3_next-gguf": ("Qwen3NextConfig", "Qwen3NextForCausalLM", _QWEN_LINEAR | dict(  # what llama.cpp's
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12, shared_expert_intermediate_size=16,
        norm_topk_prob=True, experts_implementation="eager", linear_value_head_dim=8)),  # qwen3next holds: experts
    # in every layer, value heads as wide as the key heads
    "qwen3_5_text": ("Qwen3_5TextConfig", "Qwen3_5ForCausalLM", _QWEN_LINEAR | dict(  # the default kinds
        layer_types=None, partial_rotary_factor=0.5)),
    "qwen3_5_moe_text": ("Qwen3_5MoeTextConfig", "Qwen3_5MoeForCausalLM", _QWEN_LINEAR | dict(
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12, shared_expert_intermediate_size=16,
        experts_implementation="eager", linear_num_key_heads=1, linear_conv_kernel_dim=3)),
    "qwen3_5_text-gguf": ("Qwen3_5TextConfig", "Qwen3_5ForCausalLM", _QWEN_LINEAR | dict(  # what llama.cpp's
        layer_types=None, partial_rotary_factor=0.5, linear_value_head_dim=8)),  # qwen35 holds: dk = dv
    "qwen3_5_moe_text-gguf": ("Qwen3_5MoeTextConfig", "Qwen3_5MoeForCausalLM", _QWEN_LINEAR | dict(
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12, shared_expert_intermediate_size=16,
        experts_implementation="eager", linear_value_head_dim=8)),
    "lfm3": ("Lfm3Config", "Lfm3ForCausalLM", _LFM3),  # a window of 3, its full layer's half turned
    "lfm3-pre-ungated-biases": ("Lfm3Config", "Lfm3ForCausalLM", _LFM3 | dict(  # the defaults' kinds, pre-norm
        layer_types=None, use_sandwich_norm=False, use_attention_gate=False, attention_bias=True, conv_bias=True,
        tie_word_embeddings=False)),
    "nemotron_h": ("NemotronHConfig", "NemotronHForCausalLM", _NEMOTRON_H),  # each kind of block
    "nemotron_h-groups-dense": ("NemotronHConfig", "NemotronHForCausalLM", _NEMOTRON_H | dict(  # 2 groups of 2,
        n_routed_experts=4, n_group=2, topk_group=1, use_bias=True, tie_word_embeddings=True,  # (never tied)
        layers_block_type=["full_attention", "moe", "linear_attention", "mlp"])),
    "nemotron_h-dense-gguf": ("NemotronHConfig", "NemotronHForCausalLM", _NEMOTRON_H | dict(  # what llama.cpp's
        layers_block_type=["linear_attention", "full_attention", "mlp", "linear_attention", "mlp"])),  # files hold
    "nemotron_h-moe-groups-gguf": ("NemotronHConfig", "NemotronHForCausalLM", _NEMOTRON_H | dict(
        n_routed_experts=8, num_experts_per_tok=3, n_group=2, topk_group=1, norm_topk_prob=False,
        layers_block_type=["linear_attention", "moe", "full_attention", "linear_attention", "moe"])),
}  # fmt: skip

_FALCON_H1 = dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=3, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=8, max_position_embeddings=64, mamba_d_ssm=32, mamba_n_heads=4,
                  mamba_d_state=6, mamba_n_groups=2, mamba_chunk_size=4, attention_in_multiplier=1.3,
                  key_multiplier=0.6, attention_out_multiplier=0.8, ssm_in_multiplier=1.25, ssm_out_multiplier=0.7,
                  ssm_multipliers=[0.35, 0.25, 0.7, 0.5, 1.4], mlp_multipliers=[0.88, 0.59],
                  embedding_multiplier=2.5, lm_head_multiplier=0.4, rms_norm_eps=1e-5)  # fmt: skip

_DSA = dict(vocab_size=97, hidden_size=32, intermediate_size=40, moe_intermediate_size=12, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, n_group=2,
            topk_group=1, kv_lora_rank=8, q_lora_rank=12, qk_rope_head_dim=4, qk_nope_head_dim=8, v_head_dim=6,
            index_n_heads=8, index_head_dim=8, index_topk=3, first_k_dense_replace=1, max_position_embeddings=64,
            experts_implementation="eager")  # fmt: skip

MIXERS |= {  # Falcon-H1: attention and Mamba-2 side by side, every multiplier other than 1
    "falcon_h1": ("FalconH1Config", "FalconH1ForCausalLM", _FALCON_H1),  # (no norm in the state space)
    "falcon_h1-norm-before-gate-biases-tied": ("FalconH1Config", "FalconH1ForCausalLM", _FALCON_H1 | dict(
        mamba_rms_norm=True, mamba_proj_bias=True, projectors_bias=True, attention_bias=True, mlp_bias=True,
        tie_word_embeddings=True, mamba_conv_bias=False, mamba_d_conv=2, mamba_n_groups=1)),
    "falcon_h1-norm-after-gate-tied-gguf": ("FalconH1Config", "FalconH1ForCausalLM", _FALCON_H1 | dict(  # (the
        mamba_rms_norm=True, mamba_norm_before_gate=False, tie_word_embeddings=True)),  # head held apart)
    "falcon_h1-norm-after-gate": ("FalconH1Config", "FalconH1ForCausalLM", _FALCON_H1 | dict(
        mamba_rms_norm=True, mamba_norm_before_gate=False, num_key_value_heads=4, head_dim=16,
        rope_parameters=dict(rope_type="default", rope_theta=5000.0))),
}  # fmt: skip

_KIMI = dict(vocab_size=97, hidden_size=32, intermediate_size=48, moe_intermediate_size=16, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=8, q_lora_rank=None, qk_rope_head_dim=4,
             v_head_dim=8, qk_nope_head_dim=8, n_group=2, topk_group=1, num_experts_per_tok=2, num_local_experts=8,
             pad_token_id=0, bos_token_id=1, eos_token_id=2, first_k_dense_replace=1, experts_implementation="eager",
             linear_attn_config={"head_dim": 8, "num_heads": 4, "short_conv_kernel_size": 4, "kda_layers": [1, 3, 4],
                                 "full_attn_layers": [2]})  # fmt: skip

MIXERS |= {  # Kimi-Linear: Kimi Delta Attention and latent attention without positions
    "kimi_linear": ("KimiLinearConfig", "KimiLinearForCausalLM", _KIMI),
    "kimi_linear-q-lora-default-kinds": ("KimiLinearConfig", "KimiLinearForCausalLM", _KIMI | dict(  # layer 4
        num_hidden_layers=5, q_lora_rank=16, n_group=1, norm_topk_prob=False, routed_scaling_factor=1.5,  # attends
        mlp_layer_types=["dense", "sparse", "dense", "sparse", "sparse"], linear_conv_kernel_dim=3,
        linear_attn_config={"head_dim": 8, "num_heads": 2, "short_conv_kernel_size": 3})),
}  # fmt: skip

_OLMO_HYBRID = dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=4, num_attention_heads=4,
                    max_position_embeddings=64, linear_num_key_heads=2, linear_num_value_heads=4,
                    linear_key_head_dim=8, linear_value_head_dim=6, linear_conv_kernel_dim=3, pad_token_id=0,
                    eos_token_id=2, bos_token_id=1)  # fmt: skip

MIXERS |= {  # OLMo-Hybrid: Gated DeltaNet blocks normalised before each sublayer, attention blocks after
    "olmo_hybrid": ("OlmoHybridConfig", "OlmoHybridForCausalLM", _OLMO_HYBRID),  # (the default kinds)
    "olmo_hybrid-nope-gqa-positive-beta": ("OlmoHybridConfig", "OlmoHybridForCausalLM", _OLMO_HYBRID | dict(
        rope_parameters={"rope_type": "default", "rope_theta": None}, num_key_value_heads=2,
        linear_allow_neg_eigval=False, rms_norm_eps=1e-5,
        layer_types=["full_attention", "linear_attention", "linear_attention", "full_attention"])),
}  # fmt: skip

INDEXED = {  # DeepSeek Sparse Attention: a top-k below the prompt's length, so that the selection matters
    "deepseek_v32": ("DeepseekV32Config", "DeepseekV32ForCausalLM", _DSA),
    "deepseek_v32-yarn-wide-index-listed": ("DeepseekV32Config", "DeepseekV32ForCausalLM", _DSA | dict(
        index_head_dim=12, index_topk=5, attention_bias=True, mlp_layer_types=["sparse", "dense", "sparse"],
        rope_parameters=dict(rope_type="yarn", rope_theta=5000.0, factor=4.0, original_max_position_embeddings=16,
                             mscale_all_dim=1.0, mscale=1.0))),
    "glm_moe_dsa": ("GlmMoeDsaConfig", "GlmMoeDsaForCausalLM", _DSA | dict(n_group=1, topk_group=1, index_topk=4)),
    "glm_moe_dsa-gguf": ("GlmMoeDsaConfig", "GlmMoeDsaForCausalLM", _DSA | dict(  # llama.cpp's indexer heads: a
        n_group=1, topk_group=1, index_head_dim=64, index_topk=4, rms_norm_eps=1e-6)),  # multiple of 64 (its
    # Hadamard rotation), and the latents' norms' eps (llama.cpp's: rms_norm_eps, transformers': 1e-6)
    "glm_moe_dsa-shared-gguf": ("GlmMoeDsaConfig", "GlmMoeDsaForCausalLM", _DSA | dict(  # as llama.cpp loads
        num_hidden_layers=4, index_topk_pattern="FSSF", n_group=1, topk_group=1, index_head_dim=64, rms_norm_eps=1e-6)),
    "glm_moe_dsa-shared": ("GlmMoeDsaConfig", "GlmMoeDsaForCausalLM", _DSA | dict(  # layers 1, 2 reuse layer 0's
        num_hidden_layers=4, index_topk_pattern="FSSF", n_group=1, topk_group=1)),
}  # fmt: skip

_HY_V4 = dict(vocab_size=97, hidden_size=32, intermediate_size=40, moe_intermediate_size=12, num_hidden_layers=6,
              num_attention_heads=4, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, n_group=2,
              topk_group=1, routed_scaling_factor=2.827, q_lora_rank=12, kv_lora_rank=8, qk_nope_head_dim=8,
              qk_rope_head_dim=4, v_head_dim=6, index_n_heads=8, index_head_dim=8, index_topk=5,
              mlp_layer_types=["dense", "dense", "sparse", "sparse", "sparse", "sparse"],
              indexer_types=["full", "full", "shared", "shared", "full", "shared"], hc_mult=3, hc_magnitude=2.0,
              swiglu_limit=0.2, rms_norm_eps=1e-5, max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
              eos_token_id=2, attn_implementation="eager",
              experts_implementation="eager")  # fmt: skip

INDEXED |= {  # HY-V4: DSA with sinks, gates, half-split rotary, hyper-connections' streams, clamped experts
    "hy_v4": ("HYV4Config", "HYV4ForCausalLM", _HY_V4 | dict(  # (the clamp cuts about half the experts' entries)
        rope_parameters=dict(rope_type="yarn", rope_theta=5000.0, factor=4.0, original_max_position_embeddings=16,
                             mscale_all_dim=1.0, mscale=1.0))),
    "hy_v4-defaults-kinds": ("HYV4Config", "HYV4ForCausalLM", _HY_V4 | dict(  # HYV4Config's layer kinds: layers 0,
        mlp_layer_types=None, indexer_types=None, hc_mult=2, hc_magnitude=1.5, swiglu_limit=3.0,  # 1 and 5 their
        n_group=1, topk_group=1, tie_word_embeddings=True, num_key_value_heads=2)),  # own indexers; a tied head
}  # fmt: skip

_ZAMBA2 = dict(vocab_size=97, hidden_size=16, num_hidden_layers=7, num_attention_heads=4, intermediate_size=24,
               mamba_d_state=6, mamba_d_conv=3, mamba_expand=2, mamba_ngroups=2, n_mamba_heads=4, chunk_size=5,
               layers_block_type=["mamba", "hybrid", "mamba", "hybrid", "hybrid", "mamba", "hybrid"],
               num_mem_blocks=2, adapter_rank=3, max_position_embeddings=64, pad_token_id=0)  # fmt: skip

MIXERS |= {  # Zamba2: Mamba-2 layers, its hybrid ones after a shared transformer block on [h; embeddings]
    "zamba2": ("Zamba2Config", "Zamba2ForCausalLM", _ZAMBA2 | dict(  # 4 uses of 2 blocks, every adapter, rotary
        use_shared_attention_adapter=True, use_mem_rope=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    "zamba2-one-block-gqa-nope-biases": ("Zamba2Config", "Zamba2ForCausalLM", _ZAMBA2 | dict(  # (no positions)
        num_mem_blocks=1, num_key_value_heads=2, add_bias_linear=True, hidden_act="silu", rms_norm_eps=1e-2)),
}  # fmt: skip

_GLM5_NEXT = dict(vocab_size=97, hidden_size=32, intermediate_size=48, moe_intermediate_size=16, num_hidden_layers=5,
                  num_attention_heads=2, num_key_value_heads=2, n_routed_experts=4, num_experts_per_tok=2, n_group=2,
                  topk_group=1,
                  routed_scaling_factor=2.5, q_lora_rank=16, kv_lora_rank=8, qk_rope_head_dim=0, qk_nope_head_dim=8,
                  v_head_dim=8, index_n_heads=16, index_head_dim=8, index_topk=6, index_kpool=3, linear_num_heads=2,
                  linear_head_dim=8, linear_conv_kernel_dim=4, hc_mult=3, swiglu_limit=0.5, rms_norm_eps=1e-5,
                  pad_token_id=0, experts_implementation="eager")  # fmt: skip

INDEXED |= {  # GLM-5-Next: KDA between latent attention over pools of keys, hyper-connections, every SwiGLU clamped
    "glm5_next_text": ("Glm5NextTextConfig", "Glm5NextTextModel", _GLM5_NEXT | dict(  # layer 2 reuses layer 1's
        layer_types=["linear_attention", "indexed_attention", "indexed_attention", "linear_attention",
                     "indexed_attention"], indexer_types=["full", "full", "shared", "full", "full"],
        mlp_layer_types=["dense", "sparse", "sparse", "dense", "sparse"])),
    "glm5_next_text-kimi-decay-biases-default-kinds": ("Glm5NextTextConfig", "Glm5NextTextModel", _GLM5_NEXT | dict(
        num_hidden_layers=4, linear_lower_bound=None, attention_bias=True, v_head_dim=6, hc_mult=2,
        norm_topk_prob=False)),  # (linear, linear, linear, indexed; three dense layers, one routed)
}  # fmt: skip

_ML4 = dict(vocab_size=97, hidden_size=32, intermediate_size=40, moe_intermediate_size=12, num_hidden_layers=8,
            num_attention_heads=4, num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, n_group=2,
            topk_group=1, n_shared_experts=1, routed_scaling_factor=1.5, kv_lora_rank=8, qk_rope_head_dim=4,
            qk_nope_head_dim=8, v_head_dim=6, index_n_heads=8, index_head_dim=8, index_topk=5, rms_norm_eps=1e-5,
            max_position_embeddings=64, mlp_layer_types=["dense", "dense"] + ["sparse"] * 6,
            no_rope_layers=[1, 1, 0, 0, 1, 1, 0, 1],
            indexer_types=["full", "shared", "full", "full", "full", "shared", "shared", "full"],
            rope_parameters=dict(rope_type="yarn", rope_theta=5000.0, factor=4.0, original_max_position_embeddings=16,
                                 beta_fast=32.0, beta_slow=1.0, attention_factor=1.0),
            experts_implementation="eager")  # fmt: skip

INDEXED |= {  # Mistral Large 4's text model: GLM-5's DSA without the bottleneck, NoPE layers, learned temperatures
    "mistral_large4_text": ("MistralLarge4TextConfig", "MistralLarge4TextModel", _ML4),
}  # fmt: skip

INDEXED |= {  # (layers reusing latents: layer 1 layer 0's, 3 (its own indexer) 2's NoPE ones, 5 4's; 6, 7 their own)
    "mistral_large4_text-reuse": ("MistralLarge4TextConfig", "MistralLarge4TextModel", _ML4 | dict(
        kv_source_layers=[0, 0, 2, 2, 4, 4, 6, 7])),
}  # fmt: skip

_QWEN4 = dict(vocab_size=97, hidden_size=32, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
              head_dim=8, rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.5),
              layer_types=["linear_attention", "indexed_attention", "linear_attention", "indexed_attention"],
              linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=6,
              linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12,
              shared_expert_intermediate_size=16, hc_count=3, hc_lowrank=8, indexer_n_heads=8, indexer_kv_heads=1,
              indexer_head_dim=8, indexer_budget=4, indexer_compress_ratio=2, eos_token_id=2, pad_token_id=0,
              bos_token_id=1, rms_norm_eps=1e-6, experts_implementation="eager")  # fmt: skip

MIXERS |= {  # Qwen4-Exp's text model: Qwen3.5-MoE with gated hyper-connections and a block indexer (no n-grams)
    "qwen4_exp_text": ("Qwen4ExpTextConfig", "Qwen4ExpForCausalLM", _QWEN4),  # (2 blocks of 2 kept, and a tail)
    "qwen4_exp_text-ngrams": ("Qwen4ExpTextConfig", "Qwen4ExpForCausalLM", _QWEN4 | dict(  # (layers 1 and 3: tables
        ple_layer_ids=[1, 3], ple_embed_dim=16, ple_conv_kernel_size=3, ngram_size=3, heads_per_ngram=2,  # of 2 and
        ngram_vocab_size_base=50, make_ngram_vocab_size_divisible_by=8, seed=1234)),  # 2 heads, their own primes)
    "qwen4_exp_text-sigmoid-unnormalised-whole-rotary": ("Qwen4ExpTextConfig", "Qwen4ExpForCausalLM", _QWEN4 | dict(
        output_gate_type="sigmoid", norm_topk_prob=False, rope_parameters=None, indexer_budget=6,
        indexer_compress_ratio=3, tie_word_embeddings=True)),
}  # fmt: skip

_DSV4 = dict(vocab_size=97, hidden_size=32, moe_intermediate_size=16, num_hidden_layers=4, num_attention_heads=4,
             head_dim=16, q_lora_rank=12, partial_rotary_factor=0.5, num_experts_per_tok=2, n_routed_experts=4,
             routed_scaling_factor=1.5, rope_theta=10000.0, compress_rope_theta=160000.0, hc_mult=3,
             hc_sinkhorn_iters=4, swiglu_limit=0.5, sliding_window=4, o_groups=2, o_lora_rank=6, index_n_heads=8,
             index_head_dim=12, index_topk=2, rms_norm_eps=1e-6, max_position_embeddings=64,
             attn_implementation="eager", experts_implementation="eager")  # fmt: skip

INDEXED |= {  # DeepSeek-V4: one key = value head, a window, pooled entries (all, or an indexer's), hashed experts
    "deepseek_v4": ("DeepseekV4Config", "DeepseekV4ForCausalLM", _DSV4 | dict(  # (CSA: 6 entries, 2 chosen)
        layer_types=["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention",
                     "compressed_sparse_attention"], mlp_layer_types=["hash_moe", "moe", "moe", "moe"],
        compress_rates={"compressed_sparse_attention": 2, "heavily_compressed_attention": 4},
        rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8})),
    "deepseek_v4-defaults-kinds-sigmoid-tied": ("DeepseekV4Config", "DeepseekV4ForCausalLM", _DSV4 | dict(
        num_hidden_layers=5, scoring_func="sigmoid", tie_word_embeddings=True, o_groups=1, sliding_window=5,
        compress_rates={"compressed_sparse_attention": 3, "heavily_compressed_attention": 5})),  # (HCA, HCA,
    # CSA, HCA, CSA; three hashed layers)
}  # fmt: skip
