"""The metadata and tensor changes of llama.cpp's convert_hf_to_gguf.py for the architectures whose blocks mix by
more than attention (issue 45): LFM2Model and LFM2MoeModel (conversion/lfm2.py of the llama-cpp-python 0.3.36
sdist, llama.cpp, MIT), for tests/formats/gguf_files.py's converter-like files."""

from __future__ import annotations

import gguf
import numpy as np

ARCHS = {"lfm2": "LFM2", "lfm2_moe": "LFM2MOE", "mamba2": "MAMBA2", "mamba": "MAMBA", "falcon_mamba": "MAMBA"}
ARCHS |= {"jamba": "JAMBA", "glm_moe_dsa": "GLM_DSA", "qwen3_next": "QWEN3NEXT", "granitemoehybrid": "GRANITE_HYBRID"}
ARCHS |= {
    "falcon_h1": "FALCON_H1",
    "nemotron_h": "NEMOTRON_H",
    "qwen3_5_text": "QWEN35",
    "qwen3_5_moe_text": "QWEN35MOE",
}
OWN_LISTS = ("mamba2", "mamba", "falcon_mamba", "jamba", "granitemoehybrid", "falcon_h1", "nemotron_h")  # own lists
PADDED = {"mamba2": 16, "mamba": 8, "falcon_mamba": 8, "jamba": 1, "granitemoehybrid": 8, "falcon_h1": 1}  # set_vocab:
# the vocabulary
# rounded up to
# the per-expert tensors and their stacked name (the mixtral mapping the converter's name hits)
EXPERTS = {
    "lfm2_moe": (
        "feed_forward.experts.{e}.{w}.weight",
        ("w1", "w2", "w3"),
        "layers.{i}.feed_forward.experts.{w}.weight",
    )
}
EXPERTS["jamba"] = (
    "feed_forward.experts.{e}.{w}.weight",
    ("gate_proj", "up_proj", "down_proj"),
    "model.layers.{i}.mlp.experts.{w}.weight",
)


def _feed_forward_length(config: dict) -> int:
    """LFM2Model._add_feed_forward_length: the MLP's width adjusted, rounded whatever the multiplier."""
    width = config.get("block_ff_dim") or config["intermediate_size"]
    if config["block_auto_adjust_ff_dim"]:
        width = int(2 * width / 3)
        if config["block_ffn_dim_multiplier"] is not None:
            width = int(config["block_ffn_dim_multiplier"] * width)
        multiple = config["block_multiple_of"]
        width = multiple * ((width + multiple - 1) // multiple)
    return width


def own_keys(writer, cfg) -> None:
    """LFM2Model's and LFM2MoeModel's set_gguf_parameters beyond TextModel's: each layer's key/value heads (0 for
    a convolution's layer), the kernel, the vocabulary's size; LFM2's adjusted width and norm_eps; LFM2-MoE's
    mixture (no scale, no renormalisation flag)."""
    if cfg.model_type in ("qwen3_next", *QWEN3_5):
        _qwen3_next(writer, cfg)
        if cfg.model_type in QWEN3_5:  # (_Qwen35MRopeMixin: the sections; 11, 11, 10 of Qwen3.5's 32 pairs, dealt
            pairs = int(cfg.head_dim * cfg.rope_parameters["partial_rotary_factor"]) // 2  # alike for fewer: the
            writer.add_rope_dimension_sections([-(-pairs // 3), (pairs + 1) // 3, pairs // 3, 0])  # converter's
            # 11, 11, 10 always, which llama.cpp refuses below 32 rotated dims)
        return
    config = cfg.to_dict()
    kinds = config["layer_types"]
    writer.add_head_count_kv([cfg.num_key_value_heads if kind == "full_attention" else 0 for kind in kinds])
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_shortconv_l_cache(cfg.conv_L_cache)
    writer.add_layer_norm_rms_eps(cfg.norm_eps)
    if cfg.model_type == "lfm2":
        writer.add_feed_forward_length(_feed_forward_length(config))
    else:
        writer.add_leading_dense_block_count(cfg.num_dense_layers)
        writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)


def own_list(writer, cfg) -> None:
    """Mamba2Model's and MambaModel's set_gguf_parameters: the mixer's ssm.* keys, no feedforward or heads, an
    arbitrary context. (Their set_vocab rounds the vocabulary up: the tests' models have a multiple of it.)"""
    assert cfg.vocab_size % PADDED.get(cfg.model_type, 1) == 0, "the converter would pad the vocabulary"
    if cfg.model_type != "mamba2":
        OWN[cfg.model_type](writer, cfg)
        return
    _state_space_stack(writer, cfg)
    inner = cfg.expand * cfg.hidden_size
    writer.add_ssm_inner_size(inner)
    writer.add_ssm_state_size(cfg.state_size)
    writer.add_ssm_time_step_rank(inner // cfg.head_dim)
    writer.add_ssm_group_count(cfg.n_groups)
    writer.add_layer_norm_rms_eps(cfg.layer_norm_epsilon)


def _state_space_stack(writer, cfg) -> None:
    """What Mamba2Model and MambaModel both write: an arbitrary context, no feedforward or heads, the kernel."""
    writer.add_context_length(2**20)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(0)
    writer.add_head_count(0)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_ssm_conv_kernel(cfg.conv_kernel)


def _mamba(writer, cfg) -> None:
    """MambaModel.set_gguf_parameters (Falcon Mamba's dt_b_c_rms true)."""
    _state_space_stack(writer, cfg)
    writer.add_ssm_inner_size(cfg.intermediate_size)
    writer.add_ssm_state_size(cfg.state_size)
    writer.add_ssm_time_step_rank(cfg.time_step_rank)
    writer.add_layer_norm_rms_eps(cfg.layer_norm_epsilon)
    writer.add_ssm_dt_b_c_rms(cfg.model_type == "falcon_mamba")


def _jamba(writer, cfg) -> None:
    """JambaModel.set_gguf_parameters: the attention layers' key/value heads by the period and offset."""
    N, offset, period = cfg.num_hidden_layers, cfg.attn_layer_offset, cfg.attn_layer_period
    kv = [0] * offset + [cfg.num_key_value_heads if (i - offset) % period == 0 else 0 for i in range(offset, N)]
    writer.add_block_count(N)
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(kv)
    writer.add_ssm_conv_kernel(cfg.mamba_d_conv)
    writer.add_ssm_inner_size(cfg.mamba_expand * cfg.hidden_size)
    writer.add_ssm_state_size(cfg.mamba_d_state)
    writer.add_ssm_time_step_rank(cfg.mamba_dt_rank)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_expert_count(cfg.num_experts)
    writer.add_expert_used_count(cfg.num_experts_per_tok)


def _ssm(writer, kernel: int, state: int, groups: int, inner: int, heads: int) -> None:
    """The ssm.* keys of a Mamba-2 mixer (or of a linear attention, in the same keys: Qwen3-Next's)."""
    writer.add_ssm_conv_kernel(kernel)
    writer.add_ssm_state_size(state)
    writer.add_ssm_group_count(groups)
    writer.add_ssm_inner_size(inner)
    writer.add_ssm_time_step_rank(heads)


def _granite_hybrid(writer, cfg) -> None:
    """GraniteHybridModel.set_gguf_parameters (conversion/granite.py) as it would write a folder transformers 5.24
    saved, with its three mistakes mended (llama.cpp cannot load or mis-runs what it writes): the attention layers
    are those layer_types names full_attention (it looks for "attention"), rope.scaling.finetuned says whether
    position_embedding_type is rope (it writes false), and a dense model's width is the shared MLP's, with no
    expert counts (it writes intermediate_size and num_experts_per_tok)."""
    N, E = cfg.num_hidden_layers, cfg.num_local_experts
    rotary = cfg.position_embedding_type == "rope"
    writer.add_block_count(N)
    writer.add_context_length(cfg.max_position_embeddings if rotary else 2**20)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(cfg.intermediate_size if E else cfg.shared_intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv([cfg.num_key_value_heads if t == "full_attention" else 0 for t in cfg.layer_types])
    writer.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    if E:
        writer.add_expert_count(E)
        writer.add_expert_used_count(cfg.num_experts_per_tok)
        writer.add_expert_shared_feed_forward_length(cfg.shared_intermediate_size)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    writer.add_attention_scale(cfg.attention_multiplier)
    writer.add_embedding_scale(cfg.embedding_multiplier)
    writer.add_residual_scale(cfg.residual_multiplier)
    writer.add_logit_scale(cfg.logits_scaling)
    _ssm(writer, cfg.mamba_d_conv, cfg.mamba_d_state, cfg.mamba_n_groups, cfg.mamba_expand * cfg.hidden_size,
         cfg.mamba_n_heads)  # fmt: skip
    writer.add_rope_scaling_finetuned(rotary)


def _falcon_h1(writer, cfg) -> None:
    """FalconH1Model.set_gguf_parameters (conversion/falcon_h1.py): Mamba2Model's keys, then LLaMA's sizes over
    them; no multiplier (folded into the weights: _falcon_h1_folded)."""
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_block_count(cfg.num_hidden_layers)
    _ssm(writer, cfg.mamba_d_conv, cfg.mamba_d_state, cfg.mamba_n_groups, cfg.mamba_d_ssm, cfg.mamba_n_heads)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_key_length(cfg.head_dim)
    writer.add_value_length(cfg.head_dim)
    writer.add_rope_freq_base(cfg.rope_parameters["rope_theta"])


def _falcon_h1_folded(tensors: dict, cfg) -> dict:
    """FalconH1Model.modify_tensors: each multiplier times the weight it multiplies, in its order (k: the key's
    multiplier, then attention_in's; in_proj: ssm_in's, then each of z, x, B, C, dt's rows). The head of a tied model
    held apart (what llama.cpp needs: the converter writes none, and llama.cpp would use the scaled embedding), each
    scaled from the embedding as stored."""
    if "lm_head.weight" not in tensors:
        tensors = tensors | {"lm_head.weight": tensors["model.embed_tokens.weight"]}
    inner, states = cfg.mamba_d_ssm, cfg.mamba_n_groups * cfg.mamba_d_state
    starts = np.cumsum([0, inner, inner, states, states])
    out = {}
    for name, data in tensors.items():
        times = lambda x, s: x * x.dtype.type(s)  # noqa: E731
        if "down_proj" in name:
            data = times(data, cfg.mlp_multipliers[1])
        elif "gate_proj" in name:
            data = times(data, cfg.mlp_multipliers[0])
        elif "k_proj" in name:
            data = times(times(data, cfg.key_multiplier), cfg.attention_in_multiplier)
        elif "q_proj" in name or "v_proj" in name:
            data = times(data, cfg.attention_in_multiplier)
        elif "o_proj" in name:
            data = times(data, cfg.attention_out_multiplier)
        elif "out_proj" in name:
            data = times(data, cfg.ssm_out_multiplier)
        elif "in_proj" in name:
            data = times(data, cfg.ssm_in_multiplier)
            for j, start in enumerate(starts):
                stop = starts[j + 1] if j + 1 < len(starts) else len(data)
                data[start:stop] = times(data[start:stop], cfg.ssm_multipliers[j])
        elif "lm_head" in name:
            data = times(data, cfg.lm_head_multiplier)
        elif "embed_tokens" in name:
            data = times(data, cfg.embedding_multiplier)
        out[name] = data
    return out


QWEN3_5 = ("qwen3_5_text", "qwen3_5_moe_text")


def _tiled(tensors: dict, cfg) -> dict:
    """_LinearAttentionVReorderBase.modify_tensors (conversion/qwen.py): the value heads from grouped by key head to
    tiled, in every tensor of theirs (the v rows of in_proj_qkv and of the convolution, in_proj_z, in_proj_a,
    in_proj_b, A_log, dt_bias, and out_proj's columns)."""
    nk, nv, dk, dv = (cfg.linear_num_key_heads, cfg.linear_num_value_heads, cfg.linear_key_head_dim,
                      cfg.linear_value_head_dim)  # fmt: skip

    def tiled(x, width, axis=0):
        x = np.moveaxis(x, axis, 0)
        moved = x.reshape(nk, nv // nk, width, *x.shape[1:]).swapaxes(0, 1).reshape(x.shape)
        return np.moveaxis(moved, 0, axis)

    out = {}
    for name, data in tensors.items():
        if "linear_attn." in name and nk != nv:
            if name.endswith(("in_proj_qkv.weight", "conv1d.weight")):
                data = np.concatenate([data[: 2 * nk * dk], tiled(data[2 * nk * dk :], dv)])
            elif name.endswith("in_proj_z.weight"):
                data = tiled(data, dv)
            elif name.endswith(("in_proj_a.weight", "in_proj_b.weight", "A_log", "dt_bias")):
                data = tiled(data, 1)
            elif name.endswith("out_proj.weight"):
                data = tiled(data, dv, axis=1)
        out[name] = data
    return out


def arch_of(cfg, arch: str) -> str:
    """NemotronHModel's architecture: nemotron_h_moe where a block routes (the converter as vendored chooses it
    whenever the config has num_experts_per_tok, which transformers 5.24's always has: a dense model's file it makes
    llama.cpp cannot load)."""
    return "NEMOTRON_H_MOE" if cfg.model_type == "nemotron_h" and "moe" in cfg.layers_block_type else arch


def _nemotron_h(writer, cfg) -> None:
    """NemotronHModel.set_gguf_parameters over GraniteHybridModel's (conversion/nemotron.py), each block's width by
    its kind (the converter as vendored leaves a dense model's MLP blocks at 0)."""
    kinds, moe = cfg.layers_block_type, "moe" in cfg.layers_block_type
    width = {"mlp": cfg.intermediate_size, "moe": cfg.moe_intermediate_size}
    writer.add_block_count(len(kinds))
    writer.add_context_length(2**20)  # (no positions: GraniteHybridModel's)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length([width.get(kind, 0) for kind in kinds])
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv([cfg.num_key_value_heads if kind == "full_attention" else 0 for kind in kinds])
    writer.add_layer_norm_eps(cfg.layer_norm_epsilon)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    _ssm(writer, cfg.conv_kernel, cfg.ssm_state_size, cfg.n_groups, cfg.mamba_num_heads * cfg.mamba_head_dim,
         cfg.mamba_num_heads)  # fmt: skip
    writer.add_rope_scaling_finetuned(False)
    writer.add_key_length(cfg.head_dim)
    writer.add_value_length(cfg.head_dim)
    if moe:
        writer.add_expert_count(cfg.n_routed_experts)
        writer.add_expert_used_count(cfg.num_experts_per_tok)
        writer.add_expert_feed_forward_length(cfg.moe_intermediate_size)
        writer.add_expert_shared_feed_forward_length(cfg.moe_shared_expert_intermediate_size)
        writer.add_expert_shared_count(cfg.n_shared_experts)
        writer.add_expert_weights_norm(cfg.norm_topk_prob)
        writer.add_expert_weights_scale(cfg.routed_scaling_factor)
        grouped = cfg.n_group > 1 and cfg.topk_group < cfg.n_group  # (all groups chosen: llama.cpp aborts, one group
        writer.add_expert_group_count(cfg.n_group if grouped else 1)  # routes alike)
        writer.add_expert_group_used_count(cfg.topk_group if grouped else 1)


def _nemotron_h_experts(tensors: dict, cfg) -> dict:
    """NemotronHModel.modify_tensors: each routed block's experts stacked (named as its mapping names them), the
    correction bias as a bias."""
    out = {n.replace("e_score_correction_bias", "e_score_correction.bias"): t for n, t in tensors.items()}
    for i, kind in enumerate(cfg.layers_block_type):
        if kind == "moe":
            for w in ("up_proj", "down_proj"):
                names = [f"backbone.layers.{i}.mixer.experts.{e}.{w}.weight" for e in range(cfg.n_routed_experts)]
                out[f"model.layers.{i}.mlp.experts.{w}.weight"] = np.stack([out.pop(n) for n in names])
    return out


def _qwen3_next(writer, cfg) -> None:
    """Qwen3NextModel.set_gguf_parameters beyond Qwen2MoeModel's (conversion/qwen.py): the linear attention's sizes
    in ssm.* keys, each layer's kind (add_recurrent_layers, newer than the pinned gguf package: by name), the
    rotated share of each head."""
    _ssm(writer, cfg.linear_conv_kernel_dim, cfg.linear_key_head_dim, cfg.linear_num_key_heads,
         cfg.linear_value_head_dim * cfg.linear_num_value_heads, cfg.linear_num_value_heads)  # fmt: skip
    writer.add_array(f"{writer.arch}.attention.recurrent_layers", [t == "linear_attention" for t in cfg.layer_types])
    writer.add_full_attention_interval(getattr(cfg, "full_attention_interval", 4))
    writer.add_rope_dimension_count(int(cfg.head_dim * cfg.rope_parameters.get("partial_rotary_factor", 0.25)))


def _qkvz(data: np.ndarray, cfg) -> tuple[np.ndarray, np.ndarray]:
    """Qwen3NextModel.modify_tensors: in_proj_qkvz, each key head's [q; k; v; z] rows, as [q; k; v] of all heads
    (attn_qkv) and z (attn_gate)."""
    dk, dv = cfg.linear_key_head_dim, cfg.linear_value_head_dim
    nk, r = cfg.linear_num_key_heads, cfg.linear_num_value_heads // cfg.linear_num_key_heads
    heads = data.T.reshape(-1, nk, 2 * dk + 2 * r * dv)
    q, k, v, z = np.split(heads, np.cumsum([dk, dk, r * dv])[:3], axis=-1)
    flat = [x.reshape(data.shape[1], -1) for x in (q, k, v, z)]
    return np.ascontiguousarray(np.concatenate(flat[:3], axis=-1).T), np.ascontiguousarray(flat[3].T)


def dsa_keys(writer, cfg) -> None:
    """GlmMoeDsaModel.set_gguf_parameters beyond DeepseekV2Model's (conversion/glm.py): the rotated part's size, the
    indexer's sizes, each layer's kind (add_indexer_types, newer than the pinned gguf package: its key by name)."""
    writer.add_rope_dimension_count(cfg.qk_rope_head_dim)
    writer.add_indexer_head_count(cfg.index_n_heads)
    writer.add_indexer_key_length(cfg.index_head_dim)
    writer.add_indexer_top_k(cfg.index_topk)
    writer.add_array(f"{writer.arch}.attention.indexer.types", [kind == "full" for kind in cfg.indexer_types])


MAMBA2 = ("mamba2", "granitemoehybrid", "falcon_h1", "nemotron_h")  # (Mamba2Model.modify_tensors: A, D as (H, 1),
# the norm by groups)


OWN = {"mamba": _mamba, "falcon_mamba": _mamba, "jamba": _jamba, "granitemoehybrid": _granite_hybrid}  # (the
OWN |= {"falcon_h1": _falcon_h1, "nemotron_h": _nemotron_h}  # classes that write their own list; Mamba2Model's above)


def converted(tensors: dict, cfg) -> dict:
    """modify_tensors: the convolution's (d, 1, L) weight as (d, L); filter_tensors: LFM2-MoE's expert_bias as a
    bias. Qwen3NextModel: in_proj_qkvz as attn_qkv and attn_gate. Mamba2Model: dt_bias as dt_proj.bias,
    A = -exp(A_log) and D as (H, 1), the gated norm's gain as (n_groups, I / n_groups)."""
    out = {}
    if cfg.model_type == "falcon_h1":
        tensors = _falcon_h1_folded(tensors, cfg)
    if cfg.model_type == "nemotron_h":
        tensors = _nemotron_h_experts(tensors, cfg)
    if cfg.model_type in QWEN3_5:
        tensors = _tiled(tensors, cfg)
    for name, data in tensors.items():
        if name.endswith("in_proj_qkvz.weight"):
            out[name.replace("qkvz", "qkv")], out[name.replace("qkvz", "z")] = _qkvz(data, cfg)
            continue
        if "conv.conv" in name or "conv1d.weight" in name:
            data = np.squeeze(data, 1)
        if cfg.model_type in MAMBA2 and name.endswith((".A_log", ".D")):
            data = data.reshape(*data.shape, 1)
        if name.endswith(".A_log"):
            data = -np.exp(data)
        if cfg.model_type in MAMBA2 and name.endswith(("mixer.norm.weight", "mamba.norm.weight")) and data.ndim == 1:
            data = data.reshape(getattr(cfg, "n_groups", None) or cfg.mamba_n_groups, -1)
        if cfg.model_type == "granitemoehybrid" and not cfg.num_local_experts and "shared_mlp." in name:
            name = name.replace("shared_mlp.output_linear", "mlp.down_proj")  # (GraniteMoeModel: the dense MLP)
        out[name.replace(".expert_bias", ".expert_bias.bias").replace(".dt_bias", ".dt_proj.bias")] = data
    return out


__all__ = ["arch_of", "ARCHS", "EXPERTS", "OWN_LISTS", "converted", "dsa_keys", "own_keys", "own_list"]
