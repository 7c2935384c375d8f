"""DBRX (DbrxForCausalLM, Databricks): grouped-query attention with q, k and v fused in Wqkv as [Q; K; V] and
clamped to [-clip_qkv, clip_qkv] (transformers 5.24's forward fails without a clip_qkv: refused), rotary on halves,
LayerNorms without biases (eps 1e-5 in its code), and every layer routed to moe_num_experts experts of
ffn_hidden_size: the top k of a softmax, renormalised (moe_normalize_expert_weights 1; null: not). Its experts are
stacked on the rows, w1 and v1 as tfm's W1 and W3, w2 each expert's W2 transposed. Its rotary base is the top-level
rope_theta (or rope_parameters'): transformers never reads attn_config's (tfm follows it and says so). Its GGUF file
(dbrx) holds Wqkv whole as attn_qkv, the experts stacked (w2 transposed per expert), the clamp, and the router in the
weights' type (the converter quantises every 2-D tensor); the converter writes attn_config's rope_theta, which tfm
reads as the model's base."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import rope_keys
from .gguf_layout import EXPERTS, QKV_FUSED
from .keys import REQUIRED, Keys
from .layout import Family, norm_names
from .parts import CAUSAL_PRE, activation, kv_heads, rope, whole_heads
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: DbrxConfig's, one key/value head, 4 experts, 1 chosen)."""
    attention = c.nested("attn_config") or Keys({}, c.source, "attn_config.", c.notes)
    ffn = c.nested("ffn_config") or Keys({}, c.source, "ffn_config.", c.notes)
    if not attention.has("clip_qkv"):
        raise attention.refuse("clip_qkv", None, "transformers 5.24's DBRX runs with a clip_qkv only")
    attention.ignored("rope_theta", "5.24's DBRX turns by the top-level rope_theta (or rope_parameters')")
    d, H = c.count("d_model", REQUIRED, "hidden_size"), c.count("n_heads", REQUIRED, "num_attention_heads")
    m, positions = whole_heads(c, d, H, "d_model", "n_heads"), c.count("max_seq_len", 2048)
    E, k = ffn.count("moe_num_experts", 4), ffn.count("moe_top_k", 1)
    if k > E:
        raise ffn.fail("moe_top_k", k, f"at most moe_num_experts = {E}")
    p = ffn.data.get("moe_normalize_expert_weights", 1.0)
    if p not in (None, 1, 1.0):
        raise ffn.refuse("moe_normalize_expert_weights", p, "tfm renormalises the chosen weights to sum 1 (p = 1)")
    act = (ffn.data.get("ffn_act_fn") or {}).get("name", "silu")
    size = ffn.count("ffn_hidden_size", 3584)
    return CAUSAL_PRE | {
        "N": c.count("n_layers", REQUIRED, "num_hidden_layers"),
        "H": H,
        "m": m,
        "d": d,
        "r": size,
        "V": c.count("vocab_size"),
        **kv_heads(attention, "kv_n_heads", attention.count("kv_n_heads", 1), H),
        "tie_embeddings": c.flag("tie_word_embeddings", False),
        **rope(c, positions, m, 10000.0),
        "norm_eps": 1e-5,
        "norm_bias": False,
        "attention_bias": False,
        "feedforward": "gated",
        "activation": activation(Keys({"act": act}, c.source, "ffn_config.ffn_act_fn.", c.notes), "act", "silu"),
        "ff_bias": False,
        "qkv_clip": attention.number("clip_qkv"),
        "E": E,
        "k": k,
        "router_renorm": p is not None,
    }


def config(spec: Spec) -> dict[str, Any]:
    """spec -> DBRX's config.json."""
    out: dict[str, Any] = {"vocab_size": spec.V, "d_model": spec.d, "n_layers": spec.N, "n_heads": spec.H}
    out |= {"max_seq_len": spec.context or 2048, "tie_word_embeddings": spec.tie_embeddings} | rope_keys(spec)
    # (attn_config's rope_theta: transformers' DbrxAttention fails without it, its converter reads it; the rotary
    # itself turns by the top level's)
    out["attn_config"] = {"kv_n_heads": spec.kv_heads, "clip_qkv": spec.qkv_clip, "rope_theta": spec.rope_theta}
    out["ffn_config"] = {
        "ffn_hidden_size": spec.expert_r or spec.r,
        "moe_num_experts": spec.E,
        "moe_top_k": spec.k,
        "moe_normalize_expert_weights": 1.0 if spec.router_renorm else None,
        "ffn_act_fn": {"name": spec.activation},
    }
    return out


_W2 = "ffn.experts.mlp.w2"
DBRX = Family(
    "transformer.blocks.{i}.",
    {
        "attention.W_O": "norm_attn_norm.attn.out_proj.weight",
        "ff.router": "ffn.router.layer.weight",
        "ff.W1": "ffn.experts.mlp.w1",
        "ff.W3": "ffn.experts.mlp.v1",
    }
    | norm_names("norm1", "norm_attn_norm.norm_1")
    | norm_names("norm2", "norm_attn_norm.norm_2"),
    {"embedding.E": "transformer.wte.weight", "head.W": "lm_head.weight"}
    | norm_names("final_norm", "transformer.norm_f"),
    fused=(
        ("norm_attn_norm.attn.Wqkv.weight", ("attention.W_Q", "attention.W_K", "attention.W_V"), lambda spec: 1),
        (_W2, ("ff.W2",), lambda spec: 1),
    ),
    transposed=frozenset({_W2}),
    stacked=frozenset({_W2}),
    flat=frozenset({_W2}),
)


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """The sizes, rotary on halves, LayerNorms without biases, the clamp, every layer's experts renormalised."""
    return spec | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "norm_eps": c.number("attention.layer_norm_epsilon"),
        "norm_bias": False,
        "attention_bias": False,
        "feedforward": "gated",
        "activation": "silu",
        "ff_bias": False,
        "qkv_clip": c.number("attention.clamp_kqv"),
        "E": c.count("expert_count"),
        "k": c.count("expert_used_count"),
        "router_renorm": True,
    }


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    return {"attention.clamp_kqv": float(spec.qkv_clip)} if spec.qkv_clip is not None else {}


GGUF_LAYOUT = Family(
    "blk.{i}.",
    {"attention.W_O": "attn_output.weight", "ff.router": "ffn_gate_inp.weight"}
    | norm_names("norm1", "attn_norm")
    | norm_names("norm2", "attn_output_norm"),
    {"embedding.E": "token_embd.weight", "head.W": "output.weight"} | norm_names("final_norm", "output_norm"),
    fused=(QKV_FUSED[0], *EXPERTS),
    stacked=frozenset(t for t, _, _ in EXPERTS),
)
GGUF = Gguf("dbrx", GGUF_LAYOUT, gguf_spec, gguf_metadata, base="sizes", router_typed=True)
RECORD = Record("dbrx", "DbrxForCausalLM", spec, DBRX, config, GGUF, lora_router="*", config_alone=True)

__all__ = ["RECORD"]
