"""LongCat-Flash (LongcatFlashForCausalLM, meituan-longcat/LongCat-Flash-Chat): each of its num_layers layers is two
tfm blocks of DeepSeek's latent attention (its queries and latent scaled by (d / rank)^1/2: latent_scale) and a dense
MLP, the first block's normed stream also going to a mixture of n_routed_experts experts and zero_expert_num zero
experts (the column itself), whose output joins the stream after the second block's MLP (routed_later):

    h += attn0(ln0 h); x = post0(h); later = moe(x); h += mlp0(x)
    h += attn1(ln1 h); x = post1(h); h += mlp1(x) + later

The router scores the E + Z by a softmax, chooses with a correction bias (a buffer), weights the chosen unnormalised
times routed_scaling_factor. transformers allocates gate and up projections for the zero experts too (its
gate_up_proj is (E + Z, 2 r_e, d)), never read, and saves and loads them: tfm counts the E experts' alone (as the
published 560B does), accepts the others unread and writes them as zeros."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import _LLAMA_GLOBALS
from .config_keys import rope_keys
from .deepseek import latent_score_scale
from .expert_checkpoints import _deepseek_names
from .keys import Keys
from .layout import Family
from .layout import norm_names as _norm
from .parts import CAUSAL_PRE, activation, rope
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (LongcatFlashConfig's defaults: LongCat-Flash's own sizes)."""
    layers = c.count("num_layers", None) if c.has("num_layers") else c.count("num_hidden_layers", 56) // 2
    H, d = c.count("num_attention_heads", 64), c.count("hidden_size", 6144)
    G = c.nullable_count("num_key_value_heads", H) or H
    if G != H:
        raise c.refuse("num_key_value_heads", G, f"latent attention gives every one of the {H} heads its own keys")
    nope, rotated, v = c.count("qk_nope_head_dim", 128), c.count("qk_rope_head_dim", 64), c.count("v_head_dim", 128)
    if c.nullable_count("qk_head_dim", None) not in (None, nope + rotated):
        raise c.fail("qk_head_dim", c.data["qk_head_dim"], f"qk_nope_head_dim + qk_rope_head_dim = {nope + rotated}")
    head_dim = c.nullable_count("head_dim", 64) or d // H  # (what transformers' rotary tables are made for)
    if head_dim != rotated:
        raise c.fail("head_dim", head_dim, f"qk_rope_head_dim = {rotated} (transformers turns head_dim entries)")
    E, Z = c.count("n_routed_experts", 512, "num_local_experts"), c.index("zero_expert_num", 256)
    k = c.count("moe_topk", 12, "num_experts_per_tok")
    if k > E + Z:
        raise c.fail("moe_topk", k, f"at most n_routed_experts + zero_expert_num = {E + Z}")
    r = c.count("ffn_hidden_size", 12288, "intermediate_size")
    positions = c.count("max_position_embeddings", 131072)
    out = CAUSAL_PRE | {
        "N": 2 * layers,
        "H": H,
        "m": nope + rotated,
        "d": d,
        "r": r,
        "V": c.count("vocab_size", 131072),
        "tie_embeddings": c.flag("tie_word_embeddings", False),
        **rope(c, positions, rotated, 10_000_000.0),
        "rope_pairing": "interleaved",
        "scale": latent_score_scale(c, nope + rotated),
        "norm_type": "rmsnorm",
        "norm_eps": c.number("rms_norm_eps", 1e-5),
        "feedforward": "gated",
        "activation": activation(c, "hidden_act", "silu"),
        "ff_bias": False,
        "attention": "latent",
        "kv_rank": c.count("kv_lora_rank", 512),
        "q_rank": c.count("q_lora_rank", 1536),
        "rope_m": rotated,
        "latent_scale": True,
        "attention_bias": c.flag("attention_bias", False),
        "feedforward_layers": ["routed", "dense"],
        "E": E,
        "k": k,
        "expert_r": c.count("expert_ffn_hidden_size", 2048, "moe_intermediate_size"),
        "shared_r": r,  # the first block's MLP, beside its experts
        "routed_later": True,
        "router_renorm": False,
        "router_bias": True,
    }
    out |= {"v_m": v} if v != nope + rotated else {}
    out |= {"zero_experts": Z} if Z else {}
    if c.flag("router_bias", False):  # (LongcatFlashTopkRouter holds classifier.bias and never adds it)
        raise c.refuse("router_bias", True, "transformers 5.24 holds the router's bias but never adds it to its scores")
    factor = c.number("routed_scaling_factor", 6.0)
    return out | ({"router_scale": factor} if factor != 1.0 else {})


def config(spec: Spec) -> dict[str, Any]:
    """spec -> LongcatFlashConfig's config.json: every key, its own names."""
    rotated = spec.rotated_dims
    out = rope_keys(spec) | {
        "vocab_size": spec.V,
        "hidden_size": spec.d,
        "num_layers": spec.N // 2,
        "num_attention_heads": spec.H,
        "num_key_value_heads": spec.H,
        "max_position_embeddings": spec.context or 131072,
        "tie_word_embeddings": spec.tie_embeddings,
        "rms_norm_eps": spec.norm_eps,
        "hidden_act": spec.activation,
        "attention_bias": spec.attention_bias,
        "ffn_hidden_size": spec.r,
        "q_lora_rank": spec.q_rank,
        "kv_lora_rank": spec.kv_rank,
        "qk_nope_head_dim": spec.m - rotated,
        "qk_rope_head_dim": rotated,
        "head_dim": rotated,
        "v_head_dim": spec.value_size,
        "n_routed_experts": spec.E,
        "zero_expert_num": spec.zero_experts or 0,
        "moe_topk": spec.k,
        "expert_ffn_hidden_size": spec.expert_r,
        "routed_scaling_factor": spec.router_scale,
        "router_bias": False,
    }
    if spec.rope_scaling == "yarn":
        out["rope_scaling"] |= {"mscale": spec.rope_mscale, "mscale_all_dim": spec.rope_mscale_all_dim}
    return out


def _names() -> dict[str, str]:
    """Block i's names in layer i // 2, its sublayers' numbered {side}: its attention, norms and MLP (a routed
    block's shared expert, a dense block's feedforward); the router on the layer's MoE."""
    deepseek = _deepseek_names()  # (its latent attention's names, each layer's two numbered by {side})
    names = {ours: theirs.replace("self_attn.", "self_attn.{side}.") for ours, theirs in deepseek.items()}
    names = {ours: theirs for ours, theirs in names.items() if ours.startswith("attention.")}
    names |= {
        "ff.router": "mlp.router.classifier.weight",
        "ff.router_bias": "mlp.router.e_score_correction_bias",
    }
    for n, proj in (("1", "gate_proj"), ("3", "up_proj"), ("2", "down_proj")):
        names |= {
            f"ff.W{n}": f"mlps.{{side}}.{proj}.weight",
            f"ff.W{n}[{{e}}]": f"mlp.experts.{{e}}.{proj}.weight",
            f"ff.shared.W{n}": f"mlps.{{side}}.{proj}.weight",
        }
    return names | _norm("norm1", "input_layernorm.{side}") | _norm("norm2", "post_attention_layernorm.{side}")


# each expert's tensors by name, as transformers saves them (the zero experts' gate and up projections too)
LONGCAT = Family("model.layers.{i}.", _names(), _LLAMA_GLOBALS, pairs=True, zero_experts=("ff.W1[{e}]", "ff.W3[{e}]"))
RECORD = Record(
    "longcat_flash",
    "LongcatFlashForCausalLM",
    spec,
    LONGCAT,
    config,
    lora_stacked=("gate_proj", "up_proj", "down_proj", "router.classifier"),
    config_alone=True,
    skipped=(r"^model\.mtp\.",),  # its multi-token prediction module, as transformers
)

__all__ = ["RECORD"]
