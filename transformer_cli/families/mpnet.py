"""MPNet (MPNetModel, microsoft/mpnet-base and the sentence-transformers models built on it): BERT's post-norm block
(q, k, v, o under attention.attn), learned positions that start after the padding index, as RoBERTa's, and T5's
relative bias on every score besides (one table in the encoder, shared by its blocks: `positional:
learned_relative`). Its code fixes what the config cannot change: the padding index is 1 (whatever pad_token_id
says), the bias's buckets 32 and its farthest distance 128 (a table of relative_attention_num_buckets rows, of which
32 are read); no token types. Its ...ForMaskedLM files (an mpnet. prefix, an lm_head) are read too, the head
skipped; the pooler is optional, as BERT's."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .bert import BERT_SKIPPED, POOLER, encoder_keys
from .checkpoints import _plain_block_names
from .keys import Keys
from .layout import Family, norm_names
from .parts import activation, whole_heads
from .record import Record

PAD = 1  # MPNetEmbeddings.padding_idx, in its code
BUCKETS, FARTHEST = 32, 128  # MPNetEncoder.compute_position_bias's and relative_position_bucket's defaults


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (MPNetConfig's defaults)."""
    d, H = c.count("hidden_size", 768), c.count("num_attention_heads", 12)
    buckets = c.count("relative_attention_num_buckets", BUCKETS)
    if buckets != BUCKETS:
        raise c.refuse("relative_attention_num_buckets", buckets, f"{BUCKETS} (MPNet's code buckets into {BUCKETS})")
    positions = c.count("max_position_embeddings", 512)
    if positions <= PAD + 1:
        raise c.refuse("max_position_embeddings", positions, f"more than the padding index + 1 = {PAD + 1} positions")
    return {
        "N": c.count("num_hidden_layers", 12),
        "H": H,
        "m": whole_heads(c, d, H),
        "d": d,
        "r": c.count("intermediate_size", 3072),
        "V": c.count("vocab_size", 30527),
        "head": False,
        "embed_norm": True,
        "pooler": True,
        "scale": "sqrt",
        "positional": "learned_relative",
        "max_len": positions - PAD - 1,
        "position_offset": PAD + 1,
        "pad_id": PAD,
        "rel_buckets": BUCKETS,
        "rel_max_distance": FARTHEST,
        "norm": "post",
        "norm_eps": c.number("layer_norm_eps", 1e-12),
        "attention_bias": True,
        "activation": activation(c, "hidden_act", "gelu"),
    }


def config(spec: Spec) -> dict[str, Any]:
    """spec -> MPNetConfig's config.json."""
    positions = {"max_position_embeddings": (spec.max_len or 0) + PAD + 1, "pad_token_id": PAD}
    return encoder_keys(spec) | positions | {"relative_attention_num_buckets": BUCKETS}


MPNET = Family(
    "encoder.layer.{i}.",
    _plain_block_names(
        ("attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o"),
        ("intermediate.dense", "output.dense"),
        ("attention.LayerNorm", "output.LayerNorm"),
    ),
    {
        "embedding.E": "embeddings.word_embeddings.weight",
        "positional.P": "embeddings.position_embeddings.weight",
        "positional.rel_bias": "encoder.relative_attention_bias.weight",
        "pooler.W": "pooler.dense.weight",
        "pooler.b": "pooler.dense.bias",
    }
    | norm_names("embedding.norm", "embeddings.LayerNorm"),
)
RECORD = Record(
    "mpnet",
    "MPNetModel",
    spec,
    MPNET,
    config,
    aliases=((r"^mpnet\.", ""),),
    skipped=(*BERT_SKIPPED, r"^lm_head\."),
    config_alone=True,
    optional=POOLER,
)

__all__ = ["RECORD"]
