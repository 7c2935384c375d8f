"""Nemotron-H (NemotronHForCausalLM, NVIDIA's Nemotron-H and Nemotron 3): blocks of one sublayer each, an RMSNorm
then a mixer: Mamba-2's state space (linear_attention), attention (full_attention: grouped-query heads of head_dim,
no positions at all), an MLP (mlp: up, relu2, down) or a mixture (moe: DeepSeek-V3's sigmoid router with its
correction bias, its groups and scale, experts of the MLP's kind of moe_intermediate_size and a shared one of
moe_shared_expert_intermediate_size), as layers_block_type says (or hybrid_override_pattern: M, *, -, E). In tfm a
block of a mixer has no feedforward (`none`) and a block of a feedforward no mixer (`attention: none`).

The state space's keys are mamba_num_heads of mamba_head_dim, n_groups of ssm_state_size, conv_kernel
(use_conv_bias), use_bias on its projections; transformers ignores time_step_limit and clamps a prefill's steps at
time_step_min (not a decoding step's), which tfm does in both (ssm_dt_min; with ordinary weights no step comes
near it). layer_norm_epsilon is every norm's, the gated one's too. The head is never tied: transformers ignores
tie_word_embeddings here (its _tied_weights_keys is empty), and so does tfm, saying so. Refused in one line:
moe_latent_size (projections around the experts), and mlp_bias with moe blocks (their shared expert's biases, none
on the routed ones, which tfm's experts cannot hold apart). Its GGUF files (nemotron_h, nemotron_h_moe) are
nemotron_h_gguf.py's.
"""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import size_keys
from .gguf_layout import LLAMA_PERMUTED, LLAMA_REDO
from .keys import Keys
from .mamba2 import backbone, mixer_names
from .mamba_gguf import A_MADE, A_UNDONE
from .nemotron_h_gguf import EXPERTS_LAYOUT, LAYOUT, as_run, block_kinds, gguf_metadata, gguf_spec
from .parts import kv_heads
from .record import Gguf, Record

KINDS = {"linear_attention": "mamba", "mamba": "mamba", "full_attention": "attention", "attention": "attention"}
KINDS |= {"mlp": "mlp", "moe": "moe"}
PATTERN = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
BLOCKS = {
    "mamba": ("mamba2", "none"),
    "attention": ("standard", "none"),
    "mlp": ("none", "dense"),
    "moe": ("none", "routed"),
}


def _kinds(c: Keys) -> list[str]:
    """Each block's kind: layers_block_type (or layer_types), else hybrid_override_pattern's letters."""
    listed = c.data.get("layers_block_type") or c.data.get("layer_types")
    if listed is None and isinstance(c.data.get("hybrid_override_pattern"), str):
        pattern = c.data["hybrid_override_pattern"]
        if not set(pattern) <= set(PATTERN):
            raise c.fail("hybrid_override_pattern", pattern, "letters of M (mamba), * (attention), - (mlp), E (moe)")
        return [PATTERN[letter] for letter in pattern]
    listed = listed or ["linear_attention", "moe", "full_attention", "mlp"]
    if not isinstance(listed, list) or not listed or not set(listed) <= set(KINDS):
        raise c.fail("layers_block_type", listed, "a list of linear_attention, full_attention, mlp or moe")
    return [KINDS[kind] for kind in listed]


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (NemotronHConfig's defaults: 32 heads of 128, 8 key/value heads, 128 mixer heads)."""
    kinds = _kinds(c)
    c.ignored("tie_word_embeddings", "NemotronHForCausalLM ties no head (its _tied_weights_keys is empty)", False)
    if c.data.get("moe_latent_size") is not None:
        raise c.refuse("moe_latent_size", c.data["moe_latent_size"], "none (tfm's experts read the stream itself)")
    if "moe" in kinds and c.flag("mlp_bias", False):
        raise c.refuse("mlp_bias", True, "false with moe blocks: their shared expert has biases, the routed ones none")
    if c.text("mamba_hidden_act", "silu") != "silu":
        raise c.refuse("mamba_hidden_act", c.data["mamba_hidden_act"], "silu, the state space's activation")
    d, H = c.count("hidden_size", 4096), c.count("num_attention_heads", 32)
    heads, head_dim = c.count("mamba_num_heads", 128), c.count("mamba_head_dim", 64)
    groups = c.count("n_groups", 8)
    if heads % groups:
        raise c.fail("n_groups", groups, f"a divisor of mamba_num_heads = {heads}")
    out: dict[str, Any] = {
        "N": len(kinds),
        "H": H,
        "m": c.count("head_dim", 128),
        "d": d,
        "r": c.count("intermediate_size", 21504),
        "V": c.count("vocab_size", 131072),
        **kv_heads(c, "num_key_value_heads", c.count("num_key_value_heads", 8), H),
        "scale": "sqrt",
        "mask": "causal",
        "norm": "pre",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("layer_norm_epsilon", 1e-5),
        "feedforward": "plain",
        "activation": "relu2",
        "ff_bias": c.flag("mlp_bias", False),
        "attention_bias": c.flag("attention_bias", False),
        "tie_embeddings": False,
        "context": c.count("max_position_embeddings", 4096),
        "ssm_heads": heads,
        "ssm_head_dim": head_dim,
        "ssm_state": c.count("ssm_state_size", 128),
        "ssm_groups": groups,
        "conv_kernel": c.count("conv_kernel", 4),
        "conv_bias": c.flag("use_conv_bias", True),
        "ssm_bias": c.flag("use_bias", False),
        "ssm_dt_min": c.number("time_step_min", 0.001),
    }
    out |= {"mixer_layers": [BLOCKS[kind][0] for kind in kinds]}
    out |= {"feedforward_layers": [BLOCKS[kind][1] for kind in kinds]}
    if "moe" in kinds:
        E, k = c.count("n_routed_experts", 8), c.count("num_experts_per_tok", 2)
        groups, chosen = c.count("n_group", 1), c.count("topk_group", 1)
        out |= {"E": E, "k": k, "expert_r": c.count("moe_intermediate_size", 7688), "router_score": "sigmoid"}
        out |= {"router_bias": True, "router_renorm": c.flag("norm_topk_prob", True)}
        out |= {"router_scale": c.number("routed_scaling_factor", 1.0)}
        out |= (
            {"router_groups": groups, "router_topk_groups": chosen, "router_group_score": "top2"} if groups > 1 else {}
        )
        shared = c.count("moe_shared_expert_intermediate_size", 7688) * c.index("n_shared_experts", 1)
        out |= {"shared_r": shared} if shared else {}
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Nemotron-H's config.json."""
    blocks = {value: key for key, value in BLOCKS.items()}
    names = {"mamba": "linear_attention", "attention": "full_attention", "mlp": "mlp", "moe": "moe"}
    out = size_keys(spec) | {"layers_block_type": [names[blocks[pair]] for pair in block_kinds(spec)]}
    out |= {"mamba_num_heads": spec.ssm_heads, "mamba_head_dim": spec.ssm_head_dim, "ssm_state_size": spec.ssm_state}
    out |= {"n_groups": spec.ssm_groups, "conv_kernel": spec.conv_kernel, "use_conv_bias": spec.conv_bias}
    out |= {"use_bias": spec.ssm_bias, "time_step_min": spec.ssm_dt_min, "layer_norm_epsilon": spec.norm_eps}
    out |= {"mlp_bias": spec.ff_bias, "attention_bias": spec.attention_bias, "mlp_hidden_act": "relu2"}
    if spec.E:
        out |= {"n_routed_experts": spec.E, "num_experts_per_tok": spec.k, "moe_intermediate_size": spec.expert_r}
        out |= {"n_group": spec.router_groups or 1, "topk_group": spec.router_topk_groups or 1}
        out |= {"norm_topk_prob": spec.router_renorm, "routed_scaling_factor": spec.router_scale}
        out |= {"moe_shared_expert_intermediate_size": spec.shared_r or 0, "n_shared_experts": 1}
    return out


def _names() -> dict[str, str]:
    names = mixer_names("mamba.", "mixer.") | {"norm1.gamma": "norm.weight", "norm2.gamma": "norm.weight"}
    for x, proj in (("Q", "q_proj"), ("K", "k_proj"), ("V", "v_proj"), ("O", "o_proj")):
        names |= {f"attention.W_{x}": f"mixer.{proj}.weight", f"attention.b_{x}": f"mixer.{proj}.bias"}
    names |= {"ff.W1": "mixer.up_proj.weight", "ff.b1": "mixer.up_proj.bias"}
    names |= {"ff.W2": "mixer.down_proj.weight", "ff.b2": "mixer.down_proj.bias"}
    names |= {"ff.W1[{e}]": "mixer.experts.{e}.up_proj.weight", "ff.W2[{e}]": "mixer.experts.{e}.down_proj.weight"}
    names |= {"ff.router": "mixer.gate.weight", "ff.router_bias": "mixer.gate.e_score_correction_bias"}
    return names | {
        "ff.shared.W1": "mixer.shared_experts.up_proj.weight",
        "ff.shared.W2": "mixer.shared_experts.down_proj.weight",
    }


NEMOTRON_H = backbone(_names())
_CHANGES = {"base": "none", "transforms": LLAMA_PERMUTED | A_UNDONE, "redo": LLAMA_REDO | A_MADE}
GGUF = Gguf("nemotron_h", LAYOUT, gguf_spec, gguf_metadata, held_model=as_run, **_CHANGES)  # type: ignore[arg-type]
MOE_GGUF = Gguf(  # (a model with experts: nemotron_h_moe)
    "nemotron_h_moe",
    EXPERTS_LAYOUT,
    gguf_spec,
    gguf_metadata,
    held_model=as_run,
    writes=lambda spec: bool(spec.E),
    **_CHANGES,  # type: ignore[arg-type]
)
RECORD = Record(
    "nemotron_h", "NemotronHForCausalLM", spec, NEMOTRON_H, config, GGUF, config_alone=True, gguf_also=(MOE_GGUF,)
)

__all__ = ["NEMOTRON_H", "RECORD"]
