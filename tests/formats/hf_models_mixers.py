"""The conformance tests' models whose blocks mix their columns by more than attention (issue 45): LFM2's short
convolutions, each variant exercising a path (a bias, a longer kernel than the prompt, the MLP's adjusted width)."""

from __future__ import annotations

_LFM2 = dict(vocab_size=97, hidden_size=32, intermediate_size=60, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64, norm_eps=1e-5, block_multiple_of=8)  # fmt: skip

_MAMBA2 = dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_heads=4, head_dim=16, expand=2,
               state_size=8, n_groups=2, conv_kernel=4, chunk_size=4, residual_in_fp32=False,
               attn_implementation="eager")  # fmt: skip

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
}  # fmt: skip
