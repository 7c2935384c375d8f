"""The keys of hashed n-gram inputs (Qwen4-Exp's PLE, components/ngram.py): which blocks add them to their streams,
the n-grams' order, heads and tables, and the end-of-sequence id their contexts stop at. The Spec's class body takes
each field from here."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import key as _key

NGRAM_FIELDS: dict[str, Any] = {
    "ngram_blocks": field(
        default=None,
        metadata=_key(
            "blocks",
            "the blocks (0-based) that add hashed n-gram inputs to their residual streams before anything else, each "
            "its own table (Qwen4-Exp's ple_layer_ids, 1-based there) [default: none]",
        ),
    ),
    "ngram_dim": field(default=None, metadata=_key("posint", "ngram_blocks: the n-grams' vector e [default: d]")),
    "ngram_size": field(default=3, metadata=_key("posint", "ngram_blocks: the longest n-gram g (2 .. g hashed)")),
    "ngram_heads": field(default=8, metadata=_key("posint", "ngram_blocks: the heads (tables' parts) of each order")),
    "ngram_vocab": field(
        default=20000000, metadata=_key("posint", "ngram_blocks: each head's size, the first primes from this on")
    ),
    "ngram_vocab_multiple": field(
        default=128, metadata=_key("posint", "ngram_blocks: each table's rows, rounded up to a multiple of this")
    ),
    "ngram_seed": field(default=1234, metadata=_key("index", "ngram_blocks: the seed of the hash's multipliers")),
    "ngram_kernel": field(
        default=4, metadata=_key("posint", "ngram_blocks: the taps of the convolution (dilation: ngram_size)")
    ),
    "ngram_eos": field(
        default=None,
        metadata=_key("index", "ngram_blocks: the end-of-sequence id, past which no n-gram's context reaches"),
    ),
    "ngram_table": field(
        default=None,
        metadata=_key("index", "set per block from ngram_blocks (its table's place among them), not a key to set"),
    ),
}

__all__ = ["NGRAM_FIELDS"]
