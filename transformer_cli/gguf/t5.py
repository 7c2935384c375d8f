"""GGUF T5 (architecture t5, which carries T5's, T5 1.1's, flan-T5's and mT5's files) as convert_hf_to_gguf.py
writes them: an encoder (enc.blk) and a decoder (dec.blk) of RMSNorms before each sublayer, block 0's relative
position bias table in each stack, cross-attention in the decoder, one shared token embedding, a head of its own
where the file has output.weight. What the file does not hold is read as llama.cpp reads it: the feedforward gated
GELU (tanh) where the file has ffn_gate, else plain ReLU; the bias tables' max distance 128; the scores unscaled;
and the head never scaled, tied or not (transformers scales T5 1.0's tied head by d^-1/2; the file does not say
so, and llama.cpp does not)."""

from __future__ import annotations

from typing import Any

from ..families.keys import Keys
from ..families.layout import Family
from .base import Arch, vocabulary
from .header import Header


def t5(c: Keys, header: Header) -> dict[str, Any]:
    N_enc = c.count("block_count")
    gated = "enc.blk.0.ffn_gate.weight" in header.tensors
    return {
        "N": c.count("decoder_block_count", N_enc),
        "N_enc": N_enc,
        "H": c.count("attention.head_count"),
        "m": c.count("attention.key_length"),
        "d": c.count("embedding_length"),
        "r": c.count("feed_forward_length"),
        "V": vocabulary(c, header),
        "tie_embeddings": "output.weight" not in header.tensors,
        "head_scale": "none",
        "scale": "none",
        "mask": "causal",
        "positional": "relative",
        "rel_buckets": c.count("attention.relative_buckets_count"),
        "rel_max_distance": 128,
        "norm": "pre",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("attention.layer_norm_rms_epsilon", 1e-6),
        "attention_bias": False,
        "ff_bias": False,
        "feedforward": "gated" if gated else "plain",
        "activation": "gelu" if gated else "relu",
    }


def _attention(ours: str, theirs: str) -> dict[str, str]:
    return {f"{ours}.W_{x}": f"{theirs}_{y}.weight" for x, y in (("Q", "q"), ("K", "k"), ("V", "v"), ("O", "o"))}


def _layout(gated: bool) -> Family:
    ff = ({"ff.W1": "ffn_gate.weight", "ff.W3": "ffn_up.weight"} if gated else {"ff.W1": "ffn_up.weight"}) | {
        "ff.W2": "ffn_down.weight",
        "norm2.gamma": "ffn_norm.weight",
    }
    encoder = _attention("attention", "attn") | {"norm1.gamma": "attn_norm.weight"} | ff
    decoder = encoder | _attention("cross", "cross_attn") | {"cross_norm.gamma": "cross_attn_norm.weight"}
    return Family(
        "dec.blk.{i}.",
        decoder,
        {
            "embedding.E": "token_embd.weight",
            "head.W": "output.weight",
            "encoder_positional.rel_bias": "enc.blk.0.attn_rel_b.weight",
            "positional.rel_bias": "dec.blk.0.attn_rel_b.weight",
            "encoder_final_norm.gamma": "enc.output_norm.weight",
            "final_norm.gamma": "dec.output_norm.weight",
        },
        encoder_block="enc.blk.{i}.",
        encoder_names=encoder,
    )


T5 = Arch(
    t5,
    _layout(gated=True),
    alternative=(lambda spec: spec.feedforward == "plain", _layout(gated=False)),
    skipped=("dec.blk.0.cross_attn_rel_b.weight",),
)

__all__ = ["T5"]
