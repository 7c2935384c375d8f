"""GPT-J (GPTJForCausalLM): one LayerNorm shared by parallel attention and MLP, q/k/v/o without biases, rotary_dim
of each head turned in interleaved pairs (rotate_every_two: the GGUF converter does not permute), an MLP and a head
with biases, untied; its GGUF file's feedforward the 4 d the converter writes."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import GPTJ
from .gguf_keys import partial_rotary
from .gguf_layout import LAYERNORM_GLOBALS
from .keys import REQUIRED, Keys
from .layout import Family, linear_names, norm_names
from .parts import CAUSAL_PRE, activation, rope, whole_heads
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """GPTJForCausalLM: one LayerNorm shared by parallel attention and MLP, q/k/v/o without biases, rotary_dim of
    each head turned in interleaved pairs (rotate_every_two), an MLP and a head with biases, untied."""
    d, N, H = (
        c.count("n_embd", REQUIRED, "hidden_size"),
        c.count("n_layer", REQUIRED, "num_hidden_layers"),
        c.count("n_head", REQUIRED, "num_attention_heads"),
    )
    m = whole_heads(c, d, H, "n_embd", "n_head")
    rotated = c.nullable_count("rotary_dim", 64) or m  # null: every dim of the head
    if rotated > m or rotated % 2:
        raise c.fail("rotary_dim", rotated, f"an even number of at most the head size {m}")
    rotary = rope(c, c.count("n_positions", 2048, "max_position_embeddings"), m, fraction=rotated / m, partial=True)
    return (
        CAUSAL_PRE
        | rotary
        | {
            "N": N,
            "H": H,
            "m": m,
            "d": d,
            "r": c.count("n_inner", 4 * d),
            "V": c.count("vocab_size"),
            "tie_embeddings": c.flag("tie_word_embeddings", False),
            "head_bias": True,
            "rope_pairing": "interleaved",
            "norm_eps": c.number("layer_norm_epsilon", 1e-5),
            "parallel": True,
            "shared_norm": True,
            "attention_bias": False,
            "ff_bias": True,
            "activation": activation(c, "activation_function", "gelu_new"),
        }
    )


def config(spec: Spec) -> dict[str, Any]:
    """Every key of its config.json (GPT-J names its sizes as GPT-2 does)."""
    return {
        "vocab_size": spec.V,
        "n_embd": spec.d,
        "n_layer": spec.N,
        "n_head": spec.H,
        "n_inner": spec.r,
        "n_positions": spec.context or 2048,
        "layer_norm_epsilon": spec.norm_eps,
        "rotary_dim": spec.rotated_dims,
        "activation_function": "gelu_new",
        "tie_word_embeddings": spec.tie_embeddings,
    }


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """GPT-J: one LayerNorm shared by parallel attention and feedforward, rope.dimension_count of each head turned
    in adjacent pairs, no biases on q, k, v and o, the feedforward's and the head's biases."""
    spec = spec | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "rope_pairing": "interleaved",
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
        "parallel": True,
        "shared_norm": True,
        "attention_bias": False,
        "ff_bias": True,
        "head_bias": True,
        "activation": "gelu",
    }
    spec |= partial_rotary(c, spec["m"])
    return spec


GGUF_LAYOUT = Family(
    "blk.{i}.",
    {f"attention.W_{x}": f"attn_{y}.weight" for x, y in zip("QKVO", ("q", "k", "v", "output"), strict=True)}
    | linear_names("ff.{}1", "ffn_up")
    | linear_names("ff.{}2", "ffn_down")
    | norm_names("norm1", "attn_norm"),
    LAYERNORM_GLOBALS | {"head.b": "output.bias"},
)
RECORD = Record(
    "gptj",
    "GPTJForCausalLM",
    spec,
    GPTJ,
    config,
    Gguf("gptj", GGUF_LAYOUT, gguf_spec, base="sizes"),
    config_alone=True,
)

__all__ = ["RECORD"]
