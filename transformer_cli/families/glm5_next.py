"""GLM-5-Next's text model (Glm5NextTextModel, model_type glm5_next_text; no head of its own): pre-norm blocks whose
mixer is Kimi Delta Attention (components/kda.py, its decay bounded at linear_lower_bound: linear_decay_bound) in
the linear_attention layers and latent attention without positions in the indexed_attention ones, each query
attending to the pools of keys a lightning indexer chooses (components/pooled.py: indexed_pool) or, on a "shared"
layer, to those the indexed layer just before it chose (indexed_shared). The residual is hyper-connections' streams
(hc_mult of them, DeepSeek-V4's mixed form; the head reads their mean). Every SwiGLU (dense, shared and routed) is
clamped at swiglu_limit (feedforward limited); the experts are routed as DeepSeek-V3 routes them.

As Glm5NextTextConfig reads it: layer_types (default three linear layers, then one indexed), mlp_layer_types
(default the first three dense; first_k_dense_replace is not read), indexer_types (else GLM-5's pattern keys; a
linear layer's entry unread), every RMSNorm's eps rms_norm_eps (the latents' too), no rotary at all. Refused in one
line, as transformers cannot run them: a "shared" layer not right after an indexed layer with its own indexer, a
rotary part (qk_rope_head_dim), heads of fewer keys and values; and index_kpool_always_select_tail false (a query
might then select nothing, which transformers runs as zeros under sdpa and NaN under eager)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .deepseek import config as deepseek_config
from .deepseek import routed_experts, router_groups, router_scale
from .deepseek_v32 import INDEXER
from .expert_checkpoints import DEEPSEEK
from .keys import Keys
from .kimi_linear import _KDA
from .layout import Family
from .parts import CAUSAL_PRE, activation
from .record import Record

DEFAULTS = {  # Glm5NextTextConfig's
    "vocab_size": 154880,
    "hidden_size": 4096,
    "num_hidden_layers": 45,
    "num_attention_heads": 64,
    "intermediate_size": 12288,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 288,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "n_group": 1,
    "topk_group": 1,
    "routed_scaling_factor": 2.5,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 256,
    "v_head_dim": 256,
    "rms_norm_eps": 1e-5,
}


def _layers(c: Keys, N: int) -> list[str]:
    """Each layer's mixer: kda, indexed_pool (its own indexer) or indexed_shared."""
    kinds = c.data.get("layer_types")
    if kinds is None:
        kinds = ["linear_attention" if i % 4 != 3 else "indexed_attention" for i in range(N)]
    kinds = ["indexed_attention" if kind == "full_attention" else kind for kind in kinds]
    if len(kinds) != N or not set(kinds) <= {"linear_attention", "indexed_attention"}:
        raise c.fail("layer_types", c.data.get("layer_types"), f"{N} 'linear_attention' or 'indexed_attention'")
    indexers = c.data.get("indexer_types")
    if indexers is None:
        pattern = c.data.get("index_topk_pattern")
        if pattern is not None:
            indexers = [{"F": "full", "S": "shared"}.get(x, x) for x in pattern]
        else:
            every, offset = max(c.index("index_topk_freq", 1), 1), c.index("index_skip_topk_offset", 2)
            indexers = ["full" if max(i - offset + 1, 0) % every == 0 else "shared" for i in range(N)]
    out = []
    for i, kind in enumerate(kinds):
        if kind == "linear_attention":
            out.append("kda")
        elif indexers[i] == "shared":
            if not out or out[-1] != "indexed_pool":  # (transformers hands a layer's selection to the next alone)
                why = "right after an indexed layer with its own indexer (transformers passes it no selection)"
                raise c.refuse("indexer_types", indexers, f'a "shared" layer ({i}) {why}')
            out.append("indexed_shared")
        else:
            out.append("indexed_pool")
    return out


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (Glm5NextTextConfig's defaults: 45 layers of 4,096, 64 heads, 288 experts)."""
    keys = Keys(DEFAULTS | c.data, c.source, notes=c.notes)
    c.ignored("first_k_dense_replace", "reads mlp_layer_types alone (default: the first three layers dense)")
    d, N, H = keys.count("hidden_size"), keys.count("num_hidden_layers"), keys.count("num_attention_heads")
    if (G := keys.nullable_count("num_key_value_heads", H) or H) != H:
        raise c.refuse("num_key_value_heads", G, f"{H}: latent attention gives every head its own keys")
    if keys.index("qk_rope_head_dim", 0):
        raise c.refuse("qk_rope_head_dim", c.data["qk_rope_head_dim"], "0: GLM-5-Next's attention turns nothing")
    if not keys.flag("index_kpool_always_select_tail", True):
        raise c.refuse("index_kpool_always_select_tail", False, "true (a query could then attend to no key)")
    if activation(c, "hidden_act", "silu") != "silu":
        raise c.refuse("hidden_act", c.data["hidden_act"], "silu (its experts' is, whatever the key)")
    eps = keys.number("rms_norm_eps")
    m, v = keys.count("qk_nope_head_dim"), keys.count("v_head_dim")
    mixers = _layers(c, N)
    kinds = keys.data.get("mlp_layer_types") or ["dense" if i < 3 else "sparse" for i in range(N)]
    experts = routed_experts(Keys(keys.data | {"mlp_layer_types": kinds}, c.source), N, 288, 1, 2048, 3, 8, listed=True)
    bound = c.data.get("linear_lower_bound", -5.0)
    if bound is not None and (not isinstance(bound, (int, float)) or bound >= 0):
        raise c.fail("linear_lower_bound", bound, "a negative number, or null (Kimi's decay)")
    out = CAUSAL_PRE | {
        "N": N,
        "H": H,
        "m": m,
        "d": d,
        "r": keys.count("intermediate_size"),
        "V": keys.count("vocab_size"),
        "positional": "none",
        "head": False,
        "norm_type": "rmsnorm",
        "norm_eps": eps,
        "feedforward": "limited",
        "swiglu_limit": keys.number("swiglu_limit", 10.0),
        "activation": "silu",
        "ff_bias": False,
        "attention": "indexed_pool",
        "mixer_layers": mixers,
        "kv_rank": keys.count("kv_lora_rank"),
        "q_rank": keys.count("q_lora_rank"),
        "latent_eps": eps,
        "attention_bias": keys.flag("attention_bias", False),
        "index_heads": keys.count("index_n_heads", 32),
        "index_m": keys.count("index_head_dim", 128),
        "index_topk": keys.count("index_topk", 2048),
        "index_pool": keys.count("index_kpool", 16),
        "linear_v_heads": keys.count("linear_num_heads", 64),
        "linear_v_dim": keys.count("linear_head_dim", 128),
        "conv_kernel": keys.count("linear_conv_kernel_dim", 4),
        "hc_streams": keys.count("hc_mult", 4),
        "hc_head": "mean",
        "hc_sinkhorn": keys.count("hc_sinkhorn_iters", 20),
        "hc_eps": keys.number("hc_eps", 1e-6),
    }
    out |= {"v_m": v} if v != m else {}
    out |= {"linear_decay_bound": -float(bound)} if bound is not None else {}
    out |= experts
    if "E" in out:  # (DeepSeek-V3's router)
        out |= {"router_score": "sigmoid", "router_bias": True, "router_renorm": keys.flag("norm_topk_prob", True)}
        out |= router_groups(keys, out, 1, 1, "top2") | router_scale(keys, 2.5)
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Glm5NextTextConfig's config.json."""
    out = {k: v for k, v in deepseek_config(spec).items() if not k.startswith("rope")}
    for key in ("scoring_func", "topk_method", "qk_rope_head_dim", "first_k_dense_replace", "hidden_act"):
        out.pop(key, None)
    kinds = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    out |= {
        "layer_types": ["linear_attention" if kind == "kda" else "indexed_attention" for kind in kinds],
        "indexer_types": ["shared" if kind == "indexed_shared" else "full" for kind in kinds],
        "mlp_layer_types": [
            "sparse" if spec.E and kind_of(spec.feedforward_layers, i, "routed") == "routed" else "dense"
            for i in range(spec.N)
        ],
        "qk_rope_head_dim": 0,
        "index_n_heads": spec.index_heads,
        "index_head_dim": spec.index_m,
        "index_topk": spec.index_topk,
        "index_kpool": spec.index_pool,
        "linear_num_heads": spec.linear_v_heads,
        "linear_head_dim": spec.linear_v_dim,
        "linear_conv_kernel_dim": spec.conv_kernel,
        "linear_lower_bound": None if spec.linear_decay_bound is None else -spec.linear_decay_bound,
        "hc_mult": spec.hc_streams,
        "hc_sinkhorn_iters": spec.hc_sinkhorn,
        "hc_eps": spec.hc_eps,
        "swiglu_limit": spec.swiglu_limit,
        "n_group": spec.router_groups or 1,
        "topk_group": spec.router_topk_groups or 1,
    }
    return out


def _names() -> dict[str, str]:
    """DeepSeek's names (latent attention, its experts one by one, its router), the indexer's, KDA's as Kimi's,
    the streams' weights as GLM's files name them."""
    names = dict(DEEPSEEK.names) | INDEXER
    names |= {"attention.index.ape": "self_attn.indexer.index_kpool_compress_ape"}
    names |= {"attention.index.W_gate": "self_attn.indexer.index_kpool_compress_gate"}
    names |= {f"kda.{k}": f"self_attn.{v}" for k, v in _KDA.items()}
    for ours, theirs in (("attn", "attn"), ("ff", "ffn")):
        names |= {f"hc_{ours}.{x}": f"hc_{theirs}_{y}" for x, y in (("W", "fn"), ("b", "base"), ("scale", "scale"))}
    return names


def multimodal(c: Keys) -> dict[str, Any]:
    """Glm5NextForConditionalGeneration's config.json: the text model's (text_config, or the top level where a
    text-only file keeps its keys there), with the head, tied by the top-level key alone (the text config's is not
    read, as transformers reads it)."""
    tied = c.flag("tie_word_embeddings", False)
    text = c.nested("text_config") or c
    if text is not c:
        text.ignored("tie_word_embeddings", "ties the head by the top-level key alone", unless=tied)
    return spec(text) | {"head": True, "tie_embeddings": tied}


def multimodal_config(spec: Spec) -> dict[str, Any]:
    """spec -> Glm5NextConfig's config.json: the text model's keys under text_config (its vision tower's are
    Glm5NextConfig's defaults: tfm holds no image model)."""
    return {"text_config": config(spec) | {"model_type": "glm5_next_text"}, "tie_word_embeddings": spec.tie_embeddings}


_TEXT_GLOBALS = {"embedding.E": "embed_tokens.weight", "final_norm.gamma": "norm.weight"}
TEXT = Family("layers.{i}.", _names(), _TEXT_GLOBALS)
MULTIMODAL = Family(
    "model.language_model.layers.{i}.",
    _names(),
    {ours: f"model.language_model.{theirs}" for ours, theirs in _TEXT_GLOBALS.items()} | {"head.W": "lm_head.weight"},
)
ALIASES = (  # transformers' names in memory -> its files'
    (r"\.(attn|ffn)_hc\.(fn|base|scale)$", r".hc_\1_\2"),
    (r"\.self_attn\.forget_gate\.", ".self_attn."),
)
SKIPPED = (r"layers\.45\.", r"\.shared_head\.")  # (its multi-token prediction layer, which transformers skips)
RECORDS = (
    Record(
        "glm5_next_text", "Glm5NextTextModel", spec, TEXT, config, aliases=ALIASES, config_alone=True, skipped=SKIPPED
    ),
    Record(
        "glm5_next",
        "Glm5NextForConditionalGeneration",
        multimodal,
        MULTIMODAL,
        multimodal_config,
        aliases=ALIASES,
        config_alone=True,
        skipped=(*SKIPPED, r"^model\.visual\."),  # (the image model: not tfm's)
    ),
)

__all__ = ["RECORDS"]
