"""BART (BartForConditionalGeneration) and mBART (MBartForConditionalGeneration): an encoder of N_enc blocks and a
decoder of N blocks with cross-attention, LayerNorms (post-norm; mBART's pre-norm, with a final norm in each stack),
a norm of the embedded columns and learned positions (offset 2) in each stack, biases everywhere, one embedding
shared by both stacks and tied to the head. tfm's two stacks share one H, m, r and one token embedding E; a config
whose stacks differ there is refused naming the key. No GGUF architecture."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .keys import REQUIRED, Keys
from .layout import Family, attention_names, linear_names, norm_names
from .parts import activation, whole_heads
from .record import Record


def bart(c: Keys) -> dict[str, Any]:
    """BartForConditionalGeneration: post-norm, a LayerNorm of the embedded columns and learned positions
    (offset 2) in each stack, biases everywhere, one embedding shared by both stacks and tied to the head.

    Its final_logits_bias is a buffer, zero as built, not a parameter (checked when a checkpoint is read).
    """
    if not c.flag("tie_word_embeddings", True):  # BartModel's _tied_weights_keys apply only when tied
        why = "untied, each stack has its own token embedding beside shared and lm_head; tfm's stacks share E"
        raise c.refuse("tie_word_embeddings", False, why)
    d = c.count("d_model", REQUIRED, "hidden_size")
    H = _same(c, "encoder_attention_heads", "decoder_attention_heads", "number of heads H", "num_attention_heads")
    return {
        "N": c.count("decoder_layers"),
        "N_enc": c.count("encoder_layers", REQUIRED, "num_hidden_layers"),
        "H": H,
        "m": whole_heads(c, d, H, "d_model", "decoder_attention_heads"),
        "d": d,
        "r": _same(c, "encoder_ffn_dim", "decoder_ffn_dim", "feedforward size r"),
        "V": c.count("vocab_size"),
        "tie_embeddings": True,
        "embed_scale": "sqrt" if c.flag("scale_embedding", False) else "none",
        "embed_norm": True,
        "scale": "sqrt",
        "mask": "causal",
        "positional": "learned",
        "max_len": c.count("max_position_embeddings", 1024),
        "position_offset": 2,
        "norm": "post",
        "norm_eps": 1e-5,
        "attention_bias": True,
        "activation": activation(c, "activation_function", "gelu"),
    }


def mbart(c: Keys) -> dict[str, Any]:
    """MBartForConditionalGeneration: BART's stacks in pre-norm, each with a final LayerNorm (layer_norm)."""
    return bart(c) | {"norm": "pre"}


def _same(c: Keys, encoder: str, decoder: str, what: str, *aliases: str) -> int:
    """A size both stacks have in transformers' BART and tfm holds once: the two must agree."""
    ours, theirs = c.count(encoder, REQUIRED, *aliases), c.count(decoder)
    if ours != theirs:
        raise c.refuse(decoder, theirs, f"{encoder} is {ours}; tfm's encoder and decoder have the same {what}")
    return ours


# -- the checkpoint: biases everywhere, LayerNorm (gamma and beta), learned positions (P + 2 rows) per stack;
# decoder blocks `blocks.{i}.` (self-attention, `cross.` attention to the encoder's output, feedforward, norms
# `norm1`, `cross_norm`, `norm2`), encoder blocks `encoder.{j}.`, its globals `encoder_...`

QKVO = ("q_proj", "k_proj", "v_proj", "out_proj")


def _names(cross: bool) -> dict[str, str]:
    names = attention_names("attention", "self_attn", QKVO, "Wb") | norm_names("norm1", "self_attn_layer_norm")
    if cross:
        names |= attention_names("cross", "encoder_attn", QKVO, "Wb")
        names |= norm_names("cross_norm", "encoder_attn_layer_norm")
    return (
        names | linear_names("ff.{}1", "fc1") | linear_names("ff.{}2", "fc2") | norm_names("norm2", "final_layer_norm")
    )


BART = Family(
    "model.decoder.layers.{i}.",
    _names(cross=True),
    {
        "embedding.E": "model.shared.weight",
        "head.W": "lm_head.weight",
        "encoder_positional.P": "model.encoder.embed_positions.weight",
        "positional.P": "model.decoder.embed_positions.weight",
    }
    | norm_names("encoder_embedding.norm", "model.encoder.layernorm_embedding")
    | norm_names("embedding.norm", "model.decoder.layernorm_embedding"),
    encoder_block="model.encoder.layers.{i}.",
    encoder_names=_names(cross=False),
    copies={"model.encoder.embed_tokens.weight": "embedding.E", "model.decoder.embed_tokens.weight": "embedding.E"},
    zero_buffers=("final_logits_bias",),  # added to the logits; zero as transformers builds it
)

# mBART: BART's names, and the final norm of each pre-norm stack
MBART = Family(
    BART.block,
    BART.names,
    BART.globals_
    | norm_names("encoder_final_norm", "model.encoder.layer_norm")
    | norm_names("final_norm", "model.decoder.layer_norm"),
    encoder_block=BART.encoder_block,
    encoder_names=BART.encoder_names,
    copies=BART.copies,
    zero_buffers=BART.zero_buffers,
)


def without_embedding_norm(family: Family, positions: bool = True, **changes: Any) -> Family:
    """BART's or mBART's layout without the norms of the embedded columns (Marian, Pegasus, M2M-100), without the
    positions' tables where `positions` is false (M2M-100's sinusoids), with `changes` (Marian's computed table)."""
    dropped = ("embedding.norm", "encoder_embedding.norm") + (
        () if positions else ("positional.", "encoder_positional.")
    )
    return replace(family, globals_={k: v for k, v in family.globals_.items() if not k.startswith(dropped)}, **changes)


SKIPPED = (r"^(model\.)?(en|de)coder\.version$",)  # fairseq's version buffers in old BART files

RECORDS = (
    Record("bart", "BartForConditionalGeneration", bart, BART, skipped=SKIPPED),
    Record("mbart", "MBartForConditionalGeneration", mbart, MBART, skipped=SKIPPED),
)

__all__ = ["RECORDS"]
