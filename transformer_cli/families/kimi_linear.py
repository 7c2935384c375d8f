"""Kimi-Linear (KimiLinearForCausalLM, Moonshot's): pre-norm blocks whose mixer is Kimi Delta Attention
(components/kda.py) in the linear_attention layers of layer_types and DeepSeek-V3's latent attention in the
full_attention ones, without any rotary positions (transformers 5.24's MLA here turns nothing: its rotated part is
the heads' shared key part, as projected). Its feedforwards are DeepSeek-V3's: dense MLPs where mlp_layer_types
says (default: the first first_k_dense_replace), else experts routed by sigmoid scores with a correction bias,
groups scored by their best two, the chosen weights renormalised (moe_renormalize) and scaled, and shared experts.

Which layers are which: layer_types, else linear_attn_config's kda_layers and full_attn_layers (counted from 1), else
every fourth from layer 4 (counted from 0: i > 0 and i % 4 == 0) attending. The config's own names for the mixture
(num_experts, num_experts_per_token, num_shared_experts, moe_renormalize, num_expert_group) and transformers'
(num_local_experts, num_experts_per_tok, n_shared_experts, norm_topk_prob, n_group) are both read. Keys of published
configs that transformers never reads (mla_use_nope, rope_theta, moe_layer_freq, ...) are ignored, and said so.
"""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .deepseek import config as deepseek_config
from .deepseek import latent_model, router_groups, router_scale
from .expert_checkpoints import DEEPSEEK
from .keys import Keys
from .layout import Family
from .record import Record

ALIASES = {  # transformers' name: the config.json's (KimiLinearConfig's attribute_map)
    "n_routed_experts": "num_experts",
    "num_experts_per_tok": "num_experts_per_token",
    "n_shared_experts": "num_shared_experts",
    "norm_topk_prob": "moe_renormalize",
    "n_group": "num_expert_group",
}


IGNORED = {  # keys of published Kimi-Linear configs that transformers 5.24 never reads
    "mla_use_nope": "5.24's Kimi-Linear turns no position in any layer",
    "rope_theta": "5.24's Kimi-Linear turns no position in any layer",
    "rope_scaling": "5.24's Kimi-Linear turns no position in any layer",
    "moe_layer_freq": "5.24's Kimi-Linear routes the layers mlp_layer_types (or first_k_dense_replace) says",
    "use_grouped_topk": "5.24's Kimi-Linear always routes by groups",
    "moe_router_activation_func": "5.24's Kimi-Linear always scores by sigmoid",
}


def _kinds(c: Keys, N: int) -> list[str]:
    """Each layer's mixer: kda or latent."""
    linear = c.nested("linear_attn_config")
    kinds = c.data.get("layer_types")
    if kinds is None and linear is not None and linear.has("kda_layers") and linear.has("full_attn_layers"):
        full = set(linear.data["full_attn_layers"])
        kinds = ["full_attention" if i + 1 in full else "linear_attention" for i in range(N)]
    if kinds is None:
        kinds = ["full_attention" if i > 0 and i % 4 == 0 else "linear_attention" for i in range(N)]
    if not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= {"linear_attention", "full_attention"}:
        raise c.fail("layer_types", kinds, f"a list of {N} 'linear_attention' or 'full_attention'")
    return ["kda" if kind == "linear_attention" else "latent" for kind in kinds]


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (KimiLinearConfig's defaults: 27 layers of 2,304, 32 heads, 256 experts of 1,024)."""
    for key, why in IGNORED.items():
        c.ignored(key, why)
    data = {ours: c.data[theirs] for ours, theirs in ALIASES.items() if theirs in c.data and ours not in c.data}
    if "num_local_experts" in c.data:
        data["n_routed_experts"] = c.data["num_local_experts"]
    keys = Keys({"first_k_dense_replace": 1} | c.data | data, c.source, notes=c.notes)
    linear = c.nested("linear_attn_config") or Keys({}, c.source, "linear_attn_config.")
    out = latent_model(
        keys, q_rank=None, E=256, shared=1, size=1024, dense=1, max_positions=1048576, interleaved=False, listed=True
    )
    out = {k: v for k, v in out.items() if not k.startswith("rope_") or k == "rope_m"} | {"positional": "none"}
    out |= {"norm_eps": keys.number("rms_norm_eps", 1e-5), "mixer_layers": _kinds(c, out["N"])}
    out |= {
        "linear_v_heads": keys.count("linear_num_heads", None) or linear.count("num_heads", 32),
        "linear_v_dim": keys.count("linear_head_dim", None) or linear.count("head_dim", 128),
        "conv_kernel": keys.count("linear_conv_kernel_dim", None) or linear.count("short_conv_kernel_size", 4),
    }
    if "E" in out:  # (DeepSeek-V3's router, always grouped by their best two, always with the correction bias)
        out |= {"router_score": "sigmoid", "router_bias": True, "router_renorm": keys.flag("norm_topk_prob", True)}
        out |= router_groups(keys, out, 1, 1, "top2") | router_scale(keys, 2.446)
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Kimi-Linear's config.json: DeepSeek-V3's keys, the layers' kinds, the linear attention's sizes."""
    out = {k: v for k, v in deepseek_config(spec).items() if not k.startswith("rope")}
    kinds = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    out |= {"layer_types": ["linear_attention" if kind == "kda" else "full_attention" for kind in kinds]}
    out |= {"linear_num_heads": spec.linear_v_heads, "linear_head_dim": spec.linear_v_dim}
    out |= {"linear_conv_kernel_dim": spec.conv_kernel, "moe_renormalize": spec.router_renorm}
    out.pop("scoring_func", None), out.pop("topk_method", None)
    return out


_KDA = {
    "W_q": "q_proj.weight",
    "W_k": "k_proj.weight",
    "W_v": "v_proj.weight",
    "q.kernel": "q_conv1d.weight",
    "k.kernel": "k_conv1d.weight",
    "v.kernel": "v_conv1d.weight",
    "W_fa": "f_a_proj.weight",
    "W_fb": "f_b_proj.weight",
    "dt_bias": "dt_bias",
    "A_log": "A_log",
    "W_b": "b_proj.weight",
    "W_ga": "g_a_proj.weight",
    "W_gb": "g_b_proj.weight",
    "norm.gamma": "o_norm.weight",
    "W_out": "o_proj.weight",
}
_EXPERTS = {"gate_proj": "w1", "up_proj": "w3", "down_proj": "w2"}  # (each expert's, by Moonshot's names)


def _moonshot(name: str) -> str:
    """DeepSeek-V3's checkpoint name as Kimi-Linear's files (Moonshot's, as transformers saves them) name it."""
    name = name.replace("mlp.", "block_sparse_moe.")
    for ours, theirs in _EXPERTS.items():
        name = name.replace(f"experts.{{e}}.{ours}", f"experts.{{e}}.{theirs}")
    return name


KIMI = Family(
    DEEPSEEK.block,
    {k: _moonshot(v) for k, v in DEEPSEEK.names.items()} | {f"kda.{k}": f"self_attn.{v}" for k, v in _KDA.items()},
    DEEPSEEK.globals_,
    held_as={"self_attn.A_log": lambda spec, shape: (1, 1, *shape, 1)},  # (one per head, as (1, 1, H, 1))
)
RECORD = Record("kimi_linear", "KimiLinearForCausalLM", spec, KIMI, config, config_alone=True)

__all__ = ["RECORD"]
