"""The keys of multi-head latent attention (DeepSeek-V2/V3): queries through an optional low-rank bottleneck, keys
and values from one compressed latent per token plus a rotary key part shared by the heads. The Spec's class body
takes each field from here (definition.py), as it does the rotary keys (rope_keys.py)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import ATTENTIONS
from .choices import key as _key

LATENT_FIELDS: dict[str, Any] = {
    "attention": field(
        default="standard",
        metadata=_key(
            "choice",
            "standard: W_Q, W_K, W_V per head; latent: multi-head latent attention (DeepSeek): "
            "keys and values from a compressed latent of kv_rank per token; indexed: latent attention whose "
            "queries each attend to the index_topk keys a lightning indexer scores highest (DeepSeek-V3.2)",
            ATTENTIONS,
        ),
    ),
    "kv_rank": field(
        default=None,
        metadata=_key("posint", "latent: the compressed key/value latent's size (kv_lora_rank), cached per token"),
    ),
    "q_rank": field(
        default=None,
        metadata=_key("posint", "latent: the queries' low-rank bottleneck (q_lora_rank) [default: none, one W_Q]"),
    ),
    "rope_m": field(
        default=None,
        metadata=_key(
            "posint",
            "latent: the rotated part of each query and key head (qk_rope_head_dim), its last "
            "entries; the key's is one head shared by all, cached beside the latent",
        ),
    ),
    "v_m": field(
        default=None,
        metadata=_key("posint", "each value head's size (v_head_dim; latent, or standard: MiMo-V2-Flash) [default: m]"),
    ),
    "latent_scale": field(
        default=False,
        metadata=_key(
            "bool",
            "latent: the queries times (d / q_rank)^1/2 and the normalised latent times (d / kv_rank)^1/2 "
            "(LongCat-Flash's mla_scale); with q_rank",
        ),
    ),
    "latent_eps": field(
        default=1e-6,
        metadata=_key(
            "posfloat",
            "latent: the eps of the bottleneck's and the latent's RMSNorms (DeepSeek's code's 1e-6; GLM-5-Next's "
            "rms_norm_eps)",
        ),
    ),
    "latent_layers": field(
        default=None,
        metadata=_key(
            "layers",
            "latent: each block's latents: its own, its own that later blocks reuse (store), or reused (reuse: no "
            "W_KVA, the latents and rotary key parts of the last store block of its kind, rotary or not, with its own "
            "W_KVB and queries) (Mistral Large 4's kv_source_layers) [default: all own]",
            ("own", "store", "reuse"),
        ),
    ),
    "query_temperature": field(
        default=False,
        metadata=_key(
            "bool",
            "latent: each query head at position t times s_h ln(t + 1) + b_h, learned attention.temp.scale and "
            ".bias (H), and an indexer's queries by their own (attention.index.temp.*) (Mistral Large 4's)",
        ),
    ),
    "index_query": field(
        default="bottleneck",
        metadata=_key(
            "choice",
            "indexed: what the indexer's queries read, the queries' bottleneck (DeepSeek-V3.2) or LayerNorm(x) of the "
            "block's input (Mistral Large 4's, its gain and bias attention.index.q_norm.*, eps 1e-6)",
            ("bottleneck", "input"),
        ),
    ),
    "index_heads": field(
        default=None, metadata=_key("posint", "indexed: the lightning indexer's query heads (index_n_heads)")
    ),
    "index_m": field(
        default=None,
        metadata=_key("posint", "indexed: the indexer's head size (index_head_dim), its first rope_m entries turned"),
    ),
    "index_topk": field(
        default=None, metadata=_key("posint", "indexed: the keys each query attends to, those scored highest")
    ),
    "index_pairing": field(
        default="half",
        metadata=_key(
            "choice",
            "indexed: how the indexer's rotary part pairs its entries (half: DeepSeek-V3.2, whatever rope_pairing "
            "the attention's; interleaved: GLM-5)",
            ("half", "interleaved"),
        ),
    ),
    "index_rope": field(
        default="first",
        metadata=_key(
            "choice",
            "indexed: which of the indexer's entries turn, its first rope_m (DeepSeek-V3.2, GLM-5) or its last (HY-V4)",
            ("first", "last"),
        ),
    ),
    "index_pool": field(
        default=None,
        metadata=_key(
            "posint",
            "indexed_pool: the indexer scores pools of this many keys (GLM-5-Next's index_kpool); a divisor of "
            "index_topk",
        ),
    ),
    "index_eps": field(
        default=1e-6,
        metadata=_key("posfloat", "indexed: the eps of the indexer's key norm (HY-V4's: rms_norm_eps)"),
    ),
}

__all__ = ["LATENT_FIELDS"]
