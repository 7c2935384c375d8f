"""JetMoE (JetMoeForCausalLM, jetmoe/jetmoe-8b): a mixture of attention heads in every block (attention: mixture,
components/moa.py: num_local_experts query and output projections of num_key_value_heads heads of kv_channels,
num_experts_per_tok chosen per token, the keys and values one shared kv_proj, a bias on the output) and GraniteMoE's
experts beside (the same number, chosen by a router of their own, their gate and up projections stacked in one
input_linear) with a bias on their mixed output; RMSNorms, rotary positions, a tied head by default.

Its blocks' two norms take RMSNorm's default eps, 1e-6, whatever rms_norm_eps says (only the final norm reads it):
another rms_norm_eps is refused in one line, as tfm's norms share one."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import _LLAMA_GLOBALS
from .keys import Keys
from .layout import Family
from .parts import rope
from .record import Record

EPS = 1e-6  # JetMoeRMSNorm's default, the blocks' norms'

_one = lambda spec: 1  # noqa: E731


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (JetMoeConfig's defaults: 8 experts, 2 chosen, 16 key/value heads of 128)."""
    G, m, d = c.count("num_key_value_heads", 16), c.count("kv_channels", 128, "head_dim"), c.count("hidden_size", 2048)
    E, k = c.count("num_local_experts", 8), c.count("num_experts_per_tok", 2)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_local_experts = {E}")
    eps = c.number("rms_norm_eps", EPS)
    if eps != EPS:
        raise c.refuse("rms_norm_eps", eps, f"{EPS}: JetMoE's blocks' norms take {EPS} whatever it says")
    positions = c.count("max_position_embeddings", 4096)
    return {
        "N": c.count("num_hidden_layers", 12),
        "H": k * G,
        "G": G,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size", 5632),
        "V": c.count("vocab_size", 32000),
        "mask": "causal",
        "scale": "sqrt",
        "norm": "pre",
        "norm_type": "rmsnorm",
        "norm_eps": EPS,
        "attention": "mixture",
        "attn_experts": E,
        "attn_k": k,
        "out_bias": True,
        "feedforward": "gated",
        "activation": "silu" if c.text("activation_function", "silu") in ("silu", "swish") else _act(c),
        "ff_bias": False,
        "E": E,
        "k": k,
        "router_renorm": True,
        "expert_out_bias": True,
        "tie_embeddings": c.flag("tie_word_embeddings", True),
        **rope(c, positions, m),
    }


def _act(c: Keys) -> str:
    raise c.refuse("activation_function", c.data["activation_function"], "silu (tfm's JetMoE experts are SwiGLU)")


def config(spec: Spec) -> dict[str, Any]:
    """spec -> JetMoeConfig's config.json."""
    return {
        "vocab_size": spec.V,
        "hidden_size": spec.d,
        "num_hidden_layers": spec.N,
        "num_key_value_heads": spec.kv_heads,
        "kv_channels": spec.m,
        "intermediate_size": spec.r,
        "num_local_experts": spec.E,
        "num_experts_per_tok": spec.k,
        "rms_norm_eps": spec.norm_eps,
        "max_position_embeddings": spec.context or 4096,
        "tie_word_embeddings": spec.tie_embeddings,
        "rope_parameters": {"rope_type": "default", "rope_theta": spec.rope_theta},
    }


_STACKED = (
    "self_attention.experts.input_linear.weight",
    "self_attention.experts.output_linear.weight",
    "mlp.input_linear.weight",
    "mlp.output_linear.weight",
)
JETMOE = Family(
    "model.layers.{i}.",
    {
        "attention.router": "self_attention.experts.router.layer.weight",
        "attention.b_O": "self_attention.experts.bias",
        "ff.router": "mlp.router.layer.weight",
        "ff.b_out": "mlp.bias",
        "norm1.gamma": "input_layernorm.weight",
        "norm2.gamma": "post_attention_layernorm.weight",
    },
    _LLAMA_GLOBALS,
    fused=(
        ("self_attention.kv_proj.weight", ("attention.W_K", "attention.W_V"), _one),
        (_STACKED[0], ("attention.W_QE",), _one),
        (_STACKED[1], ("attention.W_OE",), _one),
        (_STACKED[2], ("ff.W1", "ff.W3"), lambda spec: spec.E or 0),
        (_STACKED[3], ("ff.W2",), _one),
    ),
    stacked=frozenset(_STACKED),
)
RECORD = Record("jetmoe", "JetMoeForCausalLM", spec, JETMOE, config, lora_router="*", config_alone=True)

__all__ = ["RECORD"]
