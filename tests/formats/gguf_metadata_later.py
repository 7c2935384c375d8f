"""The metadata of llama.cpp's convert_hf_to_gguf.py's classes for the architectures of 2026 that write their own
lists or keys from their published config.json (LagunaModel, Cohere2MoeModel, MimoV2Model, ApertusModel), beside
gguf_metadata_2026.py's, for tests/formats/gguf_files.py's converter-like files."""

from __future__ import annotations

import gguf
import numpy as np


def hy_v3(writer, cfg) -> None:
    """HYV3Model.set_gguf_parameters (convert_hf_to_gguf.py, llama.cpp, MIT) after TextModel's: its prediction
    layers counted in block_count, though a checkpoint transformers saves holds none of their tensors."""
    config = cfg.to_dict()
    writer.add_expert_feed_forward_length(cfg.moe_intermediate_size)
    writer.add_expert_shared_feed_forward_length(cfg.moe_intermediate_size * config.get("num_shared_experts", 1))
    writer.add_expert_weights_norm(config.get("route_norm", True))
    writer.add_expert_weights_scale(float(config.get("router_scaling_factor", 1.0)))
    writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    nextn = int(config.get("num_nextn_predict_layers") or 0)
    if nextn:
        writer.add_block_count(cfg.num_hidden_layers + nextn)
        writer.add_nextn_predict_layers(nextn)


def laguna(writer, cfg) -> None:
    """LagunaModel.set_gguf_parameters (convert_hf_to_gguf.py, llama.cpp, MIT) after TextModel's: no list of the
    layers' kinds (llama.cpp's default: a full layer, then three sliding)."""
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_head_count([cfg.num_attention_heads] * cfg.num_hidden_layers)
    if cfg.sliding_window:
        writer.add_sliding_window(cfg.sliding_window)
    writer.add_expert_feed_forward_length(cfg.moe_intermediate_size)
    writer.add_expert_shared_feed_forward_length(cfg.shared_expert_intermediate_size)
    writer.add_expert_weights_norm(True)
    writer.add_expert_weights_scale(float(cfg.moe_routed_scaling_factor))
    writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    dense = next((i for i, t in enumerate(cfg.mlp_layer_types) if t != "dense"), len(cfg.mlp_layer_types))
    writer.add_leading_dense_block_count(dense)
    full = cfg.rope_parameters["full_attention"]
    writer.add_rope_dimension_count(int(cfg.head_dim * float(full.get("partial_rotary_factor", 1.0))))
    if (local := cfg.rope_parameters.get("sliding_attention")) is not None:
        writer.add_rope_dimension_count_swa(int(cfg.head_dim * float(local.get("partial_rotary_factor", 1.0))))


def cohere2moe(writer, cfg) -> None:
    """Cohere2MoeModel.set_gguf_parameters (convert_hf_to_gguf.py, llama.cpp, MIT) after TextModel's."""
    gating = {"softmax": gguf.ExpertGatingFuncType.SOFTMAX, "sigmoid": gguf.ExpertGatingFuncType.SIGMOID}
    writer.add_expert_gating_func(gating[cfg.expert_selection_fn])
    writer.add_logit_scale(cfg.logit_scale)
    writer.add_sliding_window(cfg.sliding_window)
    writer.add_sliding_window_pattern([t == "sliding_attention" for t in cfg.layer_types])
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_expert_feed_forward_length(cfg.intermediate_size)
    dense = next((i for i, t in enumerate(cfg.mlp_layer_types) if t != "dense"), len(cfg.mlp_layer_types))
    writer.add_leading_dense_block_count(dense)
    writer.add_expert_weights_norm(cfg.norm_topk_prob)
    if cfg.num_shared_experts > 0:
        writer.add_expert_shared_count(cfg.num_shared_experts)
        writer.add_expert_shared_feed_forward_length(cfg.intermediate_size * cfg.num_shared_experts)
    writer.add_rope_dimension_count(cfg.head_dim)
    writer.add_rope_scaling_type(gguf.RopeScalingType.NONE)


def mimo2(writer, cfg, nextn: int = 3) -> None:
    """MimoV2Model.set_gguf_parameters (convert_hf_to_gguf.py, llama.cpp, MIT) after TextModel's: its `_n_nextn`
    prediction layers counted in block_count and the lists (sliding), though a checkpoint transformers saves holds
    none of their tensors (llama.cpp then loads the trunk alone)."""
    hybrid = [int(t == "sliding_attention") for t in cfg.layer_types] + [1] * nextn
    G = cfg.num_key_value_heads  # (the full layers'; the sliding ones' twice as many, MiMo's swa_num_key_value_heads)
    writer.add_block_count(cfg.num_hidden_layers + nextn)
    writer.add_head_count_kv([2 * G if flag else G for flag in hybrid])
    writer.add_sliding_window(cfg.sliding_window)
    writer.add_sliding_window_pattern([bool(flag) for flag in hybrid])
    writer.add_value_length(cfg.v_head_dim)
    writer.add_expert_count(cfg.n_routed_experts)
    writer.add_expert_feed_forward_length(cfg.moe_intermediate_size)
    share = cfg.rope_parameters["full_attention"]["partial_rotary_factor"]
    writer.add_rope_dimension_count(int(cfg.head_dim * share))
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    if cfg.attention_value_scale is not None:
        writer.add_float32("mimo2.attention.value_scale", float(cfg.attention_value_scale))  # (add_attn_value_scale)
    if nextn:
        writer.add_nextn_predict_layers(nextn)


def apertus_xielu(writer, tensors: dict) -> dict:
    """ApertusModel.modify_tensors (convert_hf_to_gguf.py, llama.cpp, MIT): each block's four xIELU numbers, as
    stored (float32), written as four metadata lists of one per block, not tensors."""
    for part, add in (
        ("alpha_n", writer.add_xielu_alpha_n),
        ("alpha_p", writer.add_xielu_alpha_p),
        ("beta", writer.add_xielu_beta),
        ("eps", writer.add_xielu_eps),
    ):
        names = sorted((n for n in tensors if n.endswith(f".act_fn.{part}")), key=lambda n: int(n.split(".")[2]))
        add([float(tensors.pop(n).astype(np.float32).item()) for n in names])
    return tensors


__all__ = ["apertus_xielu", "cohere2moe", "hy_v3", "laguna", "mimo2"]
