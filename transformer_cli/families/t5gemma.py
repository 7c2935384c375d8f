"""T5Gemma (T5GemmaForConditionalGeneration): an encoder-decoder of Gemma 2's stacks. Each stack is read from its own
sub-config (`encoder`, `decoder`) as Gemma 2's: four (1 + gamma) RMSNorms a block, sqrt(d) on the embedded columns,
GeGLU, scores scaled by query_pre_attn_scalar^-1/2 and soft-capped, rotary positions, sliding and full layers by
layer_types. The decoder's blocks are the spec's; the encoder's keys that differ (its width, heads, window, ...) are
the spec's `encoder`. The encoder's sliding layers see the keys within sliding_window on either side, inclusive
(transformers' bidirectional window), tfm's unmasked window sliding_window + 1. Each decoder block's cross-attention
sits in a sandwich of its own two norms, has the decoder's heads and key/value heads (cross_G), no positions, and
reads keys and values of the encoder's width. The two stacks have their own embeddings (V_src the encoder's), the
head the decoder's, tied as the top-level tie_word_embeddings says (the sub-configs' are ignored, as transformers
ignores them), its logits soft-capped by the decoder's final_logit_softcapping. The encoder masks its source's
padding: tfm runs unpadded sources (pad_id). No GGUF architecture."""

from __future__ import annotations

from typing import Any

from ..spec.encoder_decoder_keys import ENCODER_KEYS
from .gemma import gemma2
from .keys import Keys
from .layout import Family, attention_names, norm_names
from .record import Record

ROPE_KEYS = ("positional", "rope_scaling", "rope_factor", "rope_original", "rope_fraction", "context")


def _sub(c: Keys, name: str) -> Keys:
    """One stack's sub-config."""
    stack = c.nested(name)
    if stack is None:
        raise c.fail(name, c.data.get(name), "the stack's own config (an object of Gemma 2's keys)")
    return stack


def _stack(c: Keys, name: str) -> dict[str, Any]:
    """One stack's sub-config read as Gemma 2's model (its layer_types alternating from a sliding layer 0)."""
    stack, tied = _sub(c, name), c.flag("tie_word_embeddings", True)
    stack.ignored("tie_word_embeddings", "ties the head by the top-level tie_word_embeddings alone", tied)
    return gemma2(stack)


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec: the decoder's keys, the encoder's where they differ."""
    if c.flag("is_encoder_decoder", True) is False:
        raise c.refuse("is_encoder_decoder", False, "tfm maps T5GemmaForConditionalGeneration, the encoder-decoder")
    dec, enc = _stack(c, "decoder"), _stack(c, "encoder")
    _sub(c, "encoder").ignored("final_logit_softcapping", "soft-caps the decoder's logits alone", 30.0)
    if c.data.get("vocab_size") != dec["V"]:  # (T5GemmaConfig writes its default, 256000, whatever the stacks')
        c.ignored("vocab_size", "builds each stack's embedding from its own vocab_size", 256000)
    for key in ROPE_KEYS:
        if enc.get(key) != dec.get(key):
            why = f"the decoder's is {dec.get(key)}; tfm's two stacks share the rotary's kind"
            raise c.refuse(f"encoder.rope_parameters ({key})", enc.get(key), why)
    if "window" in enc:  # (transformers' bidirectional window: |i - j| <= sliding_window)
        enc["window"] += 1
    enc.setdefault("attention_layers", ["sliding"] if "window" in enc else ["full"])
    own = {key: enc[key] for key in ENCODER_KEYS if key in enc and enc[key] != dec.get(key)}
    if "window" not in enc and "window" not in dec:
        own.pop("attention_layers", None)
    kv = {"cross_G": dec["G"]} if "G" in dec else {}
    stacks = {"N_enc": enc["N"], "V_src": enc["V"], "pad_id": _sub(c, "encoder").index("pad_token_id", 0)}
    tied = {"tie_embeddings": c.flag("tie_word_embeddings", True)}
    return dec | kv | stacks | ({"encoder": own} if own else {}) | tied


def _names(cross: bool) -> dict[str, str]:
    names = attention_names("attention", "self_attn", ("q_proj", "k_proj", "v_proj", "o_proj"), "Wb")
    names |= norm_names("norm1", "pre_self_attn_layernorm") | norm_names("norm1_out", "post_self_attn_layernorm")
    names |= {f"ff.W{i}": f"mlp.{p}_proj.weight" for i, p in ((1, "gate"), (3, "up"), (2, "down"))}
    names |= norm_names("norm2", "pre_feedforward_layernorm") | norm_names("norm2_out", "post_feedforward_layernorm")
    if cross:
        names |= attention_names("cross", "cross_attn", ("q_proj", "k_proj", "v_proj", "o_proj"), "Wb")
        names |= norm_names("cross_norm", "pre_cross_attn_layernorm")
        names |= norm_names("cross_norm_out", "post_cross_attn_layernorm")
    return names


T5GEMMA = Family(
    "model.decoder.layers.{i}.",
    _names(cross=True),
    {
        "embedding.E": "model.decoder.embed_tokens.weight",
        "encoder_embedding.E": "model.encoder.embed_tokens.weight",
        "head.W": "lm_head.out_proj.weight",
        "final_norm.gamma": "model.decoder.norm.weight",
        "encoder_final_norm.gamma": "model.encoder.norm.weight",
    },
    encoder_block="model.encoder.layers.{i}.",
    encoder_names=_names(cross=False),
)

RECORD = Record("t5gemma", "T5GemmaForConditionalGeneration", spec, T5GEMMA)

__all__ = ["RECORD"]
