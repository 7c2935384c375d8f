"""DeepSeek-V2 and V3: multi-head latent attention (components/latent.py) and a mixture of routed and shared
experts after first_k_dense_replace dense layers. V2 routes by a softmax (greedy, or group-limited: each group
scored by its best expert), the chosen weights scaled; V3 by sigmoid scores, a correction bias to choose,
groups scored by their best two, the chosen weights renormalised and scaled. Their GGUF architecture is one,
deepseek2 (deepseek_gguf.py): a file with sigmoid routing goes back to a V3 config.json. peft targets their
stacked experts and router as transformers 5 holds them."""

from __future__ import annotations

import math
from typing import Any

from ..spec.definition import Spec
from .config_keys import feedforward_kinds, rope_keys, size_keys
from .deepseek_gguf import JOINED, LAYOUT, gguf_metadata, gguf_spec
from .expert_checkpoints import DEEPSEEK
from .keys import Keys
from .parts import CAUSAL_PRE, activation, rope
from .record import Gguf, Record


def deepseek_v2(c: Keys) -> dict[str, Any]:
    """DeepseekV2ForCausalLM (DeepSeek-V2, V2-Lite): its rotary part turned as complex pairs (interleaved)."""
    method = c.text("topk_method", "greedy")
    if method not in ("greedy", "group_limited_greedy"):
        raise c.refuse("topk_method", method, "tfm routes DeepSeek-V2 by greedy or group_limited_greedy")
    spec = latent_model(c, q_rank=1536, E=64, shared=2, size=1407, dense=0, max_positions=2048, interleaved=True)
    if "E" not in spec:  # (every layer dense: no router)
        return spec
    router = {"router_renorm": False}  # (DeepseekV2TopkRouter reads no norm_topk_prob)
    if method == "group_limited_greedy":
        router |= router_groups(c, spec, None, None, "max")
    return spec | router | router_scale(c, 1.0)


def deepseek_v3(c: Keys) -> dict[str, Any]:
    """DeepseekV3ForCausalLM: sigmoid routing with e_score_correction_bias (a buffer), 8 groups of which 4 chosen."""
    spec = latent_model(
        c,
        q_rank=1536,
        E=256,
        shared=1,
        size=2048,
        dense=3,
        max_positions=4096,
        interleaved=c.flag("rope_interleave", True),
    )
    if "E" not in spec:  # (every layer dense, first_k_dense_replace >= N: no router)
        return spec
    router = {"router_score": "sigmoid", "router_bias": True, "router_renorm": c.flag("norm_topk_prob", True)}
    return spec | router | router_groups(c, spec, 8, 4, "top2") | router_scale(c, 2.5)


def latent_model(
    c: Keys,
    q_rank: int | None,
    E: int,
    shared: int,
    size: int,
    dense: int,
    max_positions: int,
    interleaved: bool,
    listed: bool = False,
) -> dict[str, Any]:
    """What V2 and V3 share: the latent attention, the norms, the dense and routed layers."""
    d, H, N = c.count("hidden_size"), c.count("num_attention_heads"), c.count("num_hidden_layers")
    G = c.nullable_count("num_key_value_heads", H) or H
    if G != H:
        raise c.refuse("num_key_value_heads", G, f"latent attention gives every one of the {H} heads its own keys")
    nope, rotated = c.count("qk_nope_head_dim", 128), c.count("qk_rope_head_dim", 64)
    m, v = nope + rotated, c.count("v_head_dim", 128)
    positions = c.count("max_position_embeddings", max_positions)
    rotary = rope(c, positions, rotated, 10000.0)
    spec = CAUSAL_PRE | {
        "N": N,
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size"),
        "V": c.count("vocab_size"),
        "tie_embeddings": c.flag("tie_word_embeddings", False),
        **rotary,
        "scale": latent_score_scale(c, m),
        "norm_type": "rmsnorm",
        "norm_eps": c.number("rms_norm_eps", 1e-6),
        "feedforward": "gated",
        "activation": activation(c, "hidden_act", "silu"),
        "ff_bias": False,
        "attention": "latent",
        "kv_rank": c.count("kv_lora_rank", 512),
        "rope_m": rotated,
        "attention_bias": c.flag("attention_bias", False),
    }
    if interleaved:
        spec["rope_pairing"] = "interleaved"
    if v != m:
        spec["v_m"] = v
    low = c.nullable_count("q_lora_rank", q_rank)
    if low is not None:
        spec["q_rank"] = low
    return spec | routed_experts(c, N, E, shared, size, dense, listed=listed)


def latent_score_scale(c: Keys, m: int) -> str | float:
    """m^-1/2, times mscale^2 where a scaled rope has mscale_all_dim (yarn_apply_mscale): 0.1 k ln(factor) + 1."""
    p = c.nested("rope_scaling") or c.nested("rope_parameters")
    if (
        p is None
        or p.text("rope_type", p.data.get("type", "default")) == "default"
        or not p.number("mscale_all_dim", None)
    ):
        return "sqrt"
    factor = p.number("factor")
    mscale = 1.0 if factor <= 1 else 0.1 * p.number("mscale_all_dim") * math.log(factor) + 1.0
    return m**-0.5 * mscale * mscale


def routed_experts(
    c: Keys,
    N: int,
    E: Any,
    shared: Any,
    size: int,
    dense: int,
    k: Any = 6,
    shared_key: str = "n_shared_experts",
    listed: bool = False,
) -> dict[str, Any]:
    """The routed layers (from first_k_dense_replace on, or as mlp_layer_types lists them where the family reads it:
    `listed`), their experts and the shared ones (the defaults: the family's, or REQUIRED where its config class has
    none)."""
    first = c.index("first_k_dense_replace", dense)
    kinds = _mlp_layer_types(c, N, first) if listed else ["dense" if i < first else "routed" for i in range(N)]
    E, k = c.count("n_routed_experts", E, "num_experts"), c.count("num_experts_per_tok", k)
    if "routed" not in kinds or not E:
        return {}
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most n_routed_experts = {E}")
    r_e = c.count("moe_intermediate_size", size)
    out: dict[str, Any] = {"E": E, "k": k, "expert_r": r_e}
    shared = c.index(shared_key, shared)
    if shared:
        out["shared_r"] = shared * r_e  # one MLP of n_shared_experts x moe_intermediate_size
    if "dense" in kinds:
        out["feedforward_layers"] = kinds
    return out


def _mlp_layer_types(c: Keys, N: int, first: int) -> list[str]:
    """Each layer's feedforward, dense or routed: mlp_layer_types ("dense" or "sparse": GLM-4.7-Flash, EXAONE MoE)
    where the file lists them, else the first `first` dense."""
    kinds = c.data.get("mlp_layer_types")
    if kinds is None:
        return ["dense" if i < first else "routed" for i in range(N)]
    if not isinstance(kinds, list) or len(kinds) != N or any(kind not in ("dense", "sparse") for kind in kinds):
        raise c.fail("mlp_layer_types", kinds, f'a list of {N} "dense" or "sparse"')
    return ["routed" if kind == "sparse" else "dense" for kind in kinds]


def router_groups(c: Keys, spec: dict[str, Any], groups: int | None, chosen: int | None, score: str) -> dict[str, Any]:
    """Group-limited routing (n_group, topk_group); none with one group."""
    n = c.nullable_count("n_group", groups)
    if not spec.get("E") or n is None or n == 1:
        return {}
    top = c.count("topk_group", chosen)
    return {"router_groups": n, "router_topk_groups": top, "router_group_score": score}


def router_scale(c: Keys, default: float) -> dict[str, Any]:
    factor = c.number("routed_scaling_factor", default)
    return {"router_scale": factor} if factor != 1.0 else {}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> DeepSeek-V2's or V3's config.json (V3: the sigmoid router, its correction bias, groups by their
    best two): every key, the sizes their own way."""
    rotated = spec.rotated_dims
    out = (
        {k: v for k, v in size_keys(spec).items() if k != "head_dim"}
        | rope_keys(spec)
        | {
            "num_key_value_heads": spec.H,
            "kv_lora_rank": spec.kv_rank,
            "q_lora_rank": spec.q_rank,
            "qk_rope_head_dim": rotated,
            "qk_nope_head_dim": spec.m - rotated,
            "v_head_dim": spec.value_size,
            "rms_norm_eps": spec.norm_eps,
            "attention_bias": False,
            "hidden_act": "silu",
        }
        | expert_keys(spec)
    )
    out.pop("partial_rotary_factor", None)
    if spec.rope_scaling == "yarn":
        out["rope_scaling"] |= {"mscale": spec.rope_mscale, "mscale_all_dim": spec.rope_mscale_all_dim}
    if spec.router_score == "sigmoid":
        return out | {
            "scoring_func": "sigmoid",
            "topk_method": "noaux_tc",
            "rope_interleave": spec.rope_pairing == "interleaved",
        }
    return out | {"topk_method": "group_limited_greedy" if spec.router_groups else "greedy"}


def expert_keys(spec: Spec) -> dict[str, Any]:
    """The routed and shared experts as DeepSeek's config.json names them (and GLM-4.5's, which routes alike); a
    model of no routed layer says one expert of one, unused (first_k_dense_replace: every layer), as its config
    classes want integers."""
    return {
        "n_routed_experts": spec.E or 1,
        "num_experts_per_tok": spec.k or 1,
        "moe_intermediate_size": spec.expert_r or spec.r,
        "n_shared_experts": (spec.shared_r or 0) // (spec.expert_r or 1),
        "first_k_dense_replace": feedforward_kinds(spec).count("dense"),
        "n_group": spec.router_groups or 1,
        "topk_group": spec.router_topk_groups or 1,
        "routed_scaling_factor": spec.router_scale,
        "norm_topk_prob": spec.router_renorm,
    }


def _model_type(spec: Spec) -> str:
    """A deepseek2 file's config.json: V3's where the router scores by sigmoid, else V2's."""
    return "deepseek_v3" if spec.router_score == "sigmoid" else "deepseek_v2"


GGUF = Gguf("deepseek2", LAYOUT, gguf_spec, gguf_metadata, base="latent", model_type=_model_type, joined=JOINED)
_LORA = ("gate_proj", "up_proj", "down_proj", "gate")
RECORDS = (
    Record(
        "deepseek_v2",
        "DeepseekV2ForCausalLM",
        deepseek_v2,
        DEEPSEEK,
        config,
        GGUF,
        lora_stacked=_LORA,
        config_alone=True,
    ),
    Record(
        "deepseek_v3",
        "DeepseekV3ForCausalLM",
        deepseek_v3,
        DEEPSEEK,
        config,
        GGUF,
        lora_stacked=_LORA,
        config_alone=True,
        skipped=(r"^model\.layers\.61\.",),  # DeepSeek-V3's multi-token prediction layer, as transformers
    ),
)

__all__ = ["RECORDS"]
