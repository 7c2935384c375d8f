"""The metadata and tensor changes of llama.cpp's convert_hf_to_gguf.py for the families of 2026 (issue 44), beside
gguf_metadata.py's: the architecture of each model_type, and each converter class's keys beyond TextModel's."""

from __future__ import annotations

import gguf
import gguf_metadata_mixers as mixers
import numpy as np
from gguf_metadata_gemma import _gemma4, gemma3n, gemma3n_tensors, gemma4
from gguf_metadata_later import cohere2moe, hy_v3, laguna, mimo2

ARCHS = {
    "olmo": "OLMO",
    "olmoe": "OLMOE",
    "olmo3": "OLMO2",
    "glm4": "GLM4",
    "exaone4": "EXAONE4",
    "cohere2": "COHERE2",
    "nemotron": "NEMOTRON",
    "jais2": "JAIS2",
    "ministral3": "MISTRAL3",
    "gpt_bigcode": "STARCODER",
    "mpt": "MPT",
    "llama4_text": "LLAMA4",
    "granitemoe": "GRANITE_MOE",
    "granitemoeshared": "GRANITE_MOE",
    "dots1": "DOTS1",
    "glm4_moe": "GLM4_MOE",
    "solar_open": "GLM4_MOE",
    "exaone_moe": "EXAONE_MOE",
    "minimax_m2": "MINIMAXM2",
    "ernie4_5_moe": "ERNIE4_5_MOE",
    "dbrx": "DBRX",
    "afmoe": "AFMOE",
    "eurobert": "EUROBERT",
    "modernbert": "MODERN_BERT",
    "gemma4_text": "GEMMA4",
    "gemma3n_text": "GEMMA3N",
    "apertus": "APERTUS",
    "mimo_v2_flash": "MIMO2",
    "granite_swa": "GRANITE_SWA",
    "cohere2_moe": "COHERE2MOE",
    "laguna": "LAGUNA",
    "hy_v3": "HY_V3",
} | mixers.ARCHS
# llama.cpp's architectures newer than the gguf package (its source built here, llama-cpp-python 0.3.36): the name,
# and the package's architecture whose tensor names theirs are, with gpt-oss's for the sinks
NEWER = {
    "GRANITE_SWA": ("granite_swa", "GRANITE"),
    "COHERE2MOE": ("cohere2moe", "GLM4_MOE"),
    "LAGUNA": ("laguna", "STEP35"),
    "HY_V3": ("hy_v3", "DOTS1"),
}
ROUTER_TYPED = ("dbrx",)  # DbrxModel.tensor_force_quant: every 2-D tensor in the asked type, its router too
# converters that stack Qwen-MoE's per-expert tensors and rename DeepSeek's correction bias
ROUTED = (
    "dots1",
    "glm4_moe",
    "solar_open",
    "exaone_moe",
    "minimax_m2",
    "ernie4_5_moe",
    "afmoe",
    "mimo_v2_flash",
    "laguna",
)
PLUS_ONE = (
    "nemotron",
    "qwen3_next",
    "qwen3_5_text",
    "qwen3_5_moe_text",
)  # NemotronModel's, Qwen3NextModel's modify_tensors: the norms' gains stored as
# 1 + w (Qwen3-Next's but its linear attention's gated norm: ZERO_CENTRED_BUT)
ZERO_CENTRED_BUT = "linear_attn.norm.weight"
PERMUTED = (
    "OLMO",
    "GRANITE_HYBRID",
    "NEMOTRON_H",
    "NEMOTRON_H_MOE",
)  # classes that permute Q and K as LlamaModel does, without LlamaModel's own keys
# LlamaModel's subclasses: its vocab_size and rope.dimension_count
LLAMA_MODELS = ("MISTRAL3", "LLAMA4", "GRANITE_MOE", "AFMOE", "APERTUS", "GRANITE_SWA")
UNPERMUTED = ("LLAMA4", "AFMOE", "APERTUS")  # LlamaModel's subclasses with undo_permute False: Q and K as stored


# classes that write their own list, not TextModel's
OWN_LISTS = ("gpt_bigcode", "mpt", "dbrx", "modernbert", "gemma4_text", "gemma3n_text", *mixers.OWN_LISTS)


def own_list(writer, cfg) -> None:
    """The classes that write their own list (StarCoderModel: one key/value head, a feedforward of 4 d, whatever
    the model's; MPTModel: 4 d, eps 1e-5, no general.file_type)."""
    if cfg.model_type in mixers.OWN_LISTS:
        mixers.own_list(writer, cfg)
        return
    if cfg.model_type == "gemma4_text":  # (its config.json's values: transformers 5.24 holds them per layer)
        gemma4(writer, cfg.to_dict())
        return
    if cfg.model_type == "gemma3n_text":
        gemma3n(writer, cfg.to_dict())
        return
    if cfg.model_type == "modernbert":  # TextModel's keys as its config holds them, then ModernBertModel's
        rope = cfg.rope_parameters
        for add, value in (
            (writer.add_block_count, cfg.num_hidden_layers),
            (writer.add_context_length, cfg.max_position_embeddings),
            (writer.add_embedding_length, cfg.hidden_size),
            (writer.add_feed_forward_length, cfg.intermediate_size),
            (writer.add_head_count, cfg.num_attention_heads),
            (writer.add_rope_freq_base, rope["full_attention"]["rope_theta"]),
            (writer.add_rope_freq_base_swa, rope["sliding_attention"]["rope_theta"]),
            (writer.add_layer_norm_rms_eps, cfg.norm_eps),  # (norm_eps: TextModel's RMS list; no layer_norm_epsilon)
            (writer.add_causal_attention, False),
            (writer.add_sliding_window, cfg.local_attention),
            (writer.add_vocab_size, cfg.vocab_size),
        ):
            add(value)
        every = cfg.to_dict().get("global_attn_every_n_layers")  # (only where the config names it)
        if every is not None:
            writer.add_uint32("modern-bert.attention.sliding_window_pattern", every)
        writer.add_rope_scaling_type(gguf.RopeScalingType.NONE)
        writer.add_string("modern-bert.hidden_activation", cfg.hidden_activation)  # (no method in gguf 0.19)
        return
    if cfg.model_type == "dbrx":  # DbrxModel: attn_config's rope_theta, eps 1e-5
        attention, ffn = (cfg.to_dict()[key] for key in ("attn_config", "ffn_config"))  # (the converter's dicts)
        for add, value in (
            (writer.add_block_count, cfg.n_layers),
            (writer.add_context_length, cfg.max_seq_len),
            (writer.add_embedding_length, cfg.d_model),
            (writer.add_feed_forward_length, ffn["ffn_hidden_size"]),
            (writer.add_head_count, cfg.n_heads),
            (writer.add_head_count_kv, attention["kv_n_heads"]),
            (writer.add_rope_freq_base, attention["rope_theta"]),
            (writer.add_clamp_kqv, attention["clip_qkv"]),
            (writer.add_expert_count, ffn["moe_num_experts"]),
            (writer.add_expert_used_count, ffn["moe_top_k"]),
            (writer.add_layer_norm_eps, 1e-5),
        ):
            add(value)
        return
    if cfg.model_type == "mpt":
        for add, value in (
            (writer.add_context_length, cfg.max_seq_len),
            (writer.add_embedding_length, cfg.d_model),
            (writer.add_block_count, cfg.n_layers),
            (writer.add_feed_forward_length, 4 * cfg.d_model),
            (writer.add_head_count, cfg.n_heads),
            (writer.add_layer_norm_eps, 1e-5),
        ):
            add(value)
        attention = cfg.attn_config
        if attention.clip_qkv is not None:
            writer.add_clamp_kqv(attention.clip_qkv)
        writer.add_max_alibi_bias(attention.alibi_bias_max if attention.alibi else 0.0)
        return
    for add, value in (
        (writer.add_context_length, cfg.n_positions),
        (writer.add_embedding_length, cfg.n_embd),
        (writer.add_feed_forward_length, 4 * cfg.n_embd),
        (writer.add_block_count, cfg.n_layer),
        (writer.add_head_count, cfg.n_head),
        (writer.add_head_count_kv, 1),
        (writer.add_layer_norm_eps, cfg.layer_norm_epsilon),
    ):
        add(value)


def own_keys(writer, cfg) -> None:
    """The keys each converter class writes after TextModel.set_gguf_parameters."""
    kind = cfg.model_type
    if kind == "olmo":  # OlmoModel.set_gguf_parameters
        writer.add_layer_norm_eps(1e-5)
        if cfg.clip_qkv is not None:
            writer.add_clamp_kqv(cfg.clip_qkv)
    if kind == "olmo3":  # Olmo2Model.set_gguf_parameters: the window and each layer's flag
        writer.add_sliding_window(cfg.sliding_window)
        writer.add_sliding_window_pattern([t == "sliding_attention" for t in cfg.layer_types])
    if kind == "glm4":  # Glm4Model.set_gguf_parameters: the rotated dims
        m = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        writer.add_rope_dimension_count(int(m * cfg.rope_parameters.get("partial_rotary_factor", 0.5)))
    if kind in ("exaone4", "exaone_moe"):  # Exaone4Model.set_gguf_parameters (transformers gives it layer_types)
        writer.add_vocab_size(cfg.vocab_size)
        if cfg.sliding_window is not None:
            writer.add_sliding_window(cfg.sliding_window)
            writer.add_sliding_window_pattern([t == "sliding_attention" for t in cfg.layer_types])
    if kind == "cohere2":  # Cohere2Model.set_gguf_parameters (rotary_pct: the published configs' 1.0, which
        writer.add_logit_scale(cfg.logit_scale)  # transformers' Cohere2Config lacks and the converter requires)
        writer.add_sliding_window(cfg.sliding_window)
        writer.add_vocab_size(cfg.vocab_size)
        writer.add_rope_dimension_count(int(1.0 * (cfg.hidden_size // cfg.num_attention_heads)))
        writer.add_rope_scaling_type(gguf.RopeScalingType.NONE)
    if kind == "nemotron":  # NemotronModel.set_gguf_parameters
        writer.add_vocab_size(cfg.vocab_size)
        writer.add_layer_norm_eps(cfg.norm_eps)
        share = cfg.rope_parameters["partial_rotary_factor"]
        writer.add_rope_dimension_count(int(share * cfg.hidden_size) // cfg.num_attention_heads)
        writer.add_rope_scaling_type(gguf.RopeScalingType.NONE)
    if kind == "jais2":  # Jais2Model.set_gguf_parameters
        writer.add_rope_dimension_count(getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads)
    if kind == "ministral3":  # Ministral3Model.set_gguf_parameters (which asserts YaRN)
        writer.add_rope_scaling_yarn_log_mul(cfg.rope_parameters["mscale_all_dim"])
        writer.add_key_value(
            gguf.Keys.Attention.TEMPERATURE_SCALE.format(arch="mistral3"),
            cfg.rope_parameters["llama_4_scaling_beta"],
            gguf.GGUFValueType.FLOAT32,
        )
    if kind == "llama4_text":  # Llama4Model: the dense layers' width, the step, the experts' width
        writer.add_feed_forward_length(cfg.intermediate_size_mlp)
        writer.add_interleave_moe_layer_step(cfg.interleave_moe_layer_step)
        writer.add_expert_feed_forward_length(cfg.intermediate_size)
    if kind.startswith("granitemoe"):  # GraniteModel's multipliers (the truthy ones), GraniteMoeModel's shared width
        for add, value in (
            (writer.add_attention_scale, cfg.attention_multiplier),
            (writer.add_embedding_scale, cfg.embedding_multiplier),
            (writer.add_residual_scale, cfg.residual_multiplier),
            (writer.add_logit_scale, cfg.logits_scaling),
            (writer.add_expert_shared_feed_forward_length, getattr(cfg, "shared_intermediate_size", 0)),
        ):
            if value:
                add(value)
    if kind in ROUTED and hasattr(cfg, "n_group"):  # TextModel: the groups where the config has them
        writer.add_expert_group_count(cfg.n_group)
        writer.add_expert_group_used_count(cfg.topk_group)
    if kind == "dots1":  # Dots1Model (its experts' count copied to num_experts; no scoring_func in its config)
        writer.add_expert_count(cfg.n_routed_experts)
        writer.add_leading_dense_block_count(cfg.first_k_dense_replace)
        writer.add_expert_shared_count(cfg.n_shared_experts)
        writer.add_expert_weights_scale(cfg.routed_scaling_factor)
        writer.add_expert_weights_norm(cfg.norm_topk_prob)
    if kind in ("glm4_moe", "solar_open"):  # Glm4MoeModel (block_count with the prediction layers: GLM-4.5's)
        writer.add_block_count(cfg.num_hidden_layers + getattr(cfg, "num_nextn_predict_layers", 0))
        m = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        writer.add_rope_dimension_count(int(m * cfg.rope_parameters.get("partial_rotary_factor", 0.5)))
        writer.add_expert_count(cfg.n_routed_experts)
        writer.add_expert_shared_count(cfg.n_shared_experts)
        if getattr(cfg, "first_k_dense_replace", None) is not None:
            writer.add_leading_dense_block_count(cfg.first_k_dense_replace)
        writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
        writer.add_expert_weights_scale(cfg.routed_scaling_factor)
        writer.add_expert_weights_norm(cfg.norm_topk_prob)
        if getattr(cfg, "num_nextn_predict_layers", None) is not None:
            writer.add_nextn_predict_layers(cfg.num_nextn_predict_layers)
    if kind == "exaone_moe":  # ExaoneMoEModel (no scoring: its config has none)
        shared = cfg.num_shared_experts
        writer.add_expert_shared_count(shared)
        writer.add_expert_shared_feed_forward_length(cfg.moe_intermediate_size * shared)
        writer.add_expert_weights_scale(cfg.routed_scaling_factor)
        writer.add_expert_weights_norm(cfg.norm_topk_prob)
        writer.add_leading_dense_block_count(getattr(cfg, "first_k_dense_replace", 0))
        writer.add_nextn_predict_layers(getattr(cfg, "num_nextn_predict_layers", 0))
        writer.add_rope_scaling_type(gguf.RopeScalingType.NONE)
    if kind == "minimax_m2":  # MiniMaxM2Model (no scoring: its config has none)
        writer.add_expert_feed_forward_length(cfg.intermediate_size)
        writer.add_rope_dimension_count(cfg.rotary_dim)
    if kind == "ernie4_5_moe":  # Ernie4_5MoeModel (the shared width as it computes it)
        writer.add_expert_count(cfg.moe_num_experts)
        writer.add_expert_used_count(cfg.moe_k)
        writer.add_interleave_moe_layer_step(cfg.moe_layer_interval)
        writer.add_leading_dense_block_count(cfg.moe_layer_start_index)
        writer.add_expert_feed_forward_length(cfg.moe_intermediate_size)
        writer.add_expert_shared_count(cfg.moe_num_shared_experts)
        if cfg.moe_num_shared_experts > 0:
            writer.add_expert_shared_feed_forward_length(cfg.intermediate_size // cfg.num_key_value_heads)
    if kind == "afmoe":  # AfmoeModel (no route_norm nor score_func in transformers' config)
        writer.add_expert_shared_count(cfg.num_shared_experts)
        writer.add_expert_feed_forward_length(cfg.moe_intermediate_size)
        writer.add_leading_dense_block_count(cfg.num_dense_layers)
        writer.add_expert_weights_scale(cfg.route_scale)
        if cfg.sliding_window is not None:
            writer.add_sliding_window(cfg.sliding_window)
    if kind == "eurobert":  # EuroBertModel (its classifier_pooling "late", which the converter refuses, left out)
        writer.add_causal_attention(False)
        writer.add_rope_scaling_type(gguf.RopeScalingType.NONE)
    if kind == "granite_swa":  # GraniteSWAModel: the window, each layer's kind, the rope flags of no_rope_layers
        writer.add_sliding_window(cfg.sliding_window)
        writer.add_sliding_window_pattern([t == "sliding_attention" for t in cfg.layer_types])
        if getattr(cfg, "no_rope_layers", None):  # (5.24's config holds layer_rope_theta instead: none written)
            writer.add_array("granite_swa.attention.rope_pattern", [bool(x) for x in cfg.no_rope_layers])
    if kind == "hy_v3":  # HYV3Model
        hy_v3(writer, cfg)
    if kind == "laguna":  # LagunaModel
        laguna(writer, cfg)
    if kind == "cohere2_moe":  # Cohere2MoeModel (and TextModel's scoring from expert_selection_fn)
        cohere2moe(writer, cfg)
    if kind == "mimo_v2_flash":  # MimoV2Model, from the published config.json's keys (hybrid_layer_pattern,
        mimo2(writer, cfg)  # swa_num_key_value_heads, ...), which transformers 5.24 holds as layer_types and 2 G
    if kind in mixers.ARCHS:  # LFM2Model, LFM2MoeModel
        mixers.own_keys(writer, cfg)
    if kind == "olmoe":  # OlmoeModel.set_gguf_parameters (the writer keeps the last value of a key)
        writer.add_layer_norm_rms_eps(1e-5)


def converted(tensors: dict, cfg) -> dict:
    """The tensor changes of these converters (before the package's names): Llama4Model.modify_tensors splits the
    experts' (E, d, 2r) gate_up_proj into gate and up, each transposed to (E, r, d), and transposes down_proj."""
    tensors = {n: t for n, t in tensors.items() if t.size}  # (GLM-4.5's shared MLP of 0 experts: none in a file)
    if cfg.model_type in mixers.ARCHS:
        tensors = mixers.converted(tensors, cfg)
        if cfg.model_type != "granitemoehybrid":  # (GraniteHybridModel: GraniteMoeModel's split too)
            return tensors
    if cfg.model_type == "ernie4_5_moe":  # (its correction bias (1, E), kept 2-D)
        tensors = {
            n.replace("moe_statics.e_score_correction_bias", "e_score_correction_bias"): t for n, t in tensors.items()
        }
    if cfg.model_type == "afmoe":  # (AfmoeModel.filter_tensors: the correction bias named as a bias)
        tensors = {n.replace("mlp.expert_bias", "mlp.expert_bias.bias"): t for n, t in tensors.items()}
    if cfg.model_type in ROUTED:  # (ModelBase.filter_tensors)
        tensors = {n.replace("e_score_correction_bias", "e_score_correction.bias"): t for n, t in tensors.items()}
    if cfg.model_type == "laguna":  # (the newer package maps the experts' correction bias where DeepSeek's is)
        tensors = {
            n.replace("mlp.experts.e_score_correction", "mlp.gate.e_score_correction"): t for n, t in tensors.items()
        }
    if cfg.model_type == "granite_swa":  # GraniteSWAModel.filter_tensors: the sinks as .weight
        tensors = {n + ".weight" if n.endswith("sinks") else n: t for n, t in tensors.items()}
    if cfg.model_type == "mimo_v2_flash":  # MimoV2Model.filter_tensors: the sinks (attention_sink_bias) as .weight
        tensors = {n + ".weight" if n.endswith("attention_sink_bias") else n: t for n, t in tensors.items()}
    if cfg.model_type == "gemma4_text":
        return dict(_gemma4(tensors))
    if cfg.model_type == "gemma3n_text":
        return dict(gemma3n_tensors(tensors, cfg.to_dict()))
    if cfg.model_type.startswith("granitemoe"):
        return dict(_granite_moe(tensors, cfg))
    if cfg.model_type == "dbrx":
        return dict(_dbrx(tensors, cfg))
    if cfg.model_type != "llama4_text":
        return tensors
    out = {}
    for name, data in tensors.items():
        if name.endswith("experts.gate_up_proj"):
            gate, up = np.split(data.swapaxes(-1, -2), 2, axis=-2)
            out[name.replace("gate_up_proj", "gate_proj.weight")] = gate
            out[name.replace("gate_up_proj", "up_proj.weight")] = up
        elif name.endswith("experts.down_proj"):
            out[name + ".weight"] = data.swapaxes(-1, -2)
        else:
            out[name] = data
    return out


def _granite_moe(tensors: dict, cfg):
    """GraniteMoeModel.modify_tensors: input_linear (E, 2r, d) and the shared (2s, d) split into gate and up (named
    here as Qwen-MoE's, which the package maps to the same tensors)."""
    for name, data in tensors.items():
        if name.endswith("block_sparse_moe.input_linear.weight"):
            gate, up = np.split(data, 2, axis=-2)
            yield name.replace("block_sparse_moe.input_linear", "mlp.experts.gate_proj"), gate
            yield name.replace("block_sparse_moe.input_linear", "mlp.experts.up_proj"), up
        elif name.endswith("shared_mlp.input_linear.weight"):
            gate, up = np.split(data, 2, axis=-2)
            shared = "mlp.shared_expert" if getattr(cfg, "num_local_experts", 1) else "mlp"  # (a dense one's: the MLP)
            yield name.replace("shared_mlp.input_linear", f"{shared}.gate_proj"), gate
            yield name.replace("shared_mlp.input_linear", f"{shared}.up_proj"), up
        else:
            yield name, data


def _dbrx(tensors: dict, cfg):
    """DbrxModel.modify_tensors: the experts (E ff, d) viewed (E, ff, d), w2 transposed per expert, named .weight."""
    E = cfg.ffn_config.moe_num_experts
    for name, data in tensors.items():
        if name.endswith(("experts.mlp.w1", "experts.mlp.v1", "experts.mlp.w2")):
            data = data.reshape(E, -1, data.shape[-1])
            yield name + ".weight", data.swapaxes(1, 2) if name.endswith("w2") else data
        else:
            yield name, data
