"""Mistral Large 4's text model (MistralLarge4TextModel, model_type mistral_large4_text; no head of its own) and its
files (MistralLarge4ForConditionalGeneration, model_type mistral_large4: the text model under
model.language_model., a head, the logits soft-capped at final_logit_softcapping; the image model not read).

GLM-5's sparse attention (deepseek_v32.py: latent attention and a lightning indexer, "shared" layers reusing the last
selection, every rotary part interleaved) without the queries' bottleneck: the indexer's queries read LayerNorm(x)
(index_query input); every query head, and every indexer head, times a learned s_h ln(t + 1) + b_h
(query_temperature); the rotary frequencies times learned exp(alpha_j) (rope_learned, on YaRN by default); the
layers no_rope_layers marks 0 turn nothing (positional_layers nope: their heads all their own, no shared rotary key
part); the latents' norms' eps rms_norm_eps (latent_eps). Mistral 4's router (softmax over E, groups by their best
two, the chosen always renormalised, scaled).

As MistralLarge4TextConfig reads it: num_key_value_heads must be the heads' (transformers fails otherwise), a
q_lora_rank, norm_topk_prob or rope_interleave in a file is not read, mlp_layer_types by default the first
first_k_dense_replace dense, indexer_types as GLM-5's, kv_source_layers as its kv_sharing_modes (latent_layers: a
layer reusing another's latents reads those of the last layer named as a source of its rope kind, whichever layer it
names itself, as transformers does).

Its files name the tensors as Mistral's do, in two dialects, as transformers' save_pretrained writes them: the
multimodal class's all Mistral's (wq, wo, feed_forward.w1, tok_embeddings, lerope.alpha, output), the text model's
with transformers' names for some (o_proj, feed_forward.gate_proj, embed_tokens, rotary_emb.alpha)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .deepseek import latent_model, router_groups, router_scale
from .deepseek_v32 import _indexer_types
from .deepseek_v32 import config as dsa_config
from .keys import Keys
from .layout import Family
from .parts import default_rope
from .record import Record

DEFAULTS = {  # MistralLarge4TextConfig's
    "vocab_size": 204800,
    "hidden_size": 6144,
    "intermediate_size": 24576,
    "moe_intermediate_size": 6144,
    "num_hidden_layers": 72,
    "num_attention_heads": 64,
    "n_routed_experts": 128,
    "num_experts_per_tok": 4,
    "n_shared_experts": 1,
    "routed_scaling_factor": 1.0,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 64,
    "v_head_dim": 128,
    "n_group": 1,
    "topk_group": 1,
    "rms_norm_eps": 1e-5,
    "index_topk": 2048,
    "index_head_dim": 128,
    "index_n_heads": 32,
    "first_k_dense_replace": 1,
    "max_position_embeddings": 1048576,
}
YARN = {  # its rope_parameters where a file names none
    "rope_type": "yarn",
    "rope_theta": 10000.0,
    "factor": 2048.0,
    "original_max_position_embeddings": 512,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "attention_factor": 1.0,
}


def text(c: Keys) -> dict[str, Any]:
    """MistralLarge4TextConfig's config.json -> spec (its defaults: 72 layers of 6,144, 128 experts)."""
    for key, why in (
        ("q_lora_rank", "builds no bottleneck of the queries"),
        ("norm_topk_prob", "always renormalises the chosen experts' weights"),
        ("rope_interleave", "always turns interleaved pairs"),
    ):
        c.ignored(key, why)
    N = Keys(DEFAULTS | c.data, c.source).count("num_hidden_layers")
    latents = _latent_layers(c, N)
    data = {k: v for k, v in c.data.items() if k not in ("q_lora_rank", "rope_interleave")}
    keys = default_rope(Keys(DEFAULTS | data, c.source, notes=c.notes), YARN, "sets its YaRN then")
    spec = latent_model(
        keys, q_rank=None, E=128, shared=1, size=6144, dense=1, max_positions=1048576, interleaved=True, listed=True
    )
    interval = keys.count("no_rope_layer_interval", 4)
    turns = c.data.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(N)]
    if len(turns) != N or set(turns) - {0, 1}:
        raise c.fail("no_rope_layers", turns, f"{N} layers' 1 (rotary) or 0 (none)")
    spec |= {
        "head": False,
        "tie_embeddings": False,
        "attention": "indexed",
        "latent_eps": spec["norm_eps"],
        "query_temperature": True,
        "rope_learned": True,
        "index_query": "input",
        "index_heads": keys.count("index_n_heads"),
        "index_m": keys.count("index_head_dim"),
        "index_topk": keys.count("index_topk"),
        "index_pairing": "interleaved",
    }
    if 0 in turns:
        spec["positional_layers"] = ["rope" if turn else "nope" for turn in turns]
    if set(latents) != {"own"}:
        spec["latent_layers"] = latents
    kinds = _indexer_types(keys, N)
    if "shared" in kinds:
        spec["mixer_layers"] = ["indexed" if kind == "full" else "indexed_shared" for kind in kinds]
    if "E" not in spec:
        return spec
    return spec | {"router_renorm": True} | router_groups(keys, spec, 1, 1, "top2") | router_scale(keys, 1.0)


def _latent_layers(c: Keys, N: int) -> list[str]:
    """Each layer's latents from kv_source_layers, as MistralLarge4TextConfig's kv_sharing_modes reads them: its own,
    its own that later layers name (store), or another's (reuse: the last store layer of its kind, whichever it
    names)."""
    sources = c.data.get("kv_source_layers") or list(range(N))
    valid = isinstance(sources, list) and len(sources) == N and all(isinstance(s, int) for s in sources)
    if not valid or any(not 0 <= s <= i or sources[s] != s for i, s in enumerate(sources)):
        expected = f"{N} layers' sources, each at or before its layer and its own source"
        raise c.fail("kv_source_layers", c.data.get("kv_source_layers"), expected)
    stores = {s for i, s in enumerate(sources) if s != i}
    return ["reuse" if s != i else "store" if i in stores else "own" for i, s in enumerate(sources)]


def multimodal(c: Keys) -> dict[str, Any]:
    """MistralLarge4Config's config.json: the text model's, with the head (tied by the top-level key alone, as
    transformers ties it) and its soft cap."""
    tied = c.flag("tie_word_embeddings", False)
    inner = c.nested("text_config") or Keys({}, c.source, "text_config.", c.notes)
    inner.ignored("tie_word_embeddings", "ties the head by the top-level key alone", unless=tied)
    out = text(inner) | {"head": True, "tie_embeddings": tied}
    cap = inner.number("final_logit_softcapping", 30.0)
    return out | ({"logit_softcap": cap} if cap else {})


def text_config(spec: Spec) -> dict[str, Any]:
    """spec -> MistralLarge4TextConfig's config.json."""
    out = dsa_config(spec)
    for key in ("q_lora_rank", "scoring_func", "topk_method", "first_k_dense_replace", "norm_topk_prob"):
        out.pop(key, None)
    rotary = out.pop("rope_scaling", None) or {"rope_type": "default"}
    rotary |= {"rope_theta": out.pop("rope_theta")}
    out |= {"rope_parameters": rotary, "num_key_value_heads": spec.H}
    out["no_rope_layers"] = [int(kind_of(spec.positional_layers, i, "rope") == "rope") for i in range(spec.N)]
    latents = [kind_of(spec.latent_layers, i, "own") for i in range(spec.N)]
    turns, sources = out["no_rope_layers"], list(range(spec.N))
    for i, kind in enumerate(latents):  # (a reusing layer's source: the last store layer of its kind)
        if kind == "reuse":
            sources[i] = max(j for j in range(i) if latents[j] == "store" and turns[j] == turns[i])
    out["kv_source_layers"] = sources
    kinds = spec.mixer_layers or (spec.attention,)
    out["indexer_types"] = ["shared" if kinds[i % len(kinds)] == "indexed_shared" else "full" for i in range(spec.N)]
    return out | {"n_group": spec.router_groups or 1, "topk_group": spec.router_topk_groups or 1}


def multimodal_config(spec: Spec) -> dict[str, Any]:
    inner = text_config(spec) | {"model_type": "mistral_large4_text", "final_logit_softcapping": spec.logit_softcap}
    return {"text_config": inner, "tie_word_embeddings": spec.tie_embeddings}


def _names() -> dict[str, str]:
    """The names Mistral's checkpoints give the text model's tensors (transformers' save_pretrained writes them):
    attention.wq, wkv_a_with_mqa, wkv_b, o_proj, ssmax_scaling.{s,b}, the indexer's, attention_norm, ffn_norm, the
    dense MLP under feed_forward, each expert's w1, w2, w3, the router gate, the shared experts."""
    p, ix = "attention.", "attention.indexer."
    names = {
        "attention.W_Q": p + "wq.weight",
        "attention.W_KVA": p + "wkv_a_with_mqa.weight",
        "attention.b_KVA": p + "wkv_a_with_mqa.bias",
        "attention.kv_a_norm.gamma": p + "kv_a_norm.weight",
        "attention.W_KVB": p + "wkv_b.weight",
        "attention.W_O": p + "o_proj.weight",
        "attention.b_O": p + "o_proj.bias",
        "attention.temp.scale": p + "ssmax_scaling.s",
        "attention.temp.bias": p + "ssmax_scaling.b",
        "attention.index.W_Q": ix + "wq_b.weight",
        "attention.index.W_K": ix + "wk.weight",
        "attention.index.k_norm.gamma": ix + "k_norm.weight",
        "attention.index.k_norm.beta": ix + "k_norm.bias",
        "attention.index.W_W": ix + "weights_proj.weight",
        "attention.index.q_norm.gamma": ix + "q_input_norm.weight",
        "attention.index.q_norm.beta": ix + "q_input_norm.bias",
        "attention.index.temp.scale": ix + "ssmax_scaling.s",
        "attention.index.temp.bias": ix + "ssmax_scaling.b",
        "norm1.gamma": "attention_norm.weight",
        "norm2.gamma": "ffn_norm.weight",
        "ff.router": "gate.weight",
    }
    for n, proj, w in (("1", "gate_proj", "w1"), ("3", "up_proj", "w3"), ("2", "down_proj", "w2")):
        names |= {
            f"ff.W{n}": f"feed_forward.{proj}.weight",
            f"ff.W{n}[{{e}}]": f"experts.{{e}}.{w}.weight",
            f"ff.shared.W{n}": f"shared_experts.{proj}.weight",
        }
    return names


_GLOBALS = {
    "embedding.E": "embed_tokens.weight",
    "final_norm.gamma": "norm.weight",
    "positional.alpha": "rotary_emb.alpha",
}
TEXT = Family("layers.{i}.", _names(), _GLOBALS)
NATIVE = {  # the multimodal class's files: Mistral's own names throughout
    "attention.o_proj.": "attention.wo.",
    "feed_forward.gate_proj.": "feed_forward.w1.",
    "feed_forward.up_proj.": "feed_forward.w3.",
    "feed_forward.down_proj.": "feed_forward.w2.",
    "shared_experts.gate_proj.": "shared_experts.w1.",
    "shared_experts.up_proj.": "shared_experts.w3.",
    "shared_experts.down_proj.": "shared_experts.w2.",
}


def _native(name: str) -> str:
    for text_model, native in NATIVE.items():
        name = name.replace(text_model, native)
    return name


MULTIMODAL = Family(
    "layers.{i}.",
    {ours: _native(theirs) for ours, theirs in _names().items()},
    {
        "embedding.E": "tok_embeddings.weight",
        "final_norm.gamma": "norm.weight",
        "positional.alpha": "lerope.alpha",
        "head.W": "output.weight",
    },
)
RECORDS = (
    Record("mistral_large4_text", "MistralLarge4TextModel", text, TEXT, text_config, config_alone=True),
    Record(
        "mistral_large4",
        "MistralLarge4ForConditionalGeneration",
        multimodal,
        MULTIMODAL,
        multimodal_config,
        config_alone=True,
        # (the image model and its projector, the multi-token prediction head: not read, as a text-only run reads none)
        skipped=(r"^vision_encoder\.", r"^patch_merger\.", r"^pre_mm_projector_norm\.", r"^vision_language_adapter\.")
        + (r"^mtp_dspark\.",),
    ),
)

__all__ = ["RECORDS"]
