"""The Hugging Face models the conformance tests build with transformers: every supported model_type and its layout
variants, small (d = 32, two blocks, 97 tokens) so that a float64 pass takes milliseconds. Each entry is (config
class, model class, config keys); helpers_hf_transformers.py's `build` makes the model, random in every parameter."""

from __future__ import annotations

from hf_models_dense import DENSE
from hf_models_experts import EXPERTS
from hf_models_mixers import INDEXED, MIXERS
from hf_small import SMALL

MODELS = {  # name: (config class, model class, config) — every model_type and its layout variants
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(vocab_size=97, n_embd=32, n_layer=2, n_head=4, n_positions=64)),
    "gpt2-untied": ("GPT2Config", "GPT2LMHeadModel", dict(vocab_size=97, n_embd=32, n_layer=2, n_head=4,
                                                         n_positions=64, n_inner=36, tie_word_embeddings=False)),
    "bert": ("BertConfig", "BertModel", dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                             intermediate_size=40, max_position_embeddings=64)),
    "roberta": ("RobertaConfig", "RobertaModel", dict(vocab_size=97, hidden_size=32, num_hidden_layers=2,
                                                      num_attention_heads=4, intermediate_size=40, pad_token_id=1,
                                                      max_position_embeddings=66, type_vocab_size=1,
                                                      layer_norm_eps=1e-5)),
    "xlm-roberta-pad-3": ("XLMRobertaConfig", "XLMRobertaModel", dict(vocab_size=97, hidden_size=32,
                                                                      num_hidden_layers=2, num_attention_heads=4,
                                                                      intermediate_size=40, pad_token_id=3,
                                                                      max_position_embeddings=40)),
    "camembert": ("CamembertConfig", "CamembertModel", dict(vocab_size=97, hidden_size=32, num_hidden_layers=2,
                                                            num_attention_heads=4, intermediate_size=40,
                                                            max_position_embeddings=66, type_vocab_size=1)),
    "roberta-prelayernorm": ("RobertaPreLayerNormConfig", "RobertaPreLayerNormModel", dict(
        vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
        max_position_embeddings=66, type_vocab_size=1, layer_norm_eps=1e-5)),
    "xlm-roberta-xl": ("XLMRobertaXLConfig", "XLMRobertaXLModel", dict(
        vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
        max_position_embeddings=66, layer_norm_eps=1e-5)),
    "distilbert": ("DistilBertConfig", "DistilBertModel", dict(vocab_size=97, dim=32, n_layers=2, n_heads=4,
                                                              hidden_dim=40, max_position_embeddings=64)),
    "distilbert-sinusoidal-relu": ("DistilBertConfig", "DistilBertModel", dict(
        vocab_size=97, dim=32, n_layers=2, n_heads=4, hidden_dim=40, max_position_embeddings=64,
        sinusoidal_pos_embds=True, activation="relu")),
    "gpt_neo-global-local": ("GPTNeoConfig", "GPTNeoForCausalLM", dict(
        vocab_size=97, hidden_size=32, num_layers=2, num_heads=4, max_position_embeddings=64, window_size=4,
        attention_types=[[["global", "local"], 1]], attn_implementation="eager")),  # (it has no SDPA)
    "gpt_neo-local-untied": ("GPTNeoConfig", "GPTNeoForCausalLM", dict(
        vocab_size=97, hidden_size=32, num_layers=2, num_heads=4, max_position_embeddings=64, window_size=3,
        attention_types=[[["local"], 2]], intermediate_size=40, tie_word_embeddings=False,
        attn_implementation="eager")),
    "llama": ("LlamaConfig", "LlamaForCausalLM", SMALL | dict(num_key_value_heads=2, rope_theta=10000.0)),
    "llama-mqa-tied-wide-heads": ("LlamaConfig", "LlamaForCausalLM",
                                  SMALL | dict(num_key_value_heads=1, head_dim=12, tie_word_embeddings=True,
                                               attention_bias=True, mlp_bias=True, intermediate_size=37)),
    "llama3-rope-scaling": ("LlamaConfig", "LlamaForCausalLM",
                            SMALL | dict(num_key_value_heads=4, rope_parameters=dict(
                                rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0,
                                high_freq_factor=4.0, original_max_position_embeddings=16))),
    "llama3-gguf": ("LlamaConfig", "LlamaForCausalLM",  # Llama 3.1's scaling with Meta's bands and context, as GGUF
                    SMALL | dict(num_key_value_heads=2, rope_parameters=dict(  # files hold it (rope_freqs)
                        rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0,
                        high_freq_factor=4.0, original_max_position_embeddings=8192))),
    "llama-rope-linear": ("LlamaConfig", "LlamaForCausalLM", SMALL | dict(
        num_key_value_heads=2, rope_parameters=dict(rope_type="linear", rope_theta=10000.0, factor=2.5))),
    "llama-rope-yarn": ("LlamaConfig", "LlamaForCausalLM",  # Qwen2.5's kind: past an original context of 8
                        SMALL | dict(num_key_value_heads=2, rope_parameters=dict(
                            rope_type="yarn", rope_theta=10000.0, factor=4.0, original_max_position_embeddings=8))),
    "llama-rope-yarn-mscale-untruncated": ("LlamaConfig", "LlamaForCausalLM",  # DeepSeek's mscale, gpt-oss's ramp
                                           SMALL | dict(num_key_value_heads=4, rope_parameters=dict(
                                               rope_type="yarn", rope_theta=500.0, factor=8.0, mscale=0.707,
                                               mscale_all_dim=1.0, beta_fast=16.0, beta_slow=2.0, truncate=False,
                                               original_max_position_embeddings=6))),
    "llama-rope-dynamic": ("LlamaConfig", "LlamaForCausalLM",  # the base grows past 8 positions
                           SMALL | dict(num_key_value_heads=2, max_position_embeddings=8, rope_parameters=dict(
                               rope_type="dynamic", rope_theta=10000.0, factor=3.0))),
    "mistral": ("MistralConfig", "MistralForCausalLM", SMALL | dict(num_key_value_heads=2, sliding_window=4)),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM",
                SMALL | dict(num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                             experts_implementation="eager")),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", SMALL | dict(num_key_value_heads=2)),
    "qwen2-sliding-some-layers": ("Qwen2Config", "Qwen2ForCausalLM",
                                  SMALL | dict(num_key_value_heads=2, num_hidden_layers=3, use_sliding_window=True,
                                               sliding_window=4, max_window_layers=1)),
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM",  # a shared expert; layer 1 dense (mlp_only_layers)
                  SMALL | dict(num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12,
                               shared_expert_intermediate_size=20, mlp_only_layers=[1],
                               experts_implementation="eager")),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM",  # renormalised top k, every other layer routed
                  SMALL | dict(num_key_value_heads=2, head_dim=8, num_hidden_layers=3, num_experts=4,
                               num_experts_per_tok=2, moe_intermediate_size=12, norm_topk_prob=True,
                               decoder_sparse_step=2, experts_implementation="eager")),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", SMALL | dict(num_key_value_heads=2, head_dim=8)),
    # GGUF-shaped variants: what a GGUF can hold (every layer routed; Gemma's scale and layer pattern as llama.cpp's)
    "qwen2_moe-all-routed": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM", SMALL | dict(
        num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12,
        shared_expert_intermediate_size=20, experts_implementation="eager")),
    "qwen3_moe-all-routed": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", SMALL | dict(
        num_key_value_heads=2, head_dim=8, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12,
        norm_topk_prob=True, experts_implementation="eager")),
    "gemma2-gguf": ("Gemma2Config", "Gemma2ForCausalLM", SMALL | dict(
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8, sliding_window=4,
        attn_logit_softcapping=2.0, final_logit_softcapping=3.0, attn_implementation="eager")),
    "gemma3-gguf": ("Gemma3TextConfig", "Gemma3ForCausalLM", SMALL | dict(  # five sliding layers to one full
        num_hidden_layers=6, num_key_value_heads=1, head_dim=12, query_pre_attn_scalar=12, sliding_window=5,
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e5},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 50.0}},
        attn_implementation="eager")),
    "qwen3-head-128": ("Qwen3Config", "Qwen3ForCausalLM", SMALL | dict(num_key_value_heads=2)),  # the class's head_dim
    "qwen3-layer_types": ("Qwen3Config", "Qwen3ForCausalLM",
                          SMALL | dict(num_key_value_heads=2, head_dim=8, num_hidden_layers=3, use_sliding_window=True,
                                       sliding_window=3, layer_types=["sliding_attention", "full_attention",
                                                                      "sliding_attention"])),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", SMALL | dict(num_key_value_heads=2)),
    "deepseek_v3": ("DeepseekV3Config", "DeepseekV3ForCausalLM",  # latent attention, sigmoid routing in groups
                    SMALL | dict(num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2,
                                 moe_intermediate_size=6, n_shared_experts=2, first_k_dense_replace=1, q_lora_rank=8,
                                 kv_lora_rank=10, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6, n_group=4,
                                 topk_group=1, experts_implementation="eager")),
    "deepseek_v3-gguf": ("DeepseekV3Config", "DeepseekV3ForCausalLM",  # V3's config.json names its router's score
                         SMALL | dict(num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=8,
                                      num_experts_per_tok=2, moe_intermediate_size=6, n_shared_experts=2,
                                      first_k_dense_replace=1, q_lora_rank=8, kv_lora_rank=10, qk_nope_head_dim=8,
                                      qk_rope_head_dim=4, v_head_dim=6, n_group=4, topk_group=1,
                                      scoring_func="sigmoid", experts_implementation="eager")),
    "deepseek_v3-gguf-yarn": ("DeepseekV3Config", "DeepseekV3ForCausalLM",  # V3's YaRN with mscale_all_dim
                              SMALL | dict(num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=8,
                                           num_experts_per_tok=2, moe_intermediate_size=6, n_shared_experts=2,
                                           first_k_dense_replace=1, q_lora_rank=8, kv_lora_rank=10,
                                           qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6, n_group=4,
                                           topk_group=1, scoring_func="sigmoid", experts_implementation="eager",
                                           rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=4.0,
                                                                original_max_position_embeddings=8, mscale=0.8,
                                                                mscale_all_dim=0.8, beta_fast=32.0,
                                                                beta_slow=1.0))),
    "deepseek_v2": ("DeepseekV2Config", "DeepseekV2ForCausalLM",  # no query bottleneck, group-limited greedy
                    SMALL | dict(num_hidden_layers=3, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2,
                                 moe_intermediate_size=6, n_shared_experts=2, first_k_dense_replace=1, q_lora_rank=None,
                                 kv_lora_rank=10, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6, n_group=4,
                                 topk_group=1, topk_method="group_limited_greedy", routed_scaling_factor=1.5,
                                 experts_implementation="eager")),
    "gpt_oss": ("GptOssConfig", "GptOssForCausalLM",  # sinks, biased experts, sliding and full layers, YaRN
                SMALL | dict(intermediate_size=12, num_key_value_heads=2, head_dim=8, num_local_experts=4,
                             num_experts_per_tok=2, sliding_window=4, swiglu_limit=0.2, attn_implementation="eager",
                             experts_implementation="eager", rope_parameters=dict(
                                 rope_type="yarn", rope_theta=150000.0, factor=4.0, beta_fast=32.0, beta_slow=1.0,
                                 truncate=False, original_max_position_embeddings=8))),
    "gpt_oss-gguf": ("GptOssConfig", "GptOssForCausalLM",  # the clamp llama.cpp hard-codes (7), no other
                     SMALL | dict(intermediate_size=12, num_key_value_heads=2, head_dim=8, num_local_experts=4,
                                  num_experts_per_tok=2, sliding_window=4, attn_implementation="eager",
                                  experts_implementation="eager", rope_parameters=dict(
                                      rope_type="yarn", rope_theta=150000.0, factor=4.0, beta_fast=32.0,
                                      beta_slow=1.0, truncate=False, original_max_position_embeddings=8))),
    "gptj": ("GPTJConfig", "GPTJForCausalLM", dict(vocab_size=97, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
                                                   n_positions=64, n_inner=40, attn_implementation="eager")),
    "gptj-gguf": ("GPTJConfig", "GPTJForCausalLM", dict(vocab_size=97, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
                                                        n_positions=64, attn_implementation="eager")),  # 4 d
    "opt": ("OPTConfig", "OPTForCausalLM", dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, ffn_dim=40,
                                                num_attention_heads=4, max_position_embeddings=64)),
    "opt-post-norm-untied": ("OPTConfig", "OPTForCausalLM", dict(
        vocab_size=97, hidden_size=32, num_hidden_layers=2, ffn_dim=40, num_attention_heads=4,
        max_position_embeddings=64, do_layer_norm_before=False, tie_word_embeddings=False)),
    "opt-350m-projected": ("OPTConfig", "OPTForCausalLM", dict(  # OPT-350m's kind: a narrower embedding, post-norm
        vocab_size=97, hidden_size=32, num_hidden_layers=2, ffn_dim=40, num_attention_heads=4, word_embed_proj_dim=12,
        max_position_embeddings=64, do_layer_norm_before=False)),
    "opt-projected-pre-untied": ("OPTConfig", "OPTForCausalLM", dict(  # the final norm, then project_out
        vocab_size=97, hidden_size=32, num_hidden_layers=2, ffn_dim=40, num_attention_heads=4, word_embed_proj_dim=12,
        max_position_embeddings=64, tie_word_embeddings=False)),
    "bloom": ("BloomConfig", "BloomForCausalLM", dict(vocab_size=97, hidden_size=32, n_layer=2, n_head=4,
                                                      attn_implementation="eager")),
    "bloom-6-heads": ("BloomConfig", "BloomForCausalLM", dict(vocab_size=97, hidden_size=36, n_layer=2, n_head=6,
                                                              attn_implementation="eager")),
    "starcoder2": ("Starcoder2Config", "Starcoder2ForCausalLM", SMALL | dict(num_key_value_heads=2, sliding_window=5,
                                                                              norm_epsilon=1e-5)),
    "starcoder2-no-window": ("Starcoder2Config", "Starcoder2ForCausalLM", SMALL | dict(  # (a GGUF holds no window)
        num_key_value_heads=2, norm_epsilon=1e-5)),
    "olmo3": ("Olmo3Config", "Olmo3ForCausalLM", SMALL | dict(  # three sliding layers to one full
        num_hidden_layers=4, num_key_value_heads=2, sliding_window=5)),
    "olmo3-yarn": ("Olmo3Config", "Olmo3ForCausalLM", SMALL | dict(  # the full layers scaled, the sliding own base
        num_hidden_layers=4, num_key_value_heads=2, sliding_window=5,
        rope_parameters={"full_attention": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4,
                                            "original_max_position_embeddings": 16},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 50.0}})),
    "olmo3-flat-theta": ("Olmo3Config", "Olmo3ForCausalLM", SMALL | dict(  # rope_theta turns the full layers only
        num_hidden_layers=4, sliding_window=5, rope_theta=100.0)),
    "olmo3-all-full": ("Olmo3Config", "Olmo3ForCausalLM", SMALL | dict(
        num_hidden_layers=2, layer_types=["full_attention"] * 2)),
    "seed_oss": ("SeedOssConfig", "SeedOssForCausalLM", SMALL | dict(  # biases on q, k, v; heads of 12
        num_key_value_heads=2, head_dim=12, attention_dropout=0.0, residual_dropout=0.0)),
    "seed_oss-out-bias": ("SeedOssConfig", "SeedOssForCausalLM", SMALL | dict(
        num_key_value_heads=2, head_dim=8, attention_out_bias=True, mlp_bias=True, attention_dropout=0.0,
        residual_dropout=0.0)),
    "helium": ("HeliumConfig", "HeliumForCausalLM", SMALL | dict(num_key_value_heads=2, head_dim=8)),
    "helium-biases": ("HeliumConfig", "HeliumForCausalLM", SMALL | dict(  # q, k, v biases; o none
        num_key_value_heads=4, head_dim=8, attention_bias=True, mlp_bias=True)),
    "ministral": ("MinistralConfig", "MinistralForCausalLM", SMALL | dict(  # (5.24 needs head_dim in the file)
        num_key_value_heads=2, head_dim=8, sliding_window=5)),
    "ministral-mixed": ("MinistralConfig", "MinistralForCausalLM", SMALL | dict(
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, sliding_window=5,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"])),
    "cwm": ("CwmConfig", "CwmForCausalLM", SMALL | dict(  # one full layer in four; LLaMA 3's rotary by default
        num_hidden_layers=5, num_key_value_heads=2, head_dim=8, sliding_window=5, max_position_embeddings=64)),
    "cwm-rope": ("CwmConfig", "CwmForCausalLM", SMALL | dict(
        num_hidden_layers=2, num_key_value_heads=2, head_dim=8, sliding_window=5, mlp_bias=True,
        rope_parameters={"rope_type": "default", "rope_theta": 50.0})),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", SMALL | dict(  # every fourth layer without positions
        num_hidden_layers=4, num_key_value_heads=2, pad_token_id=None)),
    "smollm3-listed-sliding": ("SmolLM3Config", "SmolLM3ForCausalLM", SMALL | dict(  # the NoPE layers slide
        num_hidden_layers=3, num_key_value_heads=2, no_rope_layers=[1, 0, 0], use_sliding_window=True,
        sliding_window=5, tie_word_embeddings=False, pad_token_id=None)),
    "exaone4": ("Exaone4Config", "Exaone4ForCausalLM", SMALL | dict(  # three sliding to one full, the full NoPE
        num_hidden_layers=4, num_key_value_heads=2, sliding_window=5)),
    "exaone4-listed": ("Exaone4Config", "Exaone4ForCausalLM", SMALL | dict(
        num_hidden_layers=3, num_key_value_heads=4, sliding_window=5, tie_word_embeddings=True,
        layer_types=["full_attention", "sliding_attention", "sliding_attention"])),
    "exaone4-no-window": ("Exaone4Config", "Exaone4ForCausalLM", SMALL | dict(  # every layer full and turning
        num_hidden_layers=2, num_key_value_heads=2, sliding_window=None, layer_types=["full_attention"] * 2)),
    "ernie4_5": ("Ernie4_5Config", "Ernie4_5ForCausalLM", SMALL | dict(num_key_value_heads=2, head_dim=8)),
    "ernie4_5-biases": ("Ernie4_5Config", "Ernie4_5ForCausalLM", SMALL | dict(  # use_bias on every projection
        num_key_value_heads=4, head_dim=12, use_bias=True, tie_word_embeddings=False)),
    "glm4": ("Glm4Config", "Glm4ForCausalLM", SMALL | dict(  # four norms, half of each head turned in pairs
        num_key_value_heads=2, head_dim=8, pad_token_id=None)),
    "glm4-no-bias-full-rotary": ("Glm4Config", "Glm4ForCausalLM", SMALL | dict(
        num_key_value_heads=4, head_dim=12, attention_bias=False, partial_rotary_factor=1.0, pad_token_id=None,
        tie_word_embeddings=True)),
    "olmoe": ("OlmoeConfig", "OlmoeForCausalLM", SMALL | dict(  # every layer routed, norms over all heads
        num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, pad_token_id=None,
        experts_implementation="eager")),
    "olmoe-renorm": ("OlmoeConfig", "OlmoeForCausalLM", SMALL | dict(
        num_experts=3, num_experts_per_tok=2, norm_topk_prob=True, pad_token_id=None, tie_word_embeddings=True,
        experts_implementation="eager")),
    "flex_olmo": ("FlexOlmoConfig", "FlexOlmoForCausalLM", SMALL | dict(  # OLMoE's experts, OLMo 2's norms
        num_key_value_heads=2, num_experts=3, num_experts_per_tok=2, pad_token_id=None,
        experts_implementation="eager")),
    "granitemoe": ("GraniteMoeConfig", "GraniteMoeForCausalLM", SMALL | dict(  # Granite's multipliers, experts
        num_key_value_heads=2, num_local_experts=3, num_experts_per_tok=2, embedding_multiplier=1.5,
        attention_multiplier=0.3, residual_multiplier=0.7, logits_scaling=2.0, experts_implementation="eager")),
    "granitemoeshared": ("GraniteMoeSharedConfig", "GraniteMoeSharedForCausalLM", SMALL | dict(
        num_key_value_heads=2, num_local_experts=3, num_experts_per_tok=2, shared_intermediate_size=24,
        residual_multiplier=0.7, experts_implementation="eager")),
    "cohere2": ("Cohere2Config", "Cohere2ForCausalLM", SMALL | dict(  # three sliding (turning) to one full (NoPE)
        num_hidden_layers=4, num_key_value_heads=2, sliding_window=5, pad_token_id=None)),
    "nemotron": ("NemotronConfig", "NemotronForCausalLM", SMALL | dict(  # LayerNorm1P, half of each head turned
        num_key_value_heads=2, pad_token_id=None, bos_token_id=None, eos_token_id=None)),
    "nemotron-biases": ("NemotronConfig", "NemotronForCausalLM", SMALL | dict(
        num_key_value_heads=4, attention_bias=True, mlp_bias=True, partial_rotary_factor=1.0, pad_token_id=None,
        bos_token_id=None, eos_token_id=None)),
    "gpt_bigcode": ("GPTBigCodeConfig", "GPTBigCodeForCausalLM", dict(  # multi-query: one key/value head
        vocab_size=97, n_embd=32, n_layer=2, n_head=4, n_positions=64, n_inner=40)),
    "gpt_bigcode-mha": ("GPTBigCodeConfig", "GPTBigCodeForCausalLM", dict(
        vocab_size=97, n_embd=32, n_layer=2, n_head=4, n_positions=64, multi_query=False, tie_word_embeddings=False)),
    "vaultgemma": ("VaultGemmaConfig", "VaultGemmaForCausalLM", SMALL | dict(  # Gemma 2 without its output norms
        num_hidden_layers=3, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8, sliding_window=4,
        attn_logit_softcapping=2.0, final_logit_softcapping=3.0, attn_implementation="eager", pad_token_id=None)),
    "olmo": ("OlmoConfig", "OlmoForCausalLM", SMALL | dict(num_key_value_heads=2, pad_token_id=None)),  # (no gains)
    "olmo-biases": ("OlmoConfig", "OlmoForCausalLM", SMALL | dict(attention_bias=True, pad_token_id=None,
                                                                   tie_word_embeddings=True)),
    "jais2": ("Jais2Config", "Jais2ForCausalLM", SMALL | dict(num_key_value_heads=2, pad_token_id=None,
                                                             bos_token_id=None, eos_token_id=None)),
    "persimmon": ("PersimmonConfig", "PersimmonForCausalLM", SMALL | dict(pad_token_id=None, bos_token_id=None,
                                                                         eos_token_id=None)),
    "persimmon-no-qk-norm": ("PersimmonConfig", "PersimmonForCausalLM", SMALL | dict(
        qk_layernorm=False, partial_rotary_factor=1.0, pad_token_id=None, bos_token_id=None, eos_token_id=None)),
    "granitemoeshared-none": ("GraniteMoeSharedConfig", "GraniteMoeSharedForCausalLM", SMALL | dict(  # 0: no shared
        num_key_value_heads=2, num_local_experts=3, num_experts_per_tok=2, shared_intermediate_size=0,
        experts_implementation="eager")),
    "arcee": ("ArceeConfig", "ArceeForCausalLM", SMALL | dict(num_key_value_heads=2)),  # relu2, no gate
    "arcee-biases": ("ArceeConfig", "ArceeForCausalLM", SMALL | dict(  # (llama.cpp's arcee holds no biases)
        num_key_value_heads=2, attention_bias=True, mlp_bias=True)),
    "arcee-yarn": ("ArceeConfig", "ArceeForCausalLM", SMALL | dict(  # AFM-4.5B's rotary
        num_key_value_heads=2, rope_parameters={"rope_type": "yarn", "factor": 4.0,
                                                "original_max_position_embeddings": 16, "rope_theta": 10000.0})),
    "starcoder2-head-dim": ("Starcoder2Config", "Starcoder2ForCausalLM", SMALL | dict(  # heads of 12, not d / H = 8
        num_key_value_heads=2, head_dim=12, norm_epsilon=1e-5)),
    "stablelm": ("StableLmConfig", "StableLmForCausalLM", SMALL | dict(num_key_value_heads=2, use_qkv_bias=True)),
    "stablelm-parallel": ("StableLmConfig", "StableLmForCausalLM",
                          SMALL | dict(num_key_value_heads=4, use_parallel_residual=True, partial_rotary_factor=0.5)),
    "stablelm-qk-layernorm": ("StableLmConfig", "StableLmForCausalLM",  # a LayerNorm per query and key head
                              SMALL | dict(num_key_value_heads=2, qk_layernorm=True)),
    "granite": ("GraniteConfig", "GraniteForCausalLM", SMALL | dict(  # every multiplier away from 1, biases
        num_key_value_heads=2, embedding_multiplier=3.0, attention_multiplier=0.3, residual_multiplier=0.4,
        logits_scaling=3.0, attention_bias=True, mlp_bias=True)),
    "cohere": ("CohereConfig", "CohereForCausalLM", SMALL | dict(num_key_value_heads=2, logit_scale=0.3,
                                                                 layer_norm_eps=1e-5)),
    "cohere-qk-norm": ("CohereConfig", "CohereForCausalLM", SMALL | dict(  # Command R+: per-head norms, biases
        num_key_value_heads=2, use_qk_norm=True, attention_bias=True, tie_word_embeddings=False)),
    "cohere-qk-norm-tied": ("CohereConfig", "CohereForCausalLM", SMALL | dict(  # (a GGUF's head is tied)
        num_key_value_heads=2, use_qk_norm=True, attention_bias=True, logit_scale=0.3, layer_norm_eps=1e-5)),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", SMALL | dict(num_key_value_heads=1, head_dim=12,
                                                              hidden_activation="gelu_pytorch_tanh")),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM",  # sliding, full, sliding; capped scores and logits
               SMALL | dict(num_hidden_layers=3, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=6,
                            sliding_window=4, attn_logit_softcapping=2.0, final_logit_softcapping=3.0,
                            attn_implementation="eager")),
    "gemma3_text": ("Gemma3TextConfig", "Gemma3ForCausalLM",  # two sliding layers to one full, their own base
                    SMALL | dict(num_hidden_layers=3, num_key_value_heads=1, head_dim=12, sliding_window=5,
                                 sliding_window_pattern=3, rope_parameters={
                                     "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e5},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 50.0}},
                                 attn_implementation="eager")),
    "gemma3_text-all-sliding": ("Gemma3TextConfig", "Gemma3ForCausalLM",  # no full layer: the sliding base in all
                                SMALL | dict(num_hidden_layers=3, num_key_value_heads=1, head_dim=12, sliding_window=5,
                                             layer_types=["sliding_attention"] * 3, rope_parameters={
                                                 "full_attention": {"rope_type": "linear", "factor": 2.0,
                                                                    "rope_theta": 1e5},
                                                 "sliding_attention": {"rope_type": "default", "rope_theta": 50.0}},
                                             attn_implementation="eager")),
    "gemma3_text-four-layers": ("Gemma3TextConfig", "Gemma3ForCausalLM",  # under six layers the default slides in all
                                SMALL | dict(num_hidden_layers=4, num_key_value_heads=2, head_dim=8, sliding_window=4,
                                             query_pre_attn_scalar=8, rope_theta=1e4, rope_local_base_freq=30.0,
                                             attn_implementation="eager")),
    "gemma3_text-softcapped": ("Gemma3TextConfig", "Gemma3ForCausalLM",  # transformers keeps the scores' cap unused
                               SMALL | dict(num_hidden_layers=2, num_key_value_heads=1, head_dim=12, sliding_window=5,
                                            sliding_window_pattern=2, attn_logit_softcapping=0.5,
                                            final_logit_softcapping=3.0, attn_implementation="eager")),
    "gemma3_text-one-base-scaled": ("Gemma3TextConfig", "Gemma3ForCausalLM",  # one base; the full layers' scaled
                                    SMALL | dict(num_hidden_layers=2, num_key_value_heads=1, head_dim=12,
                                                 sliding_window=5, sliding_window_pattern=2, rope_parameters={
                                                     "full_attention": {"rope_type": "linear", "factor": 4.0,
                                                                        "rope_theta": 50.0},
                                                     "sliding_attention": {"rope_type": "default",
                                                                           "rope_theta": 50.0}},
                                                 attn_implementation="eager")),
    "phi": ("PhiConfig", "PhiForCausalLM", dict(vocab_size=97, hidden_size=40, intermediate_size=48,
                                                num_hidden_layers=2, num_attention_heads=4,
                                                max_position_embeddings=64, partial_rotary_factor=0.4)),
    "phi-gguf": ("PhiConfig", "PhiForCausalLM", dict(vocab_size=97, hidden_size=40, intermediate_size=160,
                                                     num_hidden_layers=2, num_attention_heads=4,
                                                     max_position_embeddings=64, partial_rotary_factor=0.4)),  # 4 d
    "phi-qk-layernorm": ("PhiConfig", "PhiForCausalLM", dict(vocab_size=97, hidden_size=32, intermediate_size=48,
                                                             num_hidden_layers=2, num_attention_heads=4,
                                                             max_position_embeddings=64, qk_layernorm=True)),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", SMALL | dict(num_key_value_heads=2, pad_token_id=0)),
    "phi3-longrope": ("Phi3Config", "Phi3ForCausalLM",  # Phi-3.5's kind: long factors past 8 positions
                      SMALL | dict(num_key_value_heads=2, pad_token_id=0, original_max_position_embeddings=8,
                                   rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                                                        short_factor=[1.0, 1.1, 1.3, 1.5],
                                                        long_factor=[1.0, 2.0, 4.0, 9.0]))),
    "phimoe": ("PhimoeConfig", "PhimoeForCausalLM",  # Phi-3.5-MoE's kind: LongRoPE past 8 positions, biases,
               SMALL | dict(num_key_value_heads=2, num_local_experts=4, attention_bias=True, lm_head_bias=True,
                            router_jitter_noise=0.4,  # a threshold wide enough to keep several experts' scores
                            experts_implementation="eager", rms_norm_eps=1e-5, sliding_window=6,
                            rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                                                 short_factor=[1.0, 1.1, 1.3, 1.5], long_factor=[1.0, 2.0, 4.0, 9.0],
                                                 short_mscale=1.25, long_mscale=1.25,
                                                 original_max_position_embeddings=8))),
    "phimoe-gguf": ("PhimoeConfig", "PhimoeForCausalLM",  # what a GGUF file holds: transformers' threshold, the
                    SMALL | dict(num_key_value_heads=2, num_local_experts=4, attention_bias=True, lm_head_bias=True,
                                 experts_implementation="eager", sliding_window=6,  # converter's attention factor,
                                 rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,  # the factors used
                                                      short_factor=[1.0, 1.1, 1.3, 1.5],
                                                      long_factor=[1.0, 1.1, 1.3, 1.5],
                                                      short_mscale=2**0.5, long_mscale=2**0.5,  # sqrt(1 + ln 8 / ln 8)
                                                      original_max_position_embeddings=8))),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM",
                 dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
                      max_position_embeddings=64, rotary_pct=0.25, hidden_act="gelu")),
    "gpt_neox-sequential": ("GPTNeoXConfig", "GPTNeoXForCausalLM",
                            dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
                                 num_attention_heads=4, max_position_embeddings=64, use_parallel_residual=False)),
    "falcon-7b": ("FalconConfig", "FalconForCausalLM",
                  dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, multi_query=True,
                       parallel_attn=True, bias=False, max_position_embeddings=64)),
    "falcon-40b": ("FalconConfig", "FalconForCausalLM",
                   dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_kv_heads=2,
                        new_decoder_architecture=True, bias=False, max_position_embeddings=64,
                        tie_word_embeddings=False)),
    "falcon-sequential-mha": ("FalconConfig", "FalconForCausalLM",
                              dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   multi_query=False, parallel_attn=False, bias=True, max_position_embeddings=64)),
}  # fmt: skip
MODELS |= DENSE | EXPERTS | MIXERS | INDEXED
