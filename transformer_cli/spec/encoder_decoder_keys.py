"""The keys of an encoder-decoder (its encoder's blocks, the source vocabulary, the cross-attention's heads and
biases) and of the relative and offset positions its families use. The Spec's class body takes each field from here."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import key as _key

# what an encoder may set apart from its decoder (`encoder`): its sizes, window, scale, soft-cap, norms' eps, rope base
ENCODER_KEYS = (
    "d",
    "H",
    "G",
    "m",
    "r",
    "scale",
    "window",
    "attention_layers",
    "attn_softcap",
    "norm_eps",
    "activation",
    "attention_bias",
    "rope_theta",
)

ENCODER_DECODER_FIELDS: dict[str, Any] = {
    "N_enc": field(
        default=None,
        metadata=_key(
            "posint",
            "encoder blocks: an encoder-decoder, whose N blocks are the decoder's (masked self-attention, "
            "cross-attention to the encoder's output, feedforward)",
        ),
    ),
    "V_src": field(
        default=None,
        metadata=_key(
            "posint", "the source's own vocabulary: a separate encoder embedding (d, V_src) [default: E is shared]"
        ),
    ),
    "cross_H": field(default=None, metadata=_key("posint", "cross-attention heads [default: H]; with N_enc")),
    "cross_m": field(default=None, metadata=_key("posint", "cross-attention head size [default: m]")),
    "cross_G": field(
        default=None,
        metadata=_key(
            "posint", "cross-attention key/value heads, each serving cross_H/cross_G heads [default: cross_H]"
        ),
    ),
    "encoder": field(
        default=None,
        metadata=_key(
            "stack",
            "the encoder's own keys where they differ from the decoder's (T5Gemma's stacks): a mapping of these keys",
            ENCODER_KEYS,
        ),
    ),
    "cross_bias": field(
        default=None, metadata=_key("bool", "cross-attention biases [default: attention_bias]; with N_enc")
    ),
    "rel_buckets": field(default=32, metadata=_key("posint", "relative: distance buckets of the bias table")),
    "rel_max_distance": field(
        default=128, metadata=_key("posint", "relative: distances from this one on share the last bucket")
    ),
    "position_offset": field(
        default=None,
        metadata=_key(
            "posint", "position t reads column t + offset: of learned P (BART: 2), of sinusoidal_fairseq's table"
        ),
    ),
    "pad_id": field(
        default=None,
        metadata=_key(
            "index",
            "the padding token id, which counts no position (RoBERTa): tfm runs unpadded "
            "sequences and refuses token inputs holding it; with V",
        ),
    ),
    "rel_terms": field(
        default="both",
        metadata=_key(
            "choice",
            "disentangled: the position terms besides content to content, c2p (content to position), p2c or both "
            "(DeBERTa's pos_att_type)",
            ("both", "c2p", "p2c"),
        ),
    ),
    "rel_per_block": field(
        default=False,
        metadata=_key(
            "bool",
            "relative: each block its own bias table, blocks.{i}.positional.rel_bias (UMT5), not one per stack",
        ),
    ),
}

__all__ = ["ENCODER_DECODER_FIELDS", "ENCODER_KEYS"]
