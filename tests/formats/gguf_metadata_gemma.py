"""The metadata and tensor changes of convert_hf_to_gguf.py's Gemma4Model and Gemma3NModel (llama.cpp, MIT), read
from the vendored source: their keys from config.json's values (transformers 5.24 holds Gemma 4's per layer), the
tensors they rename, stack and pad, and Gemma 4's generated rope_freqs (gguf_metadata_2026.py calls them)."""

from __future__ import annotations

import numpy as np


def _full(hp: dict, key: str, global_key: str):
    """The full layers' own value of `key`: the hub's global_... key, else per_layer_config's (transformers 5.24's
    save), as Gemma4Model.set_gguf_parameters finds it; None if neither says."""
    if hp.get(global_key) is not None:
        return hp[global_key]
    if key == "head_dim" and not hp.get("per_layer_config"):  # (one head size: the converter asserts one found;
        return hp["head_dim"]  # its file would say the same)
    kinds = hp.get("layer_types", [])
    for index, keys in (hp.get("per_layer_config") or {}).items():
        if int(index) < len(kinds) and kinds[int(index)] == "full_attention" and key in keys:
            return keys[key]
    return None


def _text_model(writer, hp: dict) -> None:
    """TextModel.set_gguf_parameters' sizes, both kinds' bases and the eps, from a Gemma config.json's values."""
    ropes = hp["rope_parameters"]
    for add, value in (
        (writer.add_block_count, hp["num_hidden_layers"]),
        (writer.add_context_length, hp["max_position_embeddings"]),
        (writer.add_embedding_length, hp["hidden_size"]),
        (writer.add_feed_forward_length, hp["intermediate_size"]),
        (writer.add_head_count, hp["num_attention_heads"]),
        (writer.add_head_count_kv, hp["num_key_value_heads"]),
        (writer.add_rope_freq_base, ropes["full_attention"]["rope_theta"]),
        (writer.add_rope_freq_base_swa, ropes["sliding_attention"]["rope_theta"]),
        (writer.add_layer_norm_rms_eps, hp["rms_norm_eps"]),
    ):
        add(value)


def gemma4(writer, hp: dict) -> None:
    """TextModel.set_gguf_parameters, Gemma3Model's, then Gemma4Model's (convert_hf_to_gguf.py), from config.json's
    values: the full layers' head size as key_length, the sliding layers' as key_length_swa, each layer's kind,
    key/value heads and width (double-wide MLPs) where they differ, the sharing layers, the per-layer inputs'
    width. Keys written twice keep the last value (the package's writer overwrites)."""
    _text_model(writer, hp)
    if hp.get("num_experts") is not None:
        writer.add_expert_count(hp["num_experts"])
    if hp.get("top_k_experts") is not None:
        writer.add_expert_used_count(hp["top_k_experts"])
    writer.add_key_length(hp["head_dim"])
    writer.add_value_length(hp["head_dim"])
    if hp.get("final_logit_softcapping"):
        writer.add_final_logit_softcapping(hp["final_logit_softcapping"])
    writer.add_sliding_window(hp["sliding_window"])
    shared, swa = hp["num_kv_shared_layers"], [t == "sliding_attention" for t in hp["layer_types"]]
    writer.add_shared_kv_layers(shared)
    writer.add_embedding_length_per_layer_input(hp.get("hidden_size_per_layer_input") or 0)
    writer.add_sliding_window_pattern(swa)
    full = _full(hp, "head_dim", "global_head_dim")
    writer.add_key_length(full)
    writer.add_value_length(full)
    writer.add_key_length_swa(hp["head_dim"])
    writer.add_value_length_swa(hp["head_dim"])
    if hp.get("moe_intermediate_size") is not None:
        writer.add_expert_feed_forward_length(hp["moe_intermediate_size"])
    if hp.get("use_double_wide_mlp"):
        first = hp["num_hidden_layers"] - shared
        writer.add_feed_forward_length([hp["intermediate_size"] * (1 if i < first else 2) for i in range(len(swa))])
    heads = _full(hp, "num_key_value_heads", "num_global_key_value_heads")
    if heads is not None:
        writer.add_head_count_kv([hp["num_key_value_heads"] if s else heads for s in swa])
    writer.add_rope_dimension_count(full)
    writer.add_rope_dimension_count_swa(hp["head_dim"])  # (the converter's rope_parameters' top level: a share of 1)


def gemma3n(writer, hp: dict) -> None:
    """TextModel.set_gguf_parameters, Gemma3Model's, then Gemma3NModel's: each layer's width (a list), AltUp's
    streams, the per-layer inputs' width, the sharing layers, each layer's sparsity as its normal quantile computed
    in float32 (torch.distributions.Normal(0, 1).icdf), each layer's kind."""
    import torch

    _text_model(writer, hp)
    for add, value in (
        (writer.add_key_length, hp["head_dim"]),
        (writer.add_value_length, hp["head_dim"]),
        (writer.add_final_logit_softcapping, hp["final_logit_softcapping"]),
        (writer.add_sliding_window, hp["sliding_window"]),
        (writer.add_altup_active_idx, hp["altup_active_idx"]),
        (writer.add_altup_num_inputs, hp["altup_num_inputs"]),
        (writer.add_embedding_length_per_layer_input, hp["hidden_size_per_layer_input"]),
        (writer.add_shared_kv_layers, hp["num_kv_shared_layers"]),
    ):
        add(value)
    normal = torch.distributions.normal.Normal(0, 1)
    scales = [normal.icdf(torch.tensor(s, dtype=torch.float32)).item() for s in hp["activation_sparsity_pattern"]]
    writer.add_activation_sparsity_scale(scales)
    writer.add_sliding_window_pattern([t == "sliding_attention" for t in hp["layer_types"]])


def gemma3n_tensors(tensors: dict, hp: dict):
    """Gemma3NModel.filter_tensors and modify_tensors: AltUp's projections stacked, its scale named a weight, the
    embeddings padded with zero rows to the whole vocabulary."""
    K = hp["altup_num_inputs"]
    for name, data in tensors.items():
        if ".altup_projections." in name or ".altup_unembed_projections." in name:
            if name.endswith(".0.weight"):
                stem = name.rsplit(".", 2)[0]
                yield stem + ".weight", np.stack([tensors[f"{stem}.{j}.weight"] for j in range(K - 1)])
        elif name.endswith("correct_output_scale"):
            yield name + ".weight", data
        elif name.endswith(("embed_tokens.weight", "embed_tokens_per_layer.weight")):
            pad = np.zeros((hp["vocab_size"] - data.shape[0], data.shape[1]), dtype=data.dtype)
            yield name, np.concatenate([data, pad])
        else:
            yield name, data


def gemma4_rope_freqs(cfg) -> np.ndarray:
    """Gemma4Model.generate_extra_tensors: 1 for each of the full layers' pairs that turn, 1e30 for the others."""
    hp = cfg.to_dict()
    full, m = hp["rope_parameters"]["full_attention"], _full(hp, "head_dim", "global_head_dim")
    share = full.get("partial_rotary_factor", 1.0)  # (the converter asserts a proportional rope; a default one, of
    turned = int(m * share / 2)  # the whole head, is the same model with every factor 1)
    return np.array([1.0] * turned + [1e30] * (m // 2 - turned), dtype=np.float32)


def _gemma4(tensors: dict):
    """Gemma4Model.filter_tensors and modify_tensors: layer_scalar and the experts' stacks named as weights, the
    router's scale and the experts' scales given their GGUF names at once (`blk.` names pass as they are)."""
    for name, data in tensors.items():
        layer = name.split(".")[2] if name.startswith("model.layers.") else None
        if name.endswith(("layer_scalar", "experts.gate_up_proj", "experts.down_proj")):
            yield name + ".weight", data
        elif name.endswith("router.scale"):
            yield f"blk.{layer}.ffn_gate_inp.scale", data
        elif name.endswith("router.per_expert_scale"):
            yield f"blk.{layer}.ffn_down_exps.scale", data
        else:
            yield name, data
