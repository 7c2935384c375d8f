"""DeBERTa-v2 and -v3 (DebertaV2Model, microsoft/deberta-v3-base and its NLI and reranking fine-tunes): BERT's
post-norm block under its own names (query_proj, key_proj, value_proj), a norm of the embeddings, no pooler, and
with relative_attention its disentangled attention (positional: disentangled, components/disentangled.py): one
table of 2 position_buckets relative positions in the encoder, normalised (norm_rel_ebd: layer_norm) and projected
by each block's own query and key projections (share_att_key), its terms pos_att_type, the scores scaled by
1 / sqrt(m (1 + terms)). Without relative_attention, learned positions (position_biased_input) as BERT's.

Refused in one line: an embedding narrower than hidden_size (embed_proj), the convolution of DeBERTa-v2-xlarge
(conv_kernel_size), projections of the positions of their own (share_att_key: false), relative positions
without buckets, beside learned ones, or without their norm. Its ...ForMaskedLM files (a deberta. prefix, a head)
are read too, the head skipped."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .bert import encoder_keys
from .checkpoints import _plain_block_names
from .keys import Keys
from .layout import Family, norm_names
from .parts import activation, whole_heads
from .record import Record

TERMS = {("c2p", "p2c"): "both", ("c2p",): "c2p", ("p2c",): "p2c"}


def _terms(c: Keys) -> tuple[str, ...]:
    """pos_att_type as a sorted tuple: 'p2c|c2p' or a list."""
    kinds = c.data.get("pos_att_type") or []
    kinds = [k.strip() for k in kinds.lower().split("|")] if isinstance(kinds, str) else kinds
    found = tuple(sorted(set(kinds)))
    if found not in TERMS:
        raise c.refuse("pos_att_type", c.data.get("pos_att_type"), "c2p, p2c or both with relative_attention")
    return found


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (DebertaV2Config's defaults, and the keys its code reads with getattr)."""
    d, H = c.count("hidden_size", 1536), c.count("num_attention_heads", 24)
    m = whole_heads(c, d, H)
    if c.count("embedding_size", d) != d:
        raise c.refuse("embedding_size", c.data["embedding_size"], f"hidden_size = {d} (no embed_proj)")
    if c.index("conv_kernel_size", 0):
        raise c.refuse("conv_kernel_size", c.data["conv_kernel_size"], "0: tfm's blocks have no convolution")
    out: dict[str, Any] = {
        "N": c.count("num_hidden_layers", 24),
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size", 6144),
        "V": c.count("vocab_size", 128100),
        "head": False,
        "mask": "none",
        "embed_norm": True,
        "norm": "post",
        "norm_eps": c.number("layer_norm_eps", 1e-7),
        "attention_bias": True,
        "activation": activation(c, "hidden_act", "gelu"),
    }
    types = c.index("type_vocab_size", 0)
    out |= {"type_vocab": types} if types else {}
    positions = c.count("max_position_embeddings", 512)
    learned = {"positional": "learned", "max_len": positions} if c.flag("position_biased_input", True) else {}
    if not c.flag("relative_attention", False):
        return out | {"scale": "sqrt"} | learned
    if learned:
        raise c.refuse("position_biased_input", True, "false with relative_attention (tfm's positions are one kind)")
    if not c.flag("share_att_key", False):
        raise c.refuse("share_att_key", False, "true: the positions projected by the blocks' own W_Q and W_K")
    if "layer_norm" not in str(c.data.get("norm_rel_ebd", "none")):
        raise c.refuse("norm_rel_ebd", c.data.get("norm_rel_ebd"), "layer_norm (the table normalised)")
    buckets = c.data.get("position_buckets", -1)
    if not isinstance(buckets, int) or buckets <= 0:
        raise c.refuse("position_buckets", buckets, "a positive number of buckets")
    farthest = c.data.get("max_relative_positions", -1)
    farthest = farthest if isinstance(farthest, int) and farthest >= 1 else positions
    terms = _terms(c)
    return out | {
        "positional": "disentangled",
        "rel_buckets": buckets,
        "rel_max_distance": farthest,
        "rel_terms": TERMS[terms],
        "scale": (m * (1 + len(terms))) ** -0.5,
        "context": positions,
    }


def config(spec: Spec) -> dict[str, Any]:
    """spec -> DebertaV2Config's config.json."""
    out = encoder_keys(spec) | {
        "type_vocab_size": spec.type_vocab or 0,
        "max_position_embeddings": spec.max_len or spec.context or 512,
        "position_biased_input": spec.positional == "learned",
        "relative_attention": spec.positional == "disentangled",
    }
    if spec.positional != "disentangled":
        return out
    terms = {"both": "p2c|c2p", "c2p": "c2p", "p2c": "p2c"}[spec.rel_terms]
    relative = {"position_buckets": spec.rel_buckets, "max_relative_positions": spec.rel_max_distance}
    return out | relative | {"pos_att_type": terms, "share_att_key": True, "norm_rel_ebd": "layer_norm"}


DEBERTA_V2 = Family(
    "encoder.layer.{i}.",
    _plain_block_names(
        ("attention.self.query_proj", "attention.self.key_proj", "attention.self.value_proj", "attention.output.dense"),
        ("intermediate.dense", "output.dense"),
        ("attention.output.LayerNorm", "output.LayerNorm"),
    ),
    {
        "embedding.E": "embeddings.word_embeddings.weight",
        "positional.P": "embeddings.position_embeddings.weight",
        "embedding.T": "embeddings.token_type_embeddings.weight",
        "positional.R": "encoder.rel_embeddings.weight",
    }
    | norm_names("embedding.norm", "embeddings.LayerNorm")
    | norm_names("positional.norm", "encoder.LayerNorm"),
)
RECORD = Record(
    "deberta-v2",
    "DebertaV2Model",
    spec,
    DEBERTA_V2,
    config,
    aliases=((r"^deberta\.", ""),),
    skipped=(r"^embeddings\.position_ids$", r"^lm_predictions\.", r"^cls\.", r"^lm_head\.", r"^mask_predictions\."),
    config_alone=True,
)

__all__ = ["RECORD"]
