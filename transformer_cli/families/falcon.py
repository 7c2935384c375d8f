"""Falcon (FalconForCausalLM): multi-query, grouped (new_decoder_architecture) or per-head fused attention; parallel
blocks with one or two LayerNorms, or sequential ones. Old files name the sizes n_embed, n_head, n_layer.

Its GGUF file (falcon) holds the fused attn_qkv reordered by the converter from its groups to [Q; K; V] (how tfm
reads a fused tensor anyway), LayerNorms with biases, a second norm (attn_norm_2) in the new architecture. What the
file does not hold is read as llama.cpp reads it: the feedforward is 4 d (the converter writes that, whatever
ffn_hidden_size said), the rope base 10000, the context the converter's 2048, one key/value head unless it says.
llama-quantize types Falcon's tensors by rules of its own (gguf/mixes.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..spec.definition import Spec
from .checkpoints import falcon as falcon_layout
from .config_keys import rope_keys, size_keys
from .keys import REQUIRED, Keys
from .layout import Family, linear_names, norm_names
from .parts import CAUSAL_PRE, activation, kv_heads, rope, whole_heads
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """FalconForCausalLM: multi-query, grouped (new_decoder_architecture) or per-head fused attention; parallel
    blocks with one or two LayerNorms, or sequential ones. Old files name the sizes n_embed, n_head, n_layer."""
    if c.flag("alibi", False):
        raise c.refuse("alibi", True, "tfm has no ALiBi position biases (alibi: false gives rotary positions)")
    d = c.count("n_embed", None) or c.count("hidden_size")  # n_embed wins, as in FalconConfig
    H = c.count("num_attention_heads", REQUIRED, "n_head")
    parallel, shared = _blocks(c)
    bias = c.flag("bias", False)
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers", REQUIRED, "n_layer"),
        "H": H,
        "m": whole_heads(c, d, H),
        "d": d,
        "r": c.count("ffn_hidden_size", 4 * d),
        "V": c.count("vocab_size"),
        **_kv(c, H),
        "tie_embeddings": c.flag("tie_word_embeddings", True),
        **rope(c, c.count("max_position_embeddings", 2048), d // H),
        "norm_eps": c.number("layer_norm_epsilon", 1e-5),
        "parallel": parallel,
        "shared_norm": shared,
        "attention_bias": bias,
        "ff_bias": bias,
        "activation": activation(c, "activation", "gelu"),
    }


def _kv(c: Keys, H: int) -> dict[str, Any]:
    """G: num_kv_heads with new_decoder_architecture, else 1 (multi_query) or H (FalconAttention.__init__)."""
    G = c.nullable_count("num_kv_heads", None) or H
    if c.flag("new_decoder_architecture", False):
        return kv_heads(c, "num_kv_heads", G, H)
    if not c.flag("multi_query", True) and G != H:  # the fused tensor holds H keys, the reshape wants G
        raise c.refuse("num_kv_heads", G, "fewer key/value heads than queries need new_decoder_architecture")
    return kv_heads(c, "num_kv_heads", 1 if c.flag("multi_query", True) else H, H)


def _blocks(c: Keys) -> tuple[bool, bool]:
    """(parallel, one shared norm), as FalconDecoderLayer builds and runs them; other settings crash it."""
    new, parallel = c.flag("new_decoder_architecture", False), c.flag("parallel_attn", True)
    norms = c.count("num_ln_in_parallel_attn", 2 if new else None)
    if new and not parallel:
        raise c.refuse("parallel_attn", False, "transformers' Falcon needs parallel_attn with new_decoder_architecture")
    if new and norms not in (1, 2):
        raise c.refuse("num_ln_in_parallel_attn", norms, "transformers' Falcon builds 1 or 2 norms per block")
    if not new and parallel and norms == 2:
        raise c.refuse("num_ln_in_parallel_attn", 2, "2 norms need new_decoder_architecture in transformers' Falcon")
    return parallel, parallel and (norms == 1 or not new)


def checkpoint_for(config: Mapping[str, Any]) -> Family:
    """The checkpoint layout: its norms' names and the fused tensor's grouping depend on the attention options."""
    new = bool(config.get("new_decoder_architecture"))
    if not config.get("parallel_attn", True):
        norms = ("input_layernorm", "post_attention_layernorm")
    elif new and (config.get("num_ln_in_parallel_attn") or 2) == 2:
        norms = ("ln_attn", "ln_mlp")
    else:
        norms = ("input_layernorm", "")  # one norm shared by attention and feedforward
    return falcon_layout(new, norms)


def config(spec: Spec) -> dict[str, Any]:
    """spec -> every key of Falcon's config.json (its feedforward is ffn_hidden_size; key/value heads as the new
    architecture's num_kv_heads, which two norms need)."""
    skipped = ("num_key_value_heads", "head_dim", "intermediate_size")
    return (
        {k: v for k, v in size_keys(spec).items() if k not in skipped}
        | {
            "ffn_hidden_size": spec.r,
            "layer_norm_epsilon": spec.norm_eps,
            "new_decoder_architecture": not spec.shared_norm,
            "multi_query": spec.kv_heads == 1,
            "num_kv_heads": spec.kv_heads,
            "parallel_attn": True,
            "bias": False,
            "alibi": False,
        }
        | rope_keys(spec)
    )


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Parallel attention and MLP, one norm (7B) or two (attn_norm_2: the new decoder architecture), key and value
    heads head_count_kv (1 by default: multi-query), exact GELU, no biases."""
    G, later = c.count("attention.head_count_kv", 1), ("G", "context")
    spec = (  # (G where the sizes put it, before the context)
        {k: v for k, v in spec.items() if k not in later}
        | ({"G": G} if G != spec["H"] else {})
        | {k: spec[k] for k in later[1:] if k in spec}
    )
    return spec | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
        "parallel": True,
        "shared_norm": "blk.0.attn_norm_2.weight" not in header.tensors,
        "activation": "gelu_exact",
        "ff_bias": False,
    }


_QKV = (("attn_qkv.weight", ("attention.W_Q", "attention.W_K", "attention.W_V"), lambda spec: 1),)
_BLOCK = linear_names("attention.{}_O", "attn_output", "W") | linear_names("ff.{}1", "ffn_up", "W")
_BLOCK |= linear_names("ff.{}2", "ffn_down", "W")
_GLOBALS = {"embedding.E": "token_embd.weight", "head.W": "output.weight"} | norm_names("final_norm", "output_norm")
_TWO_NORMS = Family(  # the new architecture: ln_attn, ln_mlp
    "blk.{i}.", _BLOCK | norm_names("norm1", "attn_norm_2") | norm_names("norm2", "attn_norm"), _GLOBALS, fused=_QKV
)
GGUF = Gguf(
    "falcon",
    Family("blk.{i}.", _BLOCK | norm_names("norm1", "attn_norm"), _GLOBALS, fused=_QKV),
    gguf_spec,
    base="sizes",
    alternatives=((lambda spec: not spec.shared_norm, _TWO_NORMS),),
    quantize_as_falcon=True,
)
RECORD = Record(
    "falcon",
    "FalconForCausalLM",
    spec,
    checkpoint_for({}),
    config,
    GGUF,
    config_alone=True,
    checkpoint_for=checkpoint_for,
)

__all__ = ["RECORD"]
