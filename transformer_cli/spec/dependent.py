"""Keys that go with a value of another key (rope_factor with a rope scaling, max_len with learned positions):
the table the loader (validate.py) and the JSON Schema (schema.py) both read."""

from __future__ import annotations

from .choices import LEARNED, RELATIVE

LATENT = (
    "latent",
    "indexed",
    "indexed_shared",
    "indexed_pool",
)  # (latent attention with a lightning indexer, or another's)
SHARED_KV = ("shared_kv", "compressed", "compressed_sparse")  # (DeepSeek-V4's: one key = value head, its last rope_m)
INDEX_KEYS = ("index_heads", "index_m", "index_topk")
INDEXED = ("indexed", "indexed_pool", "qsa", "compressed_sparse")  # (a lightning indexer of its own)
ROPE_KEYS = ("rope_theta", "rope_fraction", "rope_pairing", "rope_scaling")
LLAMA3_KEYS = ("rope_low_freq_factor", "rope_high_freq_factor")
YARN_KEYS = (
    "rope_attention_factor",
    "rope_beta_fast",
    "rope_beta_slow",
    "rope_mscale",
    "rope_mscale_all_dim",
    "rope_truncate",
)

# Keys that go with a value of another key: (other key, its values, required then). The loader and the
# JSON Schema (schema.py) both read this table.
DEPENDENT = {
    "max_len": ("positional", LEARNED, True),
    **{key: ("positional", ("rope",), False) for key in ROPE_KEYS},
    **{key: ("rope_scaling", ("llama3",), False) for key in LLAMA3_KEYS},
    "rope_factor": ("rope_scaling", ("llama3", "linear", "dynamic", "yarn", "longrope"), False),
    "rope_original_max_len": ("rope_scaling", ("llama3", "dynamic", "yarn", "longrope"), False),
    **{key: ("rope_scaling", ("yarn",), False) for key in YARN_KEYS},
    "rope_attention_factor": ("rope_scaling", ("yarn", "longrope"), False),
    "rope_short_factor": ("rope_scaling", ("longrope",), True),
    "rope_long_factor": ("rope_scaling", ("longrope",), True),
    "rope_local_theta": ("positional", ("rope",), False),
    "rope_local_fraction": ("positional", ("rope",), False),
    "rope_query_beta": ("positional", ("rope",), False),
    "rope_query_len": ("positional", ("rope",), False),
    "kv_rank": ("attention", LATENT, True),
    "attn_experts": ("attention", ("mixture",), True),
    "attn_k": ("attention", ("mixture",), True),
    "rope_m": ("attention", (*LATENT, *SHARED_KV), False),  # (required with positions: latent.py, compressed.py)
    "q_rank": ("attention", (*LATENT, *SHARED_KV), False),
    "latent_scale": ("attention", ("latent",), False),
    "latent_eps": ("attention", LATENT, False),
    "query_temperature": ("attention", LATENT, False),
    "latent_layers": ("attention", LATENT, False),
    "index_query": ("attention", ("indexed",), False),
    "rope_learned": ("positional", ("rope",), False),
    "v_m": ("attention", (*LATENT, "standard"), False),
    **{key: ("attention", INDEXED, True) for key in INDEX_KEYS},
    "index_pairing": ("attention", ("indexed",), False),
    "index_rope": ("attention", ("indexed",), False),
    "index_eps": ("attention", ("indexed",), False),
    "index_pool": ("attention", ("indexed_pool", "qsa"), True),
    "swiglu_alpha": ("feedforward", ("clamped",), False),
    "swiglu_limit": ("feedforward", ("clamped", "limited"), False),
    "rel_buckets": ("positional", (*RELATIVE, "disentangled"), False),
    "rel_max_distance": ("positional", (*RELATIVE, "disentangled"), False),
    "rel_terms": ("positional", ("disentangled",), False),
    "rel_per_block": ("positional", ("relative",), False),
    "position_offset": ("positional", (*LEARNED, "sinusoidal_fairseq"), False),
    "norm_eps": ("norm", ("pre", "post", "sandwich", "output"), False),
    "norm_type": ("norm", ("pre", "post", "sandwich", "output"), False),
}


def read_elsewhere(spec, key: str) -> bool:
    """Whether a key its table ties to another's value is read all the same: the norms' type and eps by the query
    and key norms and by gated hyper-connections' streams where the blocks have no norm of their own (Qwen4's)."""
    return key in ("norm_type", "norm_eps") and spec.norm == "none" and spec.qk_norm and spec.hc_form == "gated"


__all__ = ["DEPENDENT", "read_elsewhere"]
