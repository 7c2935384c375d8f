"""MiMo-V2-Flash (MiMoV2FlashForCausalLM, XiaomiMiMo/MiMo-V2-Flash): LLaMA's block with heads of head_dim for
queries and keys and v_head_dim for values (v_m), the values times attention_value_scale (value_scale), a full layer
first and every sixth, the others sliding over sliding_window keys with twice the key/value heads (local_G) and a
sink per head (local_sinks); each kind turns int(0.334 head_dim) entries of each head by its own base (5,000,000
and 10,000); the first layer dense, then DeepSeek-V3's routing: sigmoid scores, a correction bias (a buffer) to
choose within the best topk_group of n_group groups, the chosen renormalised (norm_topk_prob) and scaled, no shared
experts. Each kind's share is held as the one that turns its int(share head_dim) entries (gguf_keys.rotated_share),
the same model read from its GGUF file (mimo2: this module's gguf_spec)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import SLIDING, kind_of
from .config_keys import feedforward_kinds, kind_rope_parameters, layer_types, shared_keys
from .deepseek import routed_experts, router_groups
from .deepseek_gguf import routed_layout
from .expert_checkpoints import DEEPSEEK_MOE_GQA
from .gguf_keys import llama_stack, rotated_share, sliding_kinds, sliding_pattern, windowed
from .keys import Keys
from .layout import Family
from .parts import kind_rope, kind_rope_keys, kv_heads, llama_block, typed_layers
from .record import Gguf, Record

BASES = {"full_attention": 5_000_000.0, "sliding_attention": 10_000.0}  # MiMoV2FlashConfig's
SHARE = 0.334  # its partial_rotary_factor where a layer kind names none


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (MiMoV2FlashConfig's defaults: 64 heads, 4 key/value heads, of 192; values of 128)."""
    N, H, d = c.count("num_hidden_layers", 48), c.count("num_attention_heads", 64), c.count("hidden_size", 4096)
    G, m, v = c.count("num_key_value_heads", 4), c.count("head_dim", 192), c.count("v_head_dim", 128)
    window = c.count("sliding_window", 129)
    if c.data.get("sliding_window_size") is not None:  # (its config class's other name: one key more)
        window = c.count("sliding_window_size", None) + 1
    kinds = c.data.get("layer_types") or [
        "full_attention" if i == 0 or not (i + 1) % 6 else "sliding_attention" for i in range(N)
    ]
    full = kind_rope(c, "full_attention", (BASES["full_attention"], SHARE), SHARE)
    local = kind_rope(c, "sliding_attention", (BASES["sliding_attention"], SHARE), SHARE)
    full, local = ((base, rotated_share(int(m * share), m)) for base, share in (full, local))
    scale = 1.0 if c.data.get("attention_value_scale", 0.707) is None else c.number("attention_value_scale", 0.707)
    out: dict[str, Any] = {
        "N": N,
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size", 16384),
        "V": c.count("vocab_size", 152576),
        **kv_heads(c, "num_key_value_heads", G, H),
        **llama_block(c, 1e-5, 131072),
    }
    out |= {"out_bias": False} if out["attention_bias"] else {}  # (o_proj has none)
    out |= {"v_m": v} if v != m else {}
    out |= {"value_scale": scale} if scale != 1.0 else {}  # (null: none)
    out = kind_rope_keys(out | typed_layers(c, N, window, kinds), full, local)
    if H % (2 * G):
        raise c.fail("num_key_value_heads", G, f"a divisor of num_attention_heads / 2 = {H / 2} (sliding: 2 G)")
    if out.get("attention_layers"):  # the sliding layers' key/value heads doubled, and sinks
        out |= {"local_G": 2 * G, "local_sinks": True}
    elif "window" in out:  # (every layer's when all slide)
        out |= {"G": 2 * G, "attn_sinks": True}
    experts = routed_experts(c, N, 256, 0, 2048, 1, k=8, listed=True)
    if not experts:
        return out
    router = {"router_score": "sigmoid", "router_bias": True, "router_renorm": c.flag("norm_topk_prob", True)}
    factor = c.data.get("routed_scaling_factor", 1.0)
    router |= {"router_scale": c.number("routed_scaling_factor", 1.0)} if factor not in (None, 1.0) else {}
    out |= experts | router
    return out | router_groups(c, out, 1, 1, "top2")


def config(spec: Spec) -> dict[str, Any]:
    """spec -> MiMo-V2-Flash's config.json (rope_parameters per layer type, every layer's kinds listed)."""
    out = shared_keys(spec) | {"attention_bias": spec.attention_bias, "v_head_dim": spec.value_size}
    out |= {"num_key_value_heads": spec.kv_heads if spec.local_G or spec.window is None else spec.kv_heads // 2}
    out |= {"rope_parameters": kind_rope_parameters(spec), "layer_types": layer_types(spec)}
    out |= {"sliding_window": spec.window or 129, "attention_value_scale": spec.value_scale}
    out["mlp_layer_types"] = ["sparse" if kind == "routed" else "dense" for kind in feedforward_kinds(spec)]
    if spec.E:
        out |= {"n_routed_experts": spec.E, "num_experts_per_tok": spec.k, "moe_intermediate_size": spec.expert_r}
        out |= {"routed_scaling_factor": spec.router_scale, "norm_topk_prob": spec.router_renorm}
        out |= {"n_group": spec.router_groups or 1, "topk_group": spec.router_topk_groups or 1}
    return out


MIMO = Family(
    DEEPSEEK_MOE_GQA.block,
    DEEPSEEK_MOE_GQA.names | {"attention.sinks": "self_attn.attention_sink_bias"},
    DEEPSEEK_MOE_GQA.globals_,
)


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """mimo2.* -> spec, as llama.cpp's mimo2 runs it: block_count counts the prediction layers after the model's
    (nextn_predict_layers), each block's key/value heads and kind as lists, one rotated count for both kinds, the
    values' size and scale, the attention's sinks where a block has them (the sliding ones'), the MLP where a block
    has no router, the mixture sigmoid-scored with the correction bias and always renormalised, never scaled."""
    N = c.count("block_count") - c.index("nextn_predict_layers", 0)
    H, m = c.count("attention.head_count"), c.count("attention.key_length")
    lists = Keys({k: v[:N] if isinstance(v, list) else v for k, v in c.data.items()}, c.source, c.prefix)
    heads = lists.data.get("attention.head_count_kv")
    if not isinstance(heads, list) or len(heads) != N or not all(isinstance(h, int) and h > 0 for h in heads):
        raise c.fail("attention.head_count_kv", heads, f"a list of a positive count per block, {N} at least")
    window, kinds = sliding_kinds(lists, N, 6) or (0, ["full"] * N)
    full, sliding = (heads[kinds.index(kind)] if kind in kinds else None for kind in ("full", "sliding"))
    theta, rotated = c.number("rope.freq_base", BASES["full_attention"]), c.count("rope.dimension_count", m)
    out = llama_stack(c, header, N, H, m, 1e-5) | {"G": full or sliding, "rope_theta": theta}
    out |= {"rope_fraction": rotated_share(rotated, m)} if rotated != m else {}
    out |= {"v_m": c.count("attention.value_length")} if c.count("attention.value_length", m) != m else {}
    out |= {"value_scale": c.number("attention.value_scale")} if c.number("attention.value_scale", 1.0) != 1 else {}
    out |= windowed(window, kinds)
    if "full" in kinds and "sliding" in kinds:
        out |= {"local_G": sliding} if sliding != full else {}
        local_theta = c.number("rope.freq_base_swa", theta)
        out |= {"rope_local_theta": local_theta} if local_theta != theta else {}
        first = kinds.index("sliding")
        out |= {"local_sinks": True} if f"blk.{first}.attn_sinks.weight" in header.tensors else {}
    elif "sliding" in kinds and "blk.0.attn_sinks.weight" in header.tensors:
        out["attn_sinks"] = True
    if not c.has("expert_count"):
        return out
    routed = [f"blk.{i}.ffn_gate_inp.weight" in header.tensors for i in range(N)]
    out |= {"E": c.count("expert_count"), "k": c.count("expert_used_count"), "router_renorm": True}
    out |= {"expert_r": c.count("expert_feed_forward_length"), "router_score": "sigmoid"}
    out |= {"router_bias": f"blk.{routed.index(True)}.exp_probs_b.bias" in header.tensors} if any(routed) else {}
    out |= {"feedforward_layers": ["routed" if x else "dense" for x in routed]} if not all(routed) else {}
    groups = c.index("expert_group_count", 1)  # (llama.cpp reads the groups of any architecture)
    if groups > 1:
        out |= {"router_groups": groups, "router_topk_groups": c.count("expert_group_used_count")}
        out["router_group_score"] = "top2"
    return out


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> MimoV2Model's mimo2.* keys beyond the shared ones (written without prediction layers, as its
    converter with --no-mtp: tfm's model has none)."""
    sliding = [kind_of(spec.attention_layers, i, SLIDING) == SLIDING for i in range(spec.N)]
    heads = [(spec.local_G or spec.kv_heads) if flag else spec.kv_heads for flag in sliding]
    out: dict[str, Any] = {"attention.head_count_kv": heads, "attention.value_length": spec.value_size}
    out |= sliding_pattern(spec)
    if spec.window is not None:
        out["rope.freq_base_swa"] = float(spec.rope_local_theta or spec.rope_theta)
    if spec.value_scale != 1.0:
        out["attention.value_scale"] = float(spec.value_scale)
    if spec.E:  # (TextModel's, from n_group and topk_group)
        out |= {"expert_group_count": spec.router_groups or 1, "expert_group_used_count": spec.router_topk_groups or 1}
    return out


_GGUF_NAMES = {
    "attention.W_Q": "attn_q.weight",
    "attention.W_K": "attn_k.weight",
    "attention.W_V": "attn_v.weight",
    "attention.W_O": "attn_output.weight",
    "attention.sinks": "attn_sinks.weight",
    "norm1.gamma": "attn_norm.weight",
    "norm2.gamma": "ffn_norm.weight",
    "ff.W1": "ffn_gate.weight",
    "ff.W3": "ffn_up.weight",
    "ff.W2": "ffn_down.weight",
}
_GLOBALS = {"embedding.E": "token_embd.weight", "head.W": "output.weight", "final_norm.gamma": "output_norm.weight"}
GGUF = Gguf("mimo2", routed_layout(_GGUF_NAMES, _GLOBALS), gguf_spec, gguf_metadata, base="none")
RECORD = Record("mimo_v2_flash", "MiMoV2FlashForCausalLM", spec, MIMO, config, GGUF, config_alone=True)

__all__ = ["RECORD"]
