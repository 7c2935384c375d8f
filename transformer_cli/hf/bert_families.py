"""BERT and the encoders of its layout: BertModel, RobertaModel and XLMRobertaModel (positions after the padding
index), DistilBertModel."""

from __future__ import annotations

from typing import Any

from ..families.keys import Keys
from ..families.parts import activation, whole_heads


def bert(c: Keys) -> dict[str, Any]:
    """BertModel: post-norm, learned positions and token types, a norm of the embeddings, a pooler, no head."""
    kind = c.text("position_embedding_type", "absolute")
    if kind != "absolute":
        raise c.refuse("position_embedding_type", kind, "tfm's BERT has absolute (learned) positions only")
    if c.flag("add_cross_attention", False):
        raise c.refuse("add_cross_attention", True, "cross-attention layers; tfm's blocks attend to themselves")
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    return {
        "N": c.count("num_hidden_layers"),
        "H": H,
        "m": whole_heads(c, d, H),
        "d": d,
        "r": c.count("intermediate_size"),
        "V": c.count("vocab_size"),
        "head": False,
        "type_vocab": c.count("type_vocab_size", 2),
        "embed_norm": True,
        "pooler": True,
        "scale": "sqrt",
        "mask": "causal" if c.flag("is_decoder", False) else "none",
        "positional": "learned",
        "max_len": c.count("max_position_embeddings", 512),
        "norm": "post",
        "norm_eps": c.number("layer_norm_eps", 1e-12),
        "attention_bias": True,
        "activation": activation(c, "hidden_act", "gelu"),
    }


def roberta(c: Keys) -> dict[str, Any]:
    """RobertaModel, XLMRobertaModel: BERT whose positions start after the padding index (pad_token_id + 1), the
    padding token taking no position; one token type in the published files."""
    pad = c.index("pad_token_id", 1)
    spec = bert(c) | {"type_vocab": c.count("type_vocab_size", 2), "position_offset": pad + 1, "pad_id": pad}
    positions = c.count("max_position_embeddings", 512)
    if positions <= pad + 1:
        raise c.refuse("max_position_embeddings", positions, f"more than pad_token_id + 1 = {pad + 1} positions")
    return spec | {"max_len": positions - pad - 1}


def distilbert(c: Keys) -> dict[str, Any]:
    """DistilBertModel: BERT's block (post-norm, gelu) under other names, no token types and no pooler; its norms'
    eps is 1e-12 in the code (no config key). A sinusoidal table (sinusoidal_pos_embds) is a parameter too: read."""
    d, H = c.count("dim"), c.count("n_heads")
    return {
        "N": c.count("n_layers"),
        "H": H,
        "m": whole_heads(c, d, H, "dim", "n_heads"),
        "d": d,
        "r": c.count("hidden_dim"),
        "V": c.count("vocab_size"),
        "head": False,
        "embed_norm": True,
        "scale": "sqrt",
        "positional": "learned",
        "max_len": c.count("max_position_embeddings", 512),
        "norm": "post",
        "norm_eps": 1e-12,
        "attention_bias": True,
        "activation": activation(c, "activation", "gelu"),
    }
