"""StableLM (StableLmForCausalLM): LLaMA's layout with LayerNorms with biases, rotary on 25% of each head unless
the file says, biases on q, k and v with use_qkv_bias, a parallel block with one norm with use_parallel_residual,
a LayerNorm (no bias) per query and key head with qk_layernorm. Its GGUF file: a partial rotary in halves, the
per-head query and key norms stacked (H, m), the block parallel where the file has no ffn_norm (llama.cpp decides
so); no rope base is written (10000)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import STABLELM
from .gguf_keys import partial_rotary
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .layout import Family
from .parts import llama_like
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """StableLmForCausalLM: LLaMA's layout with LayerNorms (biases), rotary on 25% of each head unless the file
    says, biases on q, k, v with use_qkv_bias, a parallel block with one norm with use_parallel_residual, a
    LayerNorm (no bias) per query and key head with qk_layernorm."""
    qk = {"qk_norm": True, "qk_norm_over": "per_head"} if c.flag("qk_layernorm", False) else {}
    spec = llama_like(c, c.count("num_key_value_heads", 32), None, 1e-5, False, 4096, partial=0.25)
    parallel = c.flag("use_parallel_residual", False)
    biases = {"attention_bias": True, "out_bias": False} if c.flag("use_qkv_bias", False) else {}
    return (
        spec
        | biases
        | qk
        | {
            "norm_type": "layernorm",
            "norm_eps": c.number("layer_norm_eps", 1e-5),
            "parallel": parallel,
            "shared_norm": parallel,
        }
    )


def config(spec: Spec) -> dict[str, Any]:
    return {
        "use_qkv_bias": spec.attention_bias,
        "qk_layernorm": spec.qk_norm,
        "hidden_act": "silu",
        "use_parallel_residual": spec.parallel,
    }


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    spec = spec | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "norm_type": "layernorm",
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
        "feedforward": "gated",
        "activation": "silu",
        "ff_bias": False,
    }
    spec |= partial_rotary(c, spec["m"])
    if "blk.0.ffn_norm.weight" not in header.tensors:
        spec |= {"parallel": True, "shared_norm": True}
    if "blk.0.attn_q.bias" in header.tensors:
        spec |= {"attention_bias": True, "out_bias": False}
    if "blk.0.attn_q_norm.weight" in header.tensors:
        spec |= {"qk_norm": True, "qk_norm_over": "per_head"}
    return spec


_LAYER_NORMS = {"norm1.beta": "attn_norm.bias", "norm2.beta": "ffn_norm.bias"}
GGUF_LAYOUT = Family(
    "blk.{i}.", LLAMA_LAYOUT.names | _LAYER_NORMS, LLAMA_LAYOUT.globals_ | {"final_norm.beta": "output_norm.bias"}
)
RECORD = Record(
    "stablelm", "StableLmForCausalLM", spec, STABLELM, config, Gguf("stablelm", GGUF_LAYOUT, gguf_spec, base="sizes")
)

__all__ = ["RECORD"]
