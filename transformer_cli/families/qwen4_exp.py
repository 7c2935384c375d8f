"""Qwen4-Exp's text model (Qwen4ExpForCausalLM, model_type qwen4_exp_text): Qwen3.5-MoE's (qwen3_next.py: Gated
DeltaNet in the linear_attention layers, gated attention, experts in every layer with a gated shared expert) whose
residual is gated hyper-connections' streams (hc_count of them, components/hyper.py's gated form: no other norm
before a sublayer, the head reads the streams' gated mean, no final norm), and whose attention layers
("indexed_attention") attend to the blocks of keys a block indexer keeps (components/qsa.py: indexer_budget keys in
blocks of indexer_compress_ratio, and the incomplete block's).

As Qwen4ExpTextConfig reads it: the rotary turns partial_rotary_factor of each head, 1.0 by default (not Qwen3.5's
0.25); the linear attention's output gate is output_gate_type's (silu or sigmoid; hidden_act by default);
norm_topk_prob renormalises the chosen experts' weights or not; every RMSNorm's gain is 1 + w but the linear
attention's. Refused in one line: ple_layer_ids (its hashed n-gram embeddings are not read here yet), an indexer of
more than one key head (transformers builds only one)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .keys import Keys
from .layout import Family
from .qwen3_next import QWEN3_5, qwen3_5_moe
from .qwen3_next import config as qwen_config
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (Qwen4ExpTextConfig's defaults: 40 layers of 2,048, 512 experts of 512, 4 streams)."""
    if c.data.get("ple_layer_ids"):
        raise c.refuse("ple_layer_ids", c.data["ple_layer_ids"], "none: Qwen4's n-gram embeddings are not read yet")
    if c.index("indexer_kv_heads", 1) != 1:
        raise c.refuse("indexer_kv_heads", c.data["indexer_kv_heads"], "1 (transformers' indexer has one key head)")
    gate = c.data.get("output_gate_type") or c.text("hidden_act", "silu")
    if gate not in ("silu", "sigmoid"):
        raise c.fail("output_gate_type", gate, "silu or sigmoid")
    data = dict(c.data)
    N = Keys({"num_hidden_layers": 40} | data, c.source).count("num_hidden_layers")
    kinds = data.get("layer_types") or [
        "linear_attention" if (i + 1) % c.count("full_attention_interval", 4) else "indexed_attention" for i in range(N)
    ]
    data["layer_types"] = ["full_attention" if kind == "indexed_attention" else kind for kind in kinds]
    rotary = data.get("rope_parameters") or {}
    if "partial_rotary_factor" not in rotary and "partial_rotary_factor" not in data:
        data["partial_rotary_factor"] = 1.0  # (Qwen4ExpTextConfig's default, not Qwen3.5's)
    defaults = {"num_hidden_layers": 40, "hidden_size": 2048, "vocab_size": 248320, "num_attention_heads": 16}
    defaults |= {"num_experts": 512, "num_experts_per_tok": 10, "linear_num_key_heads": 16}
    out = qwen3_5_moe(Keys(defaults | data, c.source, notes=c.notes))
    keys = Keys(defaults | data, c.source, notes=c.notes)
    eps = keys.number("rms_norm_eps", 1e-6)
    out |= {
        "norm": "none",
        "router_renorm": keys.flag("norm_topk_prob", True),
        "linear_gate_fn": gate,
        "hc_streams": keys.count("hc_count", 4),
        "hc_form": "gated",
        "hc_rank": keys.count("hc_lowrank", 320),
        "hc_eps": eps,
    }
    mixers = out.get("mixer_layers")
    if mixers is not None:
        out["mixer_layers"] = ["qsa" if kind == "standard" else kind for kind in mixers]
    if mixers is None or "qsa" in out["mixer_layers"]:
        out["attention"] = "qsa"
        out |= {
            "index_heads": keys.count("indexer_n_heads"),
            "index_m": keys.count("indexer_head_dim"),
            "index_topk": keys.count("indexer_budget"),
            "index_pool": keys.count("indexer_compress_ratio"),
        }
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Qwen4ExpTextConfig's config.json."""
    out = qwen_config(spec)
    kinds = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    out["layer_types"] = ["linear_attention" if kind == "deltanet" else "indexed_attention" for kind in kinds]
    out |= {"hc_count": spec.hc_streams, "hc_lowrank": spec.hc_rank, "output_gate_type": spec.linear_gate_fn}
    out |= {"rms_norm_eps": spec.hc_eps, "indexer_kv_heads": 1, "indexer_n_heads": spec.index_heads}
    out |= {"indexer_head_dim": spec.index_m, "indexer_budget": spec.index_topk}
    return out | {"indexer_compress_ratio": spec.index_pool, "ple_layer_ids": []}


def _names() -> dict[str, str]:
    """Qwen3.5's names, the streams' (each sublayer's and the head's) and the indexer's norms."""
    names = dict(QWEN3_5.names)
    for ours, theirs in (("attn", "attn"), ("ff", "mlp")):
        own = {"norm.gamma": "hc_norm", "W_down": "input_mix_weight_down", "W_up": "input_mix_weight_up"}
        own |= {"W_inject": "block_inject_weight"}
        names |= {f"hc_{ours}.{x}": f"{theirs}_hyper_connection.{y}.weight" for x, y in own.items()}
    names |= {"attention.index.q_norm.gamma": "self_attn.indexer.q_layernorm.weight"}
    return names | {"attention.index.k_norm.gamma": "self_attn.indexer.k_layernorm.weight"}


HEAD = {
    f"hc_head.{x}": f"model.hyper_connection_mixer.{y}.weight"
    for x, y in (("norm.gamma", "hc_norm"), ("W_down", "input_mix_weight_down"), ("W_up", "input_mix_weight_up"))
}
INDEXER = (("self_attn.indexer.index_qk_proj.weight", ("attention.index.W_Q", "attention.index.W_K"), lambda spec: 1),)
CHECKPOINT = Family(QWEN3_5.block, _names(), QWEN3_5.globals_ | HEAD, fused=QWEN3_5.fused + INDEXER)
RECORD = Record(
    "qwen4_exp_text",
    "Qwen4ExpForCausalLM",
    spec,
    CHECKPOINT,
    config,
    skipped=(r"^mtp\.", r"^model\.visual\."),  # (its multi-token prediction head and image model, as transformers)
)

__all__ = ["RECORD"]
