"""GPT-NeoX (GPTNeoXForCausalLM, Pythia): two LayerNorms, parallel or not (use_parallel_residual), rotary on 25% of
each head unless the file says, the fused query_key_value per head; its GGUF file (gptneox) reorders that to
[Q; K; V] and writes no rope base (10000) and a GELU that is the exact one of Pythia's config (llama.cpp
computes the tanh form)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import GPT_NEOX
from .gguf_keys import partial_rotary
from .gguf_layout import LAYERNORM_LAYOUT
from .keys import Keys
from .parts import CAUSAL_PRE, activation, rope, whole_heads
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """GPTNeoXForCausalLM: two LayerNorms, parallel or not, rotary on 25% of each head unless the file says."""
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    parallel = c.flag("use_parallel_residual", True)
    rotary = rope(
        c,
        c.count("max_position_embeddings", 2048),
        whole_heads(c, d, H),
        fraction=0.25,
        partial=True,
        theta_keys=("rotary_emb_base",),
        fraction_keys=("rotary_pct",),
    )
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers"),
        "H": H,
        "m": whole_heads(c, d, H),
        "d": d,
        "r": c.count("intermediate_size"),
        "V": c.count("vocab_size"),
        "tie_embeddings": c.flag("tie_word_embeddings", False),
        **rotary,
        "norm_eps": c.number("layer_norm_eps", 1e-5),
        "parallel": parallel,
        "attention_bias": c.flag("attention_bias", True),
        "activation": activation(c, "hidden_act", "gelu"),
    }


def config(spec: Spec) -> dict[str, Any]:
    return {
        "use_parallel_residual": spec.parallel,
        "hidden_act": "gelu",
        "attention_bias": True,
        "rotary_pct": spec.rope_fraction,
        "rotary_emb_base": spec.rope_theta,
    }


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """GPT-NeoX (Pythia): two LayerNorms, parallel or not (use_parallel_residual), a partial rotary in halves."""
    spec = spec | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
        "attention_bias": True,
        "parallel": c.flag("use_parallel_residual", True),
        "activation": "gelu_exact",
    }
    spec |= partial_rotary(c, spec["m"])
    return spec


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    return {"use_parallel_residual": bool(spec.parallel)}


RECORD = Record(
    "gpt_neox",
    "GPTNeoXForCausalLM",
    spec,
    GPT_NEOX,
    config,
    Gguf("gptneox", LAYERNORM_LAYOUT, gguf_spec, gguf_metadata, base="sizes"),
    aliases=((r"^lm_head\.weight$", "embed_out.weight"),),
)

__all__ = ["RECORD"]
