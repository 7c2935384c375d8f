"""MPT (MptForCausalLM, MosaicML's MPT-7B/30B): ALiBi of maximum bias 8 instead of positions (its slopes for any
number of heads are BLOOM's, its bias constant per query row: the softmax is the same), q, k and v fused in Wqkv as
[Q; K; V], a plain MLP of 4 d with the exact GELU, LayerNorms without biases, no bias anywhere, a tied head; no
longer sequence than max_seq_len (its ALiBi table). transformers 5.24 builds that model whatever expansion_ratio,
no_bias, qk_ln, attn_type, alibi, alibi_bias_max, learned_pos_emb or logit_scale say: tfm follows it and says so
where a file sets one otherwise. clip_qkv clamps the fused q, k and v (qkv_clip).

Its GGUF file (mpt, converted from MosaicML's MPTForCausalLM) holds GPT-2's names without biases, ALiBi's maximum
bias (attention.max_alibi_bias: 8 is read, another refused), the clamp (attention.clamp_kqv) and a norm eps of
1e-5 whatever the model's; no softmax_scale. tfm reads it as the model transformers runs, with the exact GELU:
llama.cpp's mpt graph uses the tanh GELU."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .gguf_layout import GLOBALS_WITH_BIAS, PLAIN_BLOCK, QKV_FUSED
from .keys import REQUIRED, Keys
from .layout import Family, norm_names
from .parts import CAUSAL_PRE, whole_heads
from .record import Gguf, Record

_IGNORED = (  # (key, what transformers does anyway, why): the top-level keys, then attn_config's
    ("expansion_ratio", 4, "5.24's MptMLP is always 4 d wide"),
    ("no_bias", True, "5.24's MPT has no biases"),
    ("learned_pos_emb", True, "5.24's MPT has ALiBi and no learned positions"),
    ("logit_scale", None, "5.24's MPT does not scale its logits"),
)
_IGNORED_ATTENTION = (
    ("qk_ln", False, "5.24's MptAttention has no query/key norms"),
    ("attn_type", "multihead_attention", "5.24's MptAttention has a key and value per head"),
    ("alibi", True, "5.24's MPT always adds ALiBi"),
    ("alibi_bias_max", 8, "5.24's MPT builds its ALiBi of maximum bias 8"),
)


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    attention = c.nested("attn_config") or Keys({}, c.source, "attn_config.", c.notes)
    for keys, table in ((c, _IGNORED), (attention, _IGNORED_ATTENTION)):
        for key, applied, why in table:
            keys.ignored(key, why, unless=applied)
    d, H = c.count("d_model", REQUIRED, "hidden_size"), c.count("n_heads", REQUIRED, "num_attention_heads")
    return (
        CAUSAL_PRE
        | {
            "N": c.count("n_layers", REQUIRED, "num_hidden_layers"),
            "H": H,
            "m": whole_heads(c, d, H, "d_model", "n_heads"),
            "d": d,
            "r": 4 * d,
            "V": c.count("vocab_size"),
            "context": c.count("max_seq_len", 2048),
            "tie_embeddings": c.flag("tie_word_embeddings", True),
            "positional": "alibi",
            "scale": attention.number("softmax_scale", None) or "sqrt",
            "norm_eps": c.number("layer_norm_epsilon", 1e-5),
            "norm_bias": False,
            "attention_bias": False,
            "ff_bias": False,
            "activation": "gelu_exact",
        }
        | ({"qkv_clip": attention.number("clip_qkv")} if attention.has("clip_qkv") else {})
    )


def config(spec: Spec) -> dict[str, Any]:
    """spec -> MPT's config.json."""
    scale = None if spec.scale == "sqrt" else spec.scale
    return {
        "vocab_size": spec.V,
        "d_model": spec.d,
        "n_layers": spec.N,
        "n_heads": spec.H,
        "expansion_ratio": spec.r // spec.d,
        "max_seq_len": spec.context or 2048,
        "layer_norm_epsilon": spec.norm_eps,
        "no_bias": True,
        "tie_word_embeddings": spec.tie_embeddings,
        "attn_config": {"softmax_scale": scale, "alibi": True, "alibi_bias_max": 8, "clip_qkv": spec.qkv_clip},
    }


MPT = Family(
    "transformer.blocks.{i}.",
    {
        "attention.W_O": "attn.out_proj.weight",
        "ff.W1": "ffn.up_proj.weight",
        "ff.W2": "ffn.down_proj.weight",
    }
    | norm_names("norm1", "norm_1")
    | norm_names("norm2", "norm_2"),
    {"embedding.E": "transformer.wte.weight", "head.W": "lm_head.weight"}
    | norm_names("final_norm", "transformer.norm_f"),
    fused=(("attn.Wqkv.weight", ("attention.W_Q", "attention.W_K", "attention.W_V"), lambda spec: 1),),
)


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """The sizes (the feedforward 4 d), ALiBi of maximum bias 8, LayerNorms without biases, no biases, exact GELU."""
    if c.number("attention.max_alibi_bias", 8.0) != 8.0:
        raise c.refuse("attention.max_alibi_bias", c.data.get(f"{c.prefix}attention.max_alibi_bias"), "8 (ALiBi)")
    clip = {"qkv_clip": c.number("attention.clamp_kqv")} if c.has("attention.clamp_kqv") else {}
    return (
        spec
        | clip
        | {
            "positional": "alibi",
            "norm_eps": c.number("attention.layer_norm_epsilon"),
            "norm_bias": False,
            "attention_bias": False,
            "ff_bias": False,
            "activation": "gelu_exact",
        }
    )


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    clip = {"attention.clamp_kqv": float(spec.qkv_clip)} if spec.qkv_clip is not None else {}
    return clip | {"attention.max_alibi_bias": 8.0}


GGUF_LAYOUT = Family(
    "blk.{i}.",
    PLAIN_BLOCK | norm_names("norm1", "attn_norm") | norm_names("norm2", "ffn_norm"),
    GLOBALS_WITH_BIAS,
    fused=QKV_FUSED,
)
GGUF = Gguf("mpt", GGUF_LAYOUT, gguf_spec, gguf_metadata, base="sizes")
RECORD = Record("mpt", "MptForCausalLM", spec, MPT, config, GGUF, config_alone=True)

__all__ = ["RECORD"]
