"""T5 (T5ForConditionalGeneration: T5, T5 1.1, flan-T5) and mT5 (MT5ForConditionalGeneration): an encoder of N_enc
blocks and a decoder of N blocks with cross-attention, RMSNorm before each sublayer, block 0's relative position
bias table in each stack, no biases, no score scaling, heads of d_kv (not d / H); tfm's two stacks share one H, m,
r and one token embedding E. The checkpoint's feedforward is gated or not as feed_forward_proj says; the GGUF
architecture t5 carries both families' files, a tied head read back as mT5's (never scaled)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..spec.definition import Spec
from .gguf_keys import vocabulary
from .keys import REQUIRED, Keys
from .layout import Family, attention_names
from .parts import ACTIVATIONS
from .record import Gguf, Record


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
        **_head(c),
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
        **_feedforward(c),
    }


def mt5(c: Keys) -> dict[str, Any]:
    """MT5ForConditionalGeneration: T5's stacks (gated GELU by default) and a head never scaled: its own where the
    file says untied (the published checkpoints hold lm_head), else tied to the shared embedding."""
    spec = t5(Keys({"feed_forward_proj": "gated-gelu"} | c.data, c.source))
    return spec | {"tie_embeddings": c.flag("tie_word_embeddings", True), "head_scale": "none"}


def umt5(c: Keys) -> dict[str, Any]:
    """UMT5ForConditionalGeneration: mT5's stacks (gated GELU by default) with a relative bias table in every
    self-attention of both stacks (rel_per_block), and T5's head (tied and scaled by d^-1/2, or its own)."""
    return t5(Keys({"feed_forward_proj": "gated-gelu"} | c.data, c.source)) | {"rel_per_block": True}


def _feedforward(c: Keys) -> dict[str, Any]:
    """feed_forward_proj 'act' or 'gated-act' (T5Config.__post_init__); 'gated-gelu' is the tanh form."""
    proj = c.text("feed_forward_proj", "relu")
    parts = proj.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise c.fail("feed_forward_proj", proj, "'ACT' or 'gated-ACT' (relu, gated-gelu)")
    name = "gelu_new" if proj == "gated-gelu" else parts[-1]
    if name not in ACTIVATIONS:
        raise c.refuse("feed_forward_proj", proj, f"tfm implements the activations {', '.join(ACTIVATIONS)}")
    return {"feedforward": "gated" if len(parts) == 2 else "plain", "activation": ACTIVATIONS[name]}


def _head(c: Keys) -> dict[str, Any]:
    """Tied and scaled by d^-1/2, or its own head unscaled.

    T5Config (5.x) always sets tie_word_embeddings true and keeps the file's choice as scale_decoder_outputs
    (written by 5.x, read back as is; else `tie_word_embeddings is not False`); from_pretrained then unties
    lm_head when the file holds one that differs, as the untied releases (v1.1, flan-t5) do. So an unscaled
    config means its own lm_head, whatever tie_word_embeddings says.
    """
    tied = c.flag("tie_word_embeddings", True)
    scaled = c.flag("scale_decoder_outputs", tied)
    return {"tie_embeddings": tied and scaled, "head_scale": "sqrt" if scaled else "none"}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> every key of T5's config.json: its own head as T5 1.1's config (t5, untied); a tied one unscaled as
    mT5's config is (T5's config would scale it by d^-1/2, which a GGUF file's model does not: `model_type`)."""
    return {
        "is_encoder_decoder": True,
        "vocab_size": spec.V,
        "d_model": spec.d,
        "d_kv": spec.m,
        "d_ff": spec.r,
        "num_layers": spec.N_enc,
        "num_decoder_layers": spec.N,
        "num_heads": spec.H,
        "relative_attention_num_buckets": spec.rel_buckets,
        "relative_attention_max_distance": spec.rel_max_distance,
        "layer_norm_epsilon": spec.norm_eps,
        "feed_forward_proj": "gated-gelu" if spec.feedforward == "gated" else spec.activation,
        "tie_word_embeddings": spec.tie_embeddings,
        "decoder_start_token_id": 0,
    }


# -- the checkpoint: decoder blocks `blocks.{i}.` (self-attention, `cross.` attention to the encoder's output,
# feedforward, norms `norm1`, `cross_norm`, `norm2`), encoder blocks `encoder.{j}.`, its globals `encoder_...`

QKVO = ("q", "k", "v", "o")
UNTIED = (  # the case tfm cannot tell from config.json alone
    "(an unscaled T5 head is untied, as the v1.1 and flan-t5 files hold it; a folder whose checkpoint has no "
    "lm_head.weight is read tied to shared.weight, as transformers 5.x saves and reads it)"
)


def _ff(layer: str, gated: bool) -> dict[str, str]:
    """T5DenseActDense (wi, wo) or T5DenseGatedActDense: act(wi_0 x) * wi_1 x -> W1 = wi_0, W3 = wi_1."""
    up = (
        {"ff.W1": "DenseReluDense.wi_0.weight", "ff.W3": "DenseReluDense.wi_1.weight"}
        if gated
        else {"ff.W1": "DenseReluDense.wi.weight"}
    )
    names = {ours: f"{layer}.{theirs}" for ours, theirs in up.items()}
    return names | {"ff.W2": f"{layer}.DenseReluDense.wo.weight", "norm2.gamma": f"{layer}.layer_norm.weight"}


def checkpoint(gated: bool) -> Family:
    """T5ForConditionalGeneration: encoder blocks [self-attention, feedforward], decoder blocks [self-attention,
    EncDecAttention, feedforward], each sublayer with its layer_norm; one shared embedding."""
    self_attention = attention_names("attention", "layer.0.SelfAttention", QKVO, "W") | {
        "norm1.gamma": "layer.0.layer_norm.weight"
    }
    cross = attention_names("cross", "layer.1.EncDecAttention", QKVO, "W") | {
        "cross_norm.gamma": "layer.1.layer_norm.weight"
    }
    table = "block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    return Family(
        "decoder.block.{i}.",
        self_attention | cross | _ff("layer.2", gated),
        {
            "embedding.E": "shared.weight",
            "head.W": "lm_head.weight",
            "encoder_positional.rel_bias": f"encoder.{table}",
            "positional.rel_bias": f"decoder.{table}",
            "encoder_final_norm.gamma": "encoder.final_layer_norm.weight",
            "final_norm.gamma": "decoder.final_layer_norm.weight",
        },
        encoder_block="encoder.block.{i}.",
        encoder_names=self_attention | _ff("layer.1", gated),
        copies={"encoder.embed_tokens.weight": "embedding.E", "decoder.embed_tokens.weight": "embedding.E"},
        hints={"lm_head.weight": UNTIED},
    )


def umt5_checkpoint(gated: bool) -> Family:
    """UMT5: T5's names, every self-attention's relative_attention_bias its block's own table."""
    base, table = checkpoint(gated), {"positional.rel_bias": "layer.0.SelfAttention.relative_attention_bias.weight"}
    stacks = {k: v for k, v in base.globals_.items() if not k.endswith("positional.rel_bias")}
    return Family(
        base.block,
        base.names | table,
        stacks,
        encoder_block=base.encoder_block,
        encoder_names=base.encoder_names | table,
        copies=base.copies,
        hints=base.hints,
    )


def _umt5_checkpoint_of(config: Mapping[str, Any]) -> Family:
    return umt5_checkpoint(str(config.get("feed_forward_proj", "gated-gelu")).startswith("gated-"))


def _checkpoint_of(default: str):
    """The layout of a config: gated as its feed_forward_proj says (`default` where it says nothing)."""

    def layout(config: Mapping[str, Any]) -> Family:
        return checkpoint(str(config.get("feed_forward_proj", default)).startswith("gated-"))

    return layout


# -- GGUF (t5) as convert_hf_to_gguf.py writes it: an encoder (enc.blk) and a decoder (dec.blk) of RMSNorms before
# each sublayer, block 0's relative position bias table in each stack, cross-attention in the decoder, one shared
# token embedding, a head of its own where the file has output.weight. What the file does not hold is read as
# llama.cpp reads it: the feedforward gated GELU (tanh) where the file has ffn_gate, else plain ReLU; the bias
# tables' max distance 128; the scores unscaled; and the head never scaled, tied or not (transformers scales T5
# 1.0's tied head by d^-1/2; the file does not say so, and llama.cpp does not). UMT5's files (its converter is T5's)
# hold a table in every block, attn_rel_b, which llama.cpp's t5 graph uses where a block has one: read as UMT5's
# model where block 1 has its own (a one-block stack is T5's alike).


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """GGUF keys -> spec (every key its own: `spec` is empty)."""
    N_enc = c.count("block_count")
    gated = "enc.blk.0.ffn_gate.weight" in header.tensors
    per_block = {"rel_per_block": True} if "enc.blk.1.attn_rel_b.weight" in header.tensors else {}
    return (
        spec
        | per_block
        | {
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
    )


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> the t5.* keys beyond the shared ones (block_count the encoder's)."""
    return {
        "block_count": spec.N_enc,
        "decoder_block_count": spec.N,
        "attention.relative_buckets_count": spec.rel_buckets,
    }


def _gguf_attention(ours: str, theirs: str) -> dict[str, str]:
    return {f"{ours}.W_{x}": f"{theirs}_{y}.weight" for x, y in (("Q", "q"), ("K", "k"), ("V", "v"), ("O", "o"))}


def gguf_layout(gated: bool, per_block: bool = False) -> Family:
    """T5's file: gated or plain feedforwards, the bias tables block 0's (T5) or every block's (UMT5)."""
    ff = ({"ff.W1": "ffn_gate.weight", "ff.W3": "ffn_up.weight"} if gated else {"ff.W1": "ffn_up.weight"}) | {
        "ff.W2": "ffn_down.weight",
        "norm2.gamma": "ffn_norm.weight",
    }
    table = {"positional.rel_bias": "attn_rel_b.weight"} if per_block else {}
    encoder = _gguf_attention("attention", "attn") | {"norm1.gamma": "attn_norm.weight"} | ff | table
    decoder = encoder | _gguf_attention("cross", "cross_attn") | {"cross_norm.gamma": "cross_attn_norm.weight"}
    tables = {
        "encoder_positional.rel_bias": "enc.blk.0.attn_rel_b.weight",
        "positional.rel_bias": "dec.blk.0.attn_rel_b.weight",
    }
    return Family(
        "dec.blk.{i}.",
        decoder,
        {
            "embedding.E": "token_embd.weight",
            "head.W": "output.weight",
            "encoder_final_norm.gamma": "enc.output_norm.weight",
            "final_norm.gamma": "dec.output_norm.weight",
        }
        | ({} if per_block else tables),
        encoder_block="enc.blk.{i}.",
        encoder_names=encoder,
    )


def _model_type(spec: Spec) -> str:
    return "umt5" if spec.rel_per_block else "mt5" if spec.tie_embeddings else "t5"


GGUF = Gguf(
    "t5",
    gguf_layout(gated=True),
    gguf_spec,
    gguf_metadata,
    base="none",
    skipped=("dec.blk.0.cross_attn_rel_b.weight",),
    alternatives=(
        (lambda spec: spec.rel_per_block and spec.feedforward == "plain", gguf_layout(False, per_block=True)),
        (lambda spec: spec.rel_per_block, gguf_layout(True, per_block=True)),
        (lambda spec: spec.feedforward == "plain", gguf_layout(gated=False)),
    ),
    model_type=_model_type,
)

# -- the records (t5 first: a GGUF t5 file's model is T5's unless its head is tied); a T5 saved by transformers 5
# from an untied config holds no lm_head: transformers ties it to shared (unscaled)

OPTIONAL = ("tie_embeddings", True, ("lm_head.weight",))
SKIPPED = (r"^decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight$",)  # an unused table

RECORDS = (
    Record(
        "t5",
        "T5ForConditionalGeneration",
        t5,
        checkpoint(gated=False),
        config,
        GGUF,
        config_alone=True,
        checkpoint_for=_checkpoint_of("relu"),
        skipped=SKIPPED,
        optional=OPTIONAL,
    ),
    Record(
        "mt5",
        "MT5ForConditionalGeneration",
        mt5,
        checkpoint(gated=True),
        config,
        GGUF,
        config_alone=True,
        checkpoint_for=_checkpoint_of("gated-gelu"),
        skipped=SKIPPED,
        optional=OPTIONAL,
    ),
    Record(
        "umt5",
        "UMT5ForConditionalGeneration",
        umt5,
        umt5_checkpoint(gated=True),
        config,
        GGUF,
        config_alone=True,
        checkpoint_for=_umt5_checkpoint_of,
        skipped=SKIPPED,
        optional=OPTIONAL,
    ),
)

__all__ = ["RECORDS", "checkpoint"]
