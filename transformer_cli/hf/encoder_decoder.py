"""T5's configs onto tfm's encoder-decoder spec (N_enc encoder blocks, the N decoder blocks with cross-attention),
as transformers 5.24 builds T5ForConditionalGeneration (BART's: families/bart.py).
"""

from __future__ import annotations

from typing import Any

from ..families.keys import REQUIRED, Keys
from ..families.parts import ACTIVATIONS


def t5(c: Keys) -> dict[str, Any]:
    """T5ForConditionalGeneration: relative position bias tables in block 0 of each stack, RMSNorm before each
    sublayer and at the end of each stack, no biases, no score scaling, heads of d_kv (not d / H)."""
    N_enc = c.count("num_layers", REQUIRED, "num_hidden_layers")
    if not c.has("num_layers") and not c.has("num_decoder_layers"):  # T5Config reads num_layers before the alias
        why = "transformers 5.24 gives the decoder num_layers' default, 6, unless num_decoder_layers says"
        raise c.refuse("num_hidden_layers", N_enc, why)
    d, H = c.count("d_model", REQUIRED, "hidden_size"), c.count("num_heads", REQUIRED, "num_attention_heads")
    buckets, distance = c.count("relative_attention_num_buckets", 32), c.count("relative_attention_max_distance", 128)
    if buckets < 4:  # the encoder's half of the buckets for each direction would hold no exact bucket
        why = "the encoder splits them between keys before and after the query, each half needing an exact bucket "
        why += "and a logarithmic one"
        raise c.fail("relative_attention_num_buckets", buckets, f"at least 4 ({why})")
    if distance <= buckets // 2:  # transformers' log(n / exact) / log(distance / exact) divides by <= 0
        raise c.fail("relative_attention_max_distance", distance, "more than relative_attention_num_buckets / 2")
    return {
        "N": c.count("num_decoder_layers", N_enc),
        "N_enc": N_enc,
        "H": H,
        "m": c.count("d_kv", REQUIRED, "head_dim"),
        "d": d,
        "r": c.count("d_ff"),
        "V": c.count("vocab_size"),
        **_t5_head(c),
        "scale": "none",
        "mask": "causal",
        "positional": "relative",
        "rel_buckets": buckets,
        "rel_max_distance": distance,
        "norm": "pre",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("layer_norm_epsilon", 1e-6),
        "attention_bias": False,
        "ff_bias": False,
        **_t5_feedforward(c),
    }


def mt5(c: Keys) -> dict[str, Any]:
    """MT5ForConditionalGeneration: T5's stacks (gated GELU by default) and a head never scaled: its own where the
    file says untied (the published checkpoints hold lm_head), else tied to the shared embedding."""
    spec = t5(Keys({"feed_forward_proj": "gated-gelu"} | c.data, c.source))
    return spec | {"tie_embeddings": c.flag("tie_word_embeddings", True), "head_scale": "none"}


def _t5_feedforward(c: Keys) -> dict[str, Any]:
    """feed_forward_proj 'act' or 'gated-act' (T5Config.__post_init__); 'gated-gelu' is the tanh form."""
    proj = c.text("feed_forward_proj", "relu")
    parts = proj.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise c.fail("feed_forward_proj", proj, "'ACT' or 'gated-ACT' (relu, gated-gelu)")
    name = "gelu_new" if proj == "gated-gelu" else parts[-1]
    if name not in ACTIVATIONS:
        raise c.refuse("feed_forward_proj", proj, f"tfm implements the activations {', '.join(ACTIVATIONS)}")
    return {"feedforward": "gated" if len(parts) == 2 else "plain", "activation": ACTIVATIONS[name]}


def _t5_head(c: Keys) -> dict[str, Any]:
    """Tied and scaled by d^-1/2, or its own head unscaled.

    T5Config (5.x) always sets tie_word_embeddings true and keeps the file's choice as scale_decoder_outputs
    (written by 5.x, read back as is; else `tie_word_embeddings is not False`); from_pretrained then unties
    lm_head when the file holds one that differs, as the untied releases (v1.1, flan-t5) do. So an unscaled
    config means its own lm_head, whatever tie_word_embeddings says.
    """
    tied = c.flag("tie_word_embeddings", True)
    scaled = c.flag("scale_decoder_outputs", tied)
    return {"tie_embeddings": tied and scaled, "head_scale": "sqrt" if scaled else "none"}


__all__ = ["mt5", "t5"]
