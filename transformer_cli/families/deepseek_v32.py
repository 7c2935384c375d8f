"""DeepSeek-V3.2 (DeepseekV32ForCausalLM) and GLM-5 (GlmMoeDsaForCausalLM): DeepSeek-V3 with its sparse attention
(DSA), a lightning indexer in every layer choosing the keys each query attends to (components/indexed.py). Their
layers' feedforwards are as mlp_layer_types lists them (default: the first first_k_dense_replace dense), routed as
DeepSeek-V3 routes (sigmoid scores, a correction bias to choose, groups, renormalised, scaled). The main attention
always turns its rotary part interleaved; the indexer its own half-split (DeepSeek-V3.2) or interleaved (GLM-5).
GLM-5's "shared" layers (indexer_types) have no indexer and reuse the selection of the last layer with one
(mixer_layers: indexed_shared). GLM-5's GGUF file (glm-dsa) is DeepSeek's (deepseek2, deepseek_gguf.py) with the
indexer's tensors, its three sizes and each layer's kind (attention.indexer.types, true for a layer of its own);
a file without that list is read as llama.cpp reads it: every layer its own indexer, or, at a trained context of
2^20 and more, GLM-5.2's pattern (the first two, then one in four). DeepSeek-V3.2's architecture (deepseek32) is
not in the pinned gguf package: its folders are not written as GGUF."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import feedforward_kinds
from .deepseek import config as deepseek_config
from .deepseek import latent_model, router_groups, router_scale
from .deepseek_gguf import JOINED, LAYOUT, SIGMOID, gguf_metadata, gguf_spec, routed_spec
from .expert_checkpoints import DEEPSEEK
from .keys import Keys
from .layout import Family
from .record import Gguf, Record

INDEXER = {
    "attention.index.W_Q": "self_attn.indexer.wq_b.weight",
    "attention.index.W_K": "self_attn.indexer.wk.weight",
    "attention.index.k_norm.gamma": "self_attn.indexer.k_norm.weight",
    "attention.index.k_norm.beta": "self_attn.indexer.k_norm.bias",
    "attention.index.W_W": "self_attn.indexer.weights_proj.weight",
}
CHECKPOINT = Family(DEEPSEEK.block, DEEPSEEK.names | INDEXER, DEEPSEEK.globals_)


def sparse_model(
    c: Keys, defaults: dict[str, Any], groups: int, pairing: str, interleaved: bool = True
) -> dict[str, Any]:
    """config.json -> spec: DeepSeek-V3's latent attention and router (`groups`: n_group's default, and
    topk_group's half of it), the indexer's keys; `defaults`: the config class's where they are not V3's;
    `interleaved`: the main attention's rotary pairs (HY-V4's are half-split)."""
    keys = Keys(defaults | c.data, c.source, notes=c.notes)
    if keys.nullable_count("q_lora_rank", 1536) is None:
        raise c.refuse("q_lora_rank", None, "the lightning indexer reads the queries' low-rank part")
    c.ignored("mlp_bias", "5.24's DeepSeek-V3.2 and GLM-5 MLPs have no biases", unless=False)
    spec = latent_model(
        keys,
        q_rank=1536,
        E=256,
        shared=1,
        size=2048,
        dense=3,
        max_positions=163840,
        interleaved=interleaved,
        listed=True,
    )
    spec |= {
        "attention": "indexed",
        "index_heads": keys.count("index_n_heads", 64),
        "index_m": keys.count("index_head_dim", 128),
        "index_topk": keys.count("index_topk", 2048),
        "index_pairing": pairing,
    }
    if "E" not in spec:  # (every layer dense: no router)
        return spec
    router = {"router_score": "sigmoid", "router_bias": True, "router_renorm": keys.flag("norm_topk_prob", True)}
    return spec | router | router_groups(keys, spec, groups, groups // 2, "top2") | router_scale(keys, 2.5)


def deepseek_v32(c: Keys) -> dict[str, Any]:
    """DeepSeek-V3.2's config.json (defaults: DeepSeek-V3.2-Exp's, 61 layers, 8 groups of which 4 chosen)."""
    return sparse_model(c, {}, 8, "half")


def glm_moe_dsa(c: Keys) -> dict[str, Any]:
    """GLM-5's config.json (defaults: GLM-5's, 78 layers of 64 heads, one group); the layers whose indexer_types is
    "shared" reuse the selection of the last "full" layer before them."""
    defaults = {
        "hidden_size": 6144,
        "intermediate_size": 12288,
        "num_hidden_layers": 78,
        "num_attention_heads": 64,
        "q_lora_rank": 2048,
        "v_head_dim": 256,
        "qk_nope_head_dim": 192,
        "max_position_embeddings": 202752,
        "rms_norm_eps": 1e-5,
        "index_n_heads": 32,
    }
    spec = sparse_model(c, defaults, 1, "interleaved")
    kinds = _indexer_types(c, spec["N"])
    if "shared" in kinds:
        spec["mixer_layers"] = ["indexed" if kind == "full" else "indexed_shared" for kind in kinds]
    return spec


def _indexer_types(c: Keys, N: int) -> list[str]:
    """Each layer's indexer, "full" or "shared", as GlmMoeDsaConfig derives them: indexer_types, else the pattern
    index_topk_pattern ("FSS..."), else a full layer every index_topk_freq from index_skip_topk_offset - 1 on."""
    kinds = c.data.get("indexer_types")
    key = "indexer_types"
    if kinds is None and c.data.get("index_topk_pattern") is not None:
        key, pattern = "index_topk_pattern", c.data["index_topk_pattern"]
        kinds = [{"F": "full", "S": "shared"}.get(x, x) for x in pattern] if isinstance(pattern, str) else pattern
    elif kinds is None:
        every, offset = max(c.index("index_topk_freq", 1), 1), c.index("index_skip_topk_offset", 2)
        kinds = ["full" if max(i - offset + 1, 0) % every == 0 else "shared" for i in range(N)]
    if not isinstance(kinds, list) or len(kinds) != N or set(kinds) - {"full", "shared"} or kinds[0] != "full":
        raise c.fail(key, c.data.get(key), f'{N} layers\' "full" or "shared", the first "full"')
    return kinds


def config(spec: Spec) -> dict[str, Any]:
    """spec -> the config.json: DeepSeek-V3's keys, the layers' kinds as mlp_layer_types, the indexer's."""
    out = deepseek_config(spec)
    out.pop("rope_interleave", None)  # (always interleaved: the config class has no such key)
    out |= {"mlp_layer_types": ["sparse" if k == "routed" else "dense" for k in feedforward_kinds(spec)]}
    return out | {"index_n_heads": spec.index_heads, "index_head_dim": spec.index_m, "index_topk": spec.index_topk}


def glm_config(spec: Spec) -> dict[str, Any]:
    """GLM-5's: DeepSeek-V3.2's keys and each layer's indexer, "full" or "shared"."""
    kinds = spec.mixer_layers or (spec.attention,)
    shared = [kinds[i % len(kinds)] == "indexed_shared" for i in range(spec.N)]
    return config(spec) | {"indexer_types": ["shared" if x else "full" for x in shared]}


def gguf_dsa_spec(c: Keys, header: Any, rope: dict[str, Any]) -> dict[str, Any]:
    """glm-dsa: deepseek2's spec (the router sigmoid where the file names none, as llama.cpp reads it), the
    indexer's sizes, its queries turned interleaved, each layer's kind."""
    spec = gguf_spec(c, header, rope)
    spec |= routed_spec(c, header, spec["N"], SIGMOID)  # (without expert_gating_func: llama.cpp's glm-dsa's)
    spec |= {
        "attention": "indexed",
        "index_heads": c.count("attention.indexer.head_count"),
        "index_m": c.count("attention.indexer.key_length"),
        "index_topk": c.count("attention.indexer.top_k"),
        "index_pairing": "interleaved",
    }
    N, full = spec["N"], c.data.get("attention.indexer.types")
    if full is None:  # (llama.cpp's defaults: GLM-5 and 5.1 whole, GLM-5.2 from its context)
        long = c.index("context_length", 0) >= 2**20
        full = [not long or i < 2 or (i - 2) % 4 == 0 for i in range(N)]
    if not isinstance(full, list) or len(full) < N or not full[0]:
        raise c.fail("attention.indexer.types", full, f"{N} layers' kinds, the first with its own indexer")
    if not all(full[:N]):
        spec["mixer_layers"] = ["indexed" if own else "indexed_shared" for own in full[:N]]
    return spec


def gguf_dsa_metadata(spec: Spec) -> dict[str, Any]:
    """GlmMoeDsaModel's keys: deepseek2's, the indexer's sizes, each layer's kind."""
    kinds = spec.mixer_layers or (spec.attention,)
    return gguf_metadata(spec) | {
        "attention.indexer.head_count": spec.index_heads,
        "attention.indexer.key_length": spec.index_m,
        "attention.indexer.top_k": spec.index_topk,
        "attention.indexer.types": [kinds[i % len(kinds)] == "indexed" for i in range(spec.N)],
    }


GGUF_INDEXER = {
    "attention.index.W_Q": "indexer.attn_q_b.weight",
    "attention.index.W_K": "indexer.attn_k.weight",
    "attention.index.k_norm.gamma": "indexer.k_norm.weight",
    "attention.index.k_norm.beta": "indexer.k_norm.bias",
    "attention.index.W_W": "indexer.proj.weight",
}
GGUF_LAYOUT = Family(
    LAYOUT.block, LAYOUT.names | GGUF_INDEXER, LAYOUT.globals_, fused=LAYOUT.fused, stacked=LAYOUT.stacked
)
GGUF = Gguf("glm-dsa", GGUF_LAYOUT, gguf_dsa_spec, gguf_dsa_metadata, base="latent", joined=JOINED)
_LORA = ("gate_proj", "up_proj", "down_proj", "gate")
_MTP = (r"^model\.layers\.61\.",)  # DeepSeek-V3.2's multi-token prediction layer, skipped as transformers skips it
RECORDS = (
    Record(
        "deepseek_v32",
        "DeepseekV32ForCausalLM",
        deepseek_v32,
        CHECKPOINT,
        config,
        lora_stacked=_LORA,
        config_alone=True,
        skipped=_MTP,
    ),
    Record(
        "glm_moe_dsa",
        "GlmMoeDsaForCausalLM",
        glm_moe_dsa,
        CHECKPOINT,
        glm_config,
        GGUF,
        lora_stacked=_LORA,
        config_alone=True,
        skipped=(r"^model\.layers\.78\.",),  # (GLM-5's)
    ),
)

__all__ = ["RECORDS"]
