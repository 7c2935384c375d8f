"""ModernBERT (ModernBertModel, answerdotai/ModernBERT-base and -large, and the embedders and rerankers built on it),
and its decoder (ModernBertDecoderForCausalLM, jhu-clsp's Ettin decoders): pre-norm blocks of LayerNorms without
biases (norm_bias), fused Wqkv and GeGLU Wi ([input; gate], the input activated), rotary positions on whole heads,
every global_attn_every_n_layers-th layer full and the others sliding over a band of local_attention // 2 keys
either way (|s - t| <= local_attention // 2: tfm's unmasked window w = local_attention // 2 + 1), each kind with its
own base (160,000 and 10,000 by default), a norm of the embeddings and none before block 0's attention
(first_attn_norm), a final norm; run as tfm runs BERT, the base model. Its ...ForMaskedLM files (a model. prefix, a
head and a decoder) are read too, the heads skipped.

The decoder: the same blocks with q, k and v apart, causal, its sliding layers seeing the sliding_window latest keys
(local_attention // 2 unless the file names it: transformers reads that key), and a head: the final columns through
lm_head's dense (a bias with classifier_bias), activation and norm (head_transform), then the tied decoder with its
bias (decoder_bias).

ModernBERT's GGUF file (modern-bert): the fused Wqkv and Wi, the embeddings' norm, no norm before block 0's
attention, local_attention as attention.sliding_window with global_attn_every_n_layers as its pattern (a count:
block 0 full), each kind's base. The converter writes norm_eps as the RMS eps (llama.cpp requires
layer_norm_epsilon, which tfm writes): read from either."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import _one
from .config_keys import layer_types
from .gguf_keys import sliding_kinds, windowed
from .keys import Keys
from .layout import Family, linear_names, norm_names
from .parts import activation, hf_activation, sliding_rope, typed_layers, typed_ropes, whole_heads
from .record import Gguf, Record

BASES = {"full_attention": 160_000.0, "sliding_attention": 10_000.0}  # ModernBertConfig.default_theta


def _ropes(c: Keys) -> Keys:
    """The config with 5.x's rope_parameters per layer type: 4.x's global_rope_theta and local_rope_theta moved
    there as ModernBertConfig moves them (a rope_scaling of both kinds refused)."""
    if c.nested("rope_scaling") is not None:
        raise c.refuse("rope_scaling", c.data["rope_scaling"], "ModernBERT's rotary unscaled")
    nested = c.nested("rope_parameters")
    if nested is not None and any(isinstance(v, dict) for v in nested.data.values()):
        return c
    full = {"rope_type": "default", "rope_theta": c.number("global_rope_theta", BASES["full_attention"])}
    local = {"rope_type": "default", "rope_theta": c.number("local_rope_theta", BASES["sliding_attention"])}
    rotary = {"full_attention": full, "sliding_attention": local}
    return Keys(c.data | {"rope_parameters": rotary}, c.source, notes=c.notes)


def spec(c: Keys, causal: bool = False) -> dict[str, Any]:
    """config.json -> spec (ModernBertConfig's defaults; ModernBertDecoderConfig's with `causal`)."""
    d, H, N = c.count("hidden_size", 768), c.count("num_attention_heads", 12), c.count("num_hidden_layers", 22)
    m, positions = whole_heads(c, d, H), c.count("max_position_embeddings", 8192)
    every = c.count("global_attn_every_n_layers", 3)
    kinds = ["sliding_attention" if i % every else "full_attention" for i in range(N)]
    window = c.count("local_attention", 128) // 2 + 1  # (unmasked: |s - t| <= local_attention // 2)
    if causal:  # the decoder's sliding_window, its config's local_attention // 2 unless the file says
        window = c.count("sliding_window", window - 1)
    full, local = typed_ropes(_ropes(c), positions, m, BASES["full_attention"], BASES["sliding_attention"], 0.0)
    out = {
        "N": N,
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size", 1152),
        "V": c.count("vocab_size", 50368),
        "head": False,
        "mask": "causal" if causal else "none",
        "scale": "sqrt",
        "embed_norm": True,
        "norm": "pre",
        "first_attn_norm": False,
        "norm_eps": c.number("norm_eps", 1e-5),
        "norm_bias": c.flag("norm_bias", False),
        "attention_bias": c.flag("attention_bias", False),
        "feedforward": "gated",
        "activation": activation(c, "hidden_activation", "gelu"),
        "ff_bias": c.flag("mlp_bias", False),
    }
    return sliding_rope(out | full | typed_layers(c, N, window, kinds), local)


def decoder_spec(c: Keys) -> dict[str, Any]:
    """ModernBertDecoderConfig's config.json -> spec: the encoder's blocks, causal, and its head."""
    act, head_act = c.text("hidden_activation", "gelu"), c.text("classifier_activation", "gelu")
    if head_act != act:
        raise c.refuse("classifier_activation", head_act, f"the blocks' hidden_activation ({act}) in tfm's head")
    head: dict[str, Any] = {"head": True, "tie_embeddings": c.flag("tie_word_embeddings", True)}
    head |= {"head_transform": "affine" if c.flag("classifier_bias", False) else "linear"}
    return spec(c, causal=True) | head | {"head_bias": c.flag("decoder_bias", True)}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> ModernBertConfig's config.json (5.x's rope_parameters per layer type)."""
    local = spec.rope_local_theta or spec.rope_theta
    rotary = {
        "full_attention": {"rope_type": "default", "rope_theta": spec.rope_theta},
        "sliding_attention": {"rope_type": "default", "rope_theta": local},
    }
    return {
        "vocab_size": spec.V,
        "hidden_size": spec.d,
        "intermediate_size": spec.r,
        "num_hidden_layers": spec.N,
        "num_attention_heads": spec.H,
        "hidden_activation": hf_activation(spec.activation),
        "max_position_embeddings": spec.context or 8192,
        "norm_eps": spec.norm_eps,
        "norm_bias": spec.norm_bias,
        "attention_bias": spec.attention_bias,
        "mlp_bias": spec.ff_bias,
        "local_attention": 2 * ((spec.window or 1) - (spec.mask == "none")),
        "layer_types": layer_types(spec),
        "rope_parameters": rotary,
    } | (_head_keys(spec) if spec.head else {})


def _head_keys(spec: Spec) -> dict[str, Any]:
    """The decoder's head keys."""
    act = hf_activation(spec.activation)
    classifier = {"classifier_bias": spec.head_transform == "affine", "classifier_activation": act}
    return classifier | {"decoder_bias": spec.head_bias, "tie_word_embeddings": spec.tie_embeddings}


MODERNBERT = Family(
    "layers.{i}.",
    linear_names("attention.{}_O", "attn.Wo")
    | linear_names("ff.{}2", "mlp.Wo")
    | norm_names("norm1", "attn_norm")
    | norm_names("norm2", "mlp_norm"),
    {"embedding.E": "embeddings.tok_embeddings.weight"}
    | norm_names("embedding.norm", "embeddings.norm")
    | norm_names("final_norm", "final_norm"),
    fused=(
        ("attn.Wqkv.weight", ("attention.W_Q", "attention.W_K", "attention.W_V"), _one),
        ("attn.Wqkv.bias", ("attention.b_Q", "attention.b_K", "attention.b_V"), _one),
        ("mlp.Wi.weight", ("ff.W1", "ff.W3"), _one),
        ("mlp.Wi.bias", ("ff.b1", "ff.b3"), _one),
    ),
)
DECODER = Family(
    "model.layers.{i}.",
    linear_names("attention.{}_Q", "attn.q_proj")
    | linear_names("attention.{}_K", "attn.k_proj")
    | linear_names("attention.{}_V", "attn.v_proj")
    | {k: v for k, v in MODERNBERT.names.items()},
    {"embedding.E": "model.embeddings.tok_embeddings.weight", "head.W": "decoder.weight", "head.b": "decoder.bias"}
    | norm_names("embedding.norm", "model.embeddings.norm")
    | norm_names("final_norm", "model.final_norm")
    | linear_names("head.{}_t", "lm_head.dense")
    | norm_names("head.norm", "lm_head.norm"),
    fused=tuple(f for f in MODERNBERT.fused if f[0].startswith("mlp.")),
)


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """The sizes, not causal, no head; LayerNorms (biases where the file has them), the embeddings' norm and none
    before block 0's attention; GeGLU of hidden_activation; the bands and each layer kind's base."""
    eps = c.number("attention.layer_norm_epsilon", None) or c.number("attention.layer_norm_rms_epsilon", 1e-5)
    act = Keys({"hidden_activation": c.text("hidden_activation", "gelu")}, c.source, c.prefix, c.notes)
    spec = {k: v for k, v in spec.items() if k not in ("tie_embeddings", "G")} | {
        "head": False,
        "mask": "none",
        "embed_norm": True,
        "first_attn_norm": False,
        "norm_eps": eps,
        "norm_bias": "token_embd_norm.bias" in header.tensors,
        "attention_bias": "blk.0.attn_qkv.bias" in header.tensors,
        "feedforward": "gated",
        "activation": activation(act, "hidden_activation", "gelu"),
        "ff_bias": "blk.0.ffn_up.bias" in header.tensors,
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", BASES["full_attention"]),
    }
    found = sliding_kinds(c, spec["N"], 3, full_first=True)
    if found is not None:  # (local_attention the band's whole width: tfm's unmasked window is half of it, plus one)
        spec |= windowed(found[0] // 2 + 1, found[1])
    return sliding_rope(spec, {"rope_theta": c.number("rope.freq_base_swa", BASES["sliding_attention"])})


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """Not causal, local_attention and the period of its full layers (a count), the local base, the activation."""
    out: dict[str, Any] = {"attention.causal": False, "rope.scaling.type": "none"}
    out["hidden_activation"] = hf_activation(spec.activation)
    if spec.window is not None:
        kinds = layer_types(spec)
        every = kinds.index("full_attention", 1) if "full_attention" in kinds[1:] else spec.N
        out |= {"attention.sliding_window": 2 * (spec.window - 1), "attention.sliding_window_pattern": every}
        out["rope.freq_base_swa"] = float(spec.rope_local_theta or spec.rope_theta)
    return out


GGUF_LAYOUT = Family(
    "blk.{i}.",
    linear_names("attention.{}_O", "attn_output")
    | linear_names("ff.{}2", "ffn_down")
    | norm_names("norm1", "attn_norm")
    | norm_names("norm2", "ffn_norm"),
    {"embedding.E": "token_embd.weight"}
    | norm_names("embedding.norm", "token_embd_norm")
    | norm_names("final_norm", "output_norm"),
    # (the checkpoint's fused Wqkv and Wi under the converter's names)
    fused=tuple(
        (name.replace("attn.Wqkv", "attn_qkv").replace("mlp.Wi", "ffn_up"), ours, groups)
        for name, ours, groups in MODERNBERT.fused
    ),
)
RECORDS = (
    Record(
        "modernbert",
        "ModernBertModel",
        spec,
        MODERNBERT,
        config,
        Gguf("modern-bert", GGUF_LAYOUT, gguf_spec, gguf_metadata, base="sizes"),
        aliases=((r"^model\.", ""),),
        skipped=(r"^head\.", r"^decoder\.", r"^classifier\."),
        config_alone=True,
    ),
    Record("modernbert-decoder", "ModernBertDecoderForCausalLM", decoder_spec, DECODER, config, config_alone=True),
)

__all__ = ["RECORDS"]
