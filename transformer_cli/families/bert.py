"""BERT and the encoders of its layout: BertModel, RobertaModel, XLMRobertaModel and CamembertModel (RoBERTa's:
positions after the padding index), RobertaPreLayerNormModel and XLMRobertaXLModel (RoBERTa with pre-norm blocks and
a last norm), DistilBertModel. Their GGUF files are all architecture bert, which tfm reads but
does not write (nor a config.json from one: the converter drops the pooler, which a BertModel's config cannot leave
out)."""

from __future__ import annotations

from typing import Any

from .checkpoints import BERT, DISTILBERT, ROBERTA_PRELN, XLMR_XL
from .gguf_keys import rows
from .keys import Keys
from .layout import Family, linear_names, norm_names
from .parts import activation, hf_activation, whole_heads
from .record import Gguf, Record


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


def encoder_keys(spec: Any) -> dict[str, Any]:
    """What BERT's descendants' config.json name alike (ELECTRA, ALBERT, MPNet, DeBERTa): the sizes, activation and
    norms' eps, as BertConfig names them."""
    return {
        "vocab_size": spec.V,
        "hidden_size": spec.d,
        "num_hidden_layers": spec.N,
        "num_attention_heads": spec.H,
        "intermediate_size": spec.r,
        "hidden_act": hf_activation(spec.activation),
        "layer_norm_eps": spec.norm_eps,
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


def roberta_prelayernorm(c: Keys) -> dict[str, Any]:
    """RobertaPreLayerNormModel: RoBERTa with each sublayer's norm before it and a norm after the last block."""
    return roberta(c) | {"norm": "pre"}


def xlm_roberta_xl(c: Keys) -> dict[str, Any]:
    """XLMRobertaXLModel: RoBERTa-PreLayerNorm's block without a norm of the embeddings."""
    return roberta(c) | {"norm": "pre", "embed_norm": False}


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


# -- GGUF (bert) as convert_hf_to_gguf.py writes it: an encoder (attention.causal false), post-norm blocks, learned
# positions and token types, a norm of the embeddings. The converter drops the pooler and the masked-LM head, so
# the file's model ends at the last block's columns; it slices RoBERTa's position table after the padding index
# (row 0 of the file's table is the first token's), so positions count from 0. What the file does not hold is
# read as the family's config has it: the exact GELU of BERT's config (llama.cpp computes the tanh form), and
# token type 0 for every token (llama.cpp's too).


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """GGUF keys -> spec: the shared sizes (`spec`) as an encoder of BERT's block."""
    spec = spec | {
        "mask": "causal" if c.flag("attention.causal", False) else "none",
        "norm": "post",
        "positional": "learned",
        "max_len": rows(header, "position_embd.weight", "the positions"),
        "embed_norm": True,
        "attention_bias": True,
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-12),
        "activation": "gelu_exact",
        "head": False,
    }
    for key in ("tie_embeddings", "context"):
        spec.pop(key, None)
    if "token_types.weight" in header.tensors:
        spec["type_vocab"] = header.tensors["token_types.weight"].shape[0]
    return spec


GGUF_LAYOUT = Family(
    "blk.{i}.",
    linear_names("attention.{}_Q", "attn_q")
    | linear_names("attention.{}_K", "attn_k")
    | linear_names("attention.{}_V", "attn_v")
    | linear_names("attention.{}_O", "attn_output")
    | linear_names("ff.{}1", "ffn_up")
    | linear_names("ff.{}2", "ffn_down")
    | norm_names("norm1", "attn_output_norm")
    | norm_names("norm2", "layer_output_norm"),
    {
        "embedding.E": "token_embd.weight",
        "embedding.T": "token_types.weight",
        "positional.P": "position_embd.weight",
    }
    | norm_names("embedding.norm", "token_embd_norm"),
)
GGUF = Gguf("bert", GGUF_LAYOUT, gguf_spec, base="sizes", read_only=True)

# -- the records: BertForMaskedLM, the form most BERT checkpoints have, builds no pooler (add_pooling_layer=False)

POOLER = ("pooler", False, ("pooler.dense.weight", "pooler.dense.bias"))
BERT_SKIPPED = (r"^cls\.", r"^embeddings\.position_ids$")  # BertForPreTraining's heads; an old buffer


def _roberta(model_type: str, hf_class: str, spec: Any, layout: Any, gguf: Any = None) -> Record:
    """A RoBERTa-like encoder's record: its ...ForMaskedLM files read too (their roberta. prefix, or the model_type's
    own, stripped; their lm_head skipped), the pooler optional."""
    prefix = "roberta_prelayernorm" if model_type == "roberta-prelayernorm" else "roberta"
    skipped = (*BERT_SKIPPED, r"^lm_head\.")
    aliases = ((rf"^{prefix}\.", ""),)
    return Record(model_type, hf_class, spec, layout, gguf=gguf, aliases=aliases, skipped=skipped, optional=POOLER)


RECORDS = (
    Record(
        "bert",
        "BertModel",
        bert,
        BERT,
        gguf=GGUF,
        aliases=((r"^bert\.", ""), (r"LayerNorm\.gamma$", "LayerNorm.weight"), (r"LayerNorm\.beta$", "LayerNorm.bias")),
        skipped=BERT_SKIPPED,
        optional=POOLER,
    ),
    _roberta("roberta", "RobertaModel", roberta, BERT, GGUF),
    _roberta("xlm-roberta", "XLMRobertaModel", roberta, BERT, GGUF),
    _roberta("camembert", "CamembertModel", roberta, BERT),
    _roberta("roberta-prelayernorm", "RobertaPreLayerNormModel", roberta_prelayernorm, ROBERTA_PRELN),
    _roberta("xlm-roberta-xl", "XLMRobertaXLModel", xlm_roberta_xl, XLMR_XL),
    Record(
        "distilbert",
        "DistilBertModel",
        distilbert,
        DISTILBERT,
        gguf=GGUF,
        aliases=((r"^distilbert\.", ""),),  # DistilBertForMaskedLM's files
        skipped=(r"^cls\.", r"^embeddings\.position_ids$", r"^vocab_(transform|layer_norm|projector)\."),
    ),
)

__all__ = ["RECORDS"]
