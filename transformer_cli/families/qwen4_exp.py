"""Qwen4-Exp's text model (Qwen4ExpForCausalLM, model_type qwen4_exp_text): Qwen3.5-MoE's (qwen3_next.py: Gated
DeltaNet in the linear_attention layers, gated attention, experts in every layer with a gated shared expert) whose
residual is gated hyper-connections' streams (hc_count of them, components/hyper.py's gated form: no other norm
before a sublayer, the head reads the streams' gated mean, no final norm), and whose attention layers
("indexed_attention") attend to the blocks of keys a block indexer keeps (components/qsa.py: indexer_budget keys in
blocks of indexer_compress_ratio, and the incomplete block's).

As Qwen4ExpTextConfig reads it: the rotary turns partial_rotary_factor of each head, 1.0 by default (not Qwen3.5's
0.25); the linear attention's output gate is output_gate_type's (silu or sigmoid; hidden_act by default);
norm_topk_prob renormalises the chosen experts' weights or not; every RMSNorm's gain is 1 + w but the linear
attention's; ple_layer_ids' blocks add hashed n-gram inputs to their streams (components/ngram.py). Refused in one
line: an indexer of more than one key head (transformers builds only one), n-gram inputs on an attention layer
(transformers keeps their decoding state in the linear layers' caches)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..components.ngram import table_rows
from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .keys import Keys
from .layout import Family
from .qwen3_next import QWEN3_5, qwen3_5_moe
from .qwen3_next import config as qwen_config
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (Qwen4ExpTextConfig's defaults: 40 layers of 2,048, 512 experts of 512, 4 streams)."""
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
    out |= _ngrams(c, keys, data["layer_types"], out["d"])
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


def _ngrams(c: Keys, keys: Keys, kinds: list[str], d: int) -> dict[str, Any]:
    """Its n-gram inputs (PLE): ple_layer_ids (1-based, linear layers: transformers keeps their state in the linear
    layers' caches), their sizes, hash and end-of-sequence id (eos_token_id, the first of a list)."""
    listed = c.data.get("ple_layer_ids") or []
    N = len(kinds)
    if not isinstance(listed, list) or any(not isinstance(i, int) or not 1 <= i <= N for i in listed):
        raise c.fail("ple_layer_ids", listed, f"layer numbers from 1 to {N}")
    if not listed:
        return {}
    if any(kinds[i - 1] != "linear_attention" for i in listed):
        why = "linear_attention layers' numbers (transformers keeps the n-grams' state in their caches)"
        raise c.refuse("ple_layer_ids", listed, why)
    eos = c.data.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) and eos else eos
    if not isinstance(eos, int) or isinstance(eos, bool):
        raise c.fail("eos_token_id", c.data.get("eos_token_id"), "the end-of-sequence id ple_layer_ids needs")
    return {
        "ngram_blocks": [i - 1 for i in listed],
        "ngram_dim": keys.count("ple_embed_dim", d),
        "ngram_size": keys.count("ngram_size", 3),
        "ngram_heads": keys.count("heads_per_ngram", 8),
        "ngram_vocab": keys.count("ngram_vocab_size_base", 20000000),
        "ngram_vocab_multiple": keys.count("make_ngram_vocab_size_divisible_by", 128),
        "ngram_seed": keys.index("seed", 1234),
        "ngram_kernel": keys.count("ple_conv_kernel_size", 4),
        "ngram_eos": eos,
    }


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Qwen4ExpTextConfig's config.json."""
    out = qwen_config(spec)
    kinds = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    out["layer_types"] = ["linear_attention" if kind == "deltanet" else "indexed_attention" for kind in kinds]
    out |= {"hc_count": spec.hc_streams, "hc_lowrank": spec.hc_rank, "output_gate_type": spec.linear_gate_fn}
    out |= {"rms_norm_eps": spec.hc_eps, "indexer_kv_heads": 1, "indexer_n_heads": spec.index_heads}
    out |= {"indexer_head_dim": spec.index_m, "indexer_budget": spec.index_topk}
    out |= {"indexer_compress_ratio": spec.index_pool, "ple_layer_ids": [i + 1 for i in spec.ngram_blocks or ()]}
    if spec.ngram_blocks:
        out |= {"ple_embed_dim": spec.ngram_dim or spec.d, "ngram_size": spec.ngram_size}
        out |= {"heads_per_ngram": spec.ngram_heads, "ngram_vocab_size_base": spec.ngram_vocab}
        out |= {"make_ngram_vocab_size_divisible_by": spec.ngram_vocab_multiple, "seed": spec.ngram_seed}
        out |= {"ple_conv_kernel_size": spec.ngram_kernel, "eos_token_id": spec.ngram_eos}
    return out


def _names() -> dict[str, str]:
    """Qwen3.5's names, the streams' (each sublayer's and the head's) and the indexer's norms."""
    names = dict(QWEN3_5.names)
    for ours, theirs in (("attn", "attn"), ("ff", "mlp")):
        own = {"norm.gamma": "hc_norm", "W_down": "input_mix_weight_down", "W_up": "input_mix_weight_up"}
        own |= {"W_inject": "block_inject_weight"}
        names |= {f"hc_{ours}.{x}": f"{theirs}_hyper_connection.{y}.weight" for x, y in own.items()}
    names |= {"attention.index.q_norm.gamma": "self_attn.indexer.q_layernorm.weight"}
    names |= {f"ngram.{ours}": f"ple.{theirs}" for ours, theirs in NGRAMS.items() if ours != "table"}
    return names | {"attention.index.k_norm.gamma": "self_attn.indexer.k_layernorm.weight"}


NGRAMS = {  # (its n-gram inputs: ple.*)
    "table": "ple_embedding.ngram_embedding.weight",
    "W_key": "key_proj.weight",
    "W_value": "value_proj.weight",
    "key_norm.gamma": "norm_key.weight",
    "query_norm.gamma": "norm_query.weight",
    "conv_norm.gamma": "norm_conv.weight",
    "kernel": "conv1d.weight",
    "multipliers": "ple_embedding.layer_multipliers",
    "sizes": "ple_embedding.ngram_heads_vocab_sizes",
    "offsets": "ple_embedding.ngram_heads_offsets",
}
HEAD = {
    f"hc_head.{x}": f"model.hyper_connection_mixer.{y}.weight"
    for x, y in (("norm.gamma", "hc_norm"), ("W_down", "input_mix_weight_down"), ("W_up", "input_mix_weight_up"))
}
INDEXER = (("self_attn.indexer.index_qk_proj.weight", ("attention.index.W_Q", "attention.index.W_K"), lambda spec: 1),)
INTEGERS = tuple(f"ple.{NGRAMS[x]}" for x in ("multipliers", "sizes", "offsets"))
CHECKPOINT = Family(QWEN3_5.block, _names(), QWEN3_5.globals_ | HEAD, fused=QWEN3_5.fused + INDEXER, integers=INTEGERS)


def checkpoint(config: Mapping[str, Any]) -> Family:
    """Its files hold each n-gram table in shards (torch.chunk into split_ngram_parts, 512: as many as ceil(rows /
    ceil(rows / parts)) pieces of that many rows, the last the rest), ngram_embedding.shard_{k}.weight."""
    parts = config.get("split_ngram_parts", 512)

    def shards(spec: Spec) -> tuple:
        rows = table_rows(spec, spec.ngram_table or 0)
        size = -(-rows // parts)
        name = "ple.ple_embedding.ngram_embedding.shard_{}.weight"
        return tuple((name.format(k), lambda _, k=k: min(size, rows - k * size)) for k in range(-(-rows // size)))

    return replace(CHECKPOINT, row_parts={"ngram.table": shards})


RECORD = Record(
    "qwen4_exp_text",
    "Qwen4ExpForCausalLM",
    spec,
    CHECKPOINT,
    config,
    skipped=(r"^mtp\.", r"^model\.visual\."),  # (its multi-token prediction head and image model, as transformers)
    checkpoint_for=checkpoint,
)

__all__ = ["RECORD"]
