"""HY-V4 (HYV4ForCausalLM): DeepSeek-V3.2's sparse attention (deepseek_v32.py) with hyper-connections' residual
streams (hc_mult of them, each sublayer's weights made from them, no mix between them: components/hyper.py's
independent form, post = hc_magnitude sigmoid(...) + hc_eps), gpt-oss's attention sinks and a sigmoid gate on each
value entry of the latent attention (before W_O), and DeepSeek-V3's router over experts whose SwiGLU is clamped at
swiglu_limit (the routed experts alone: the shared expert and the dense MLPs are plain).

Where it differs from DeepSeek-V3.2: every rotary part turns half-split; the indexer turns the last rope_m entries
of each of its heads (index_rope: last) and normalises its key with eps rms_norm_eps; its layers' indexers are
"full" or "shared" as indexer_types lists them (default: layers 0 and 1, then one in four), read as HYV4Config reads
them (not GLM-5's pattern keys); the feedforwards as mlp_layer_types lists them (default: the first dense, the rest
routed; first_k_dense_replace is not read). HYV4Config sets num_key_value_heads to num_attention_heads whatever the
file says; the lm_head is kept in float32 in a bfloat16 model (its logits float32).

Its files name the tensors as its own checkpoints do (transformers' save_pretrained writes them so): the hyper-
connections under hc_pre., the gates linear_gate, the sinks learnable_sink_param; the names transformers holds in
memory (attn_hc.fn, gate_proj, sinks, ...) are read too."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import feedforward_kinds
from .deepseek_v32 import INDEXER, sparse_model
from .deepseek_v32 import config as dsa_config
from .expert_checkpoints import MISTRAL4
from .keys import Keys
from .layout import Family
from .record import Record

DEFAULTS = {  # HYV4Config's, where they are not DeepSeek-V3.2's
    "vocab_size": 120832,
    "hidden_size": 2816,
    "intermediate_size": 6912,
    "moe_intermediate_size": 768,
    "num_hidden_layers": 34,
    "num_attention_heads": 32,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 192,
    "qk_rope_head_dim": 64,
    "v_head_dim": 256,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "routed_scaling_factor": 2.827,
    "n_group": 1,
    "topk_group": 1,
    "max_position_embeddings": 262144,
    "rms_norm_eps": 1e-5,
    "index_n_heads": 16,
    "index_head_dim": 128,
    "index_topk": 2048,
}


def hy_v4(c: Keys) -> dict[str, Any]:
    """HY-V4's config.json: DeepSeek-V3.2's keys as HYV4Config reads them, its streams, sinks, gates and clamp."""
    c.ignored("num_key_value_heads", "sets it to num_attention_heads (every head its own keys)")
    c.ignored("first_k_dense_replace", "reads mlp_layer_types alone (default: the first layer dense)")
    c.ignored("rope_interleave", "turns every rotary part half-split")
    N = Keys(DEFAULTS | c.data, c.source).count("num_hidden_layers")
    data = {k: v for k, v in c.data.items() if k not in ("num_key_value_heads", "first_k_dense_replace")}
    if data.get("mlp_layer_types") is None:
        data["mlp_layer_types"] = ["dense"] + ["sparse"] * (N - 1)
    keys = Keys(data, c.source, notes=c.notes)
    spec = sparse_model(keys, DEFAULTS, 1, "half", interleaved=False)
    spec |= {
        "index_rope": "last",
        "index_eps": spec["norm_eps"],
        "attn_sinks": True,
        "attn_gate": True,
        "hc_streams": keys.count("hc_mult", 4),
        "hc_form": "independent",
        "hc_post_scale": keys.number("hc_magnitude", 2.0),
        "hc_eps": keys.number("hc_eps", 1e-6),
    }
    if "E" in spec:  # (a limit of 0 or less is refused: HYV4Config's docstring says it disables the clamp, where
        # its code clamps at it)
        spec["expert_clamp"] = keys.number("swiglu_limit", 10.0)
    kinds = c.data.get("indexer_types")
    if kinds is None:  # (HYV4Config's: layers 0 and 1, then every fourth)
        kinds = ["full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(N)]
    if not isinstance(kinds, list) or len(kinds) != N or set(kinds) - {"full", "shared"} or kinds[0] != "full":
        raise c.fail("indexer_types", kinds, f'{N} layers\' "full" or "shared", the first "full"')
    if "shared" in kinds:
        spec["mixer_layers"] = ["indexed" if kind == "full" else "indexed_shared" for kind in kinds]
    return spec


def config(spec: Spec) -> dict[str, Any]:
    """spec -> HY-V4's config.json: DeepSeek-V3.2's keys, the layers' indexers, the streams and the clamp."""
    out = dsa_config(spec)
    for key in ("rope_interleave", "scoring_func", "topk_method", "first_k_dense_replace"):
        out.pop(key, None)
    kinds = spec.mixer_layers or (spec.attention,)
    shared = [kinds[i % len(kinds)] == "indexed_shared" for i in range(spec.N)]
    out |= {
        "indexer_types": ["shared" if x else "full" for x in shared],
        "mlp_layer_types": ["sparse" if k == "routed" else "dense" for k in feedforward_kinds(spec)],
        "hc_mult": spec.hc_streams,
        "hc_magnitude": spec.hc_post_scale,
        "hc_eps": spec.hc_eps,
        "n_group": spec.router_groups or 1,
        "topk_group": spec.router_topk_groups or 1,
    }
    return out | ({"swiglu_limit": spec.expert_clamp} if spec.expert_clamp is not None else {})


def _names() -> dict[str, str]:
    """Mistral 4's names (DeepSeek's, the experts stacked), the indexer's, and HY-V4's own."""
    names = {ours: theirs.replace(".gate_proj.", ".linear_gate.") for ours, theirs in MISTRAL4.names.items()}
    names |= INDEXER | {
        "attention.sinks": "self_attn.learnable_sink_param",
        "attention.W_G": "self_attn.linear_gate.weight",
    }
    for ours, theirs in (("attn", "attn"), ("ff", "mlp")):
        names |= {
            f"hc_{ours}.{x}": f"hc_pre.hc_{theirs}_layer.hc_{y}"
            for x, y in (("W", "fn"), ("b", "base"), ("scale", "scale"))
        }
    return names


HEAD = {
    f"hc_head.{x}": f"model.hc_pre.hc_head.hc_head_{y}" for x, y in (("W", "fn"), ("b", "base"), ("scale", "scale"))
}
CHECKPOINT = Family(MISTRAL4.block, _names(), MISTRAL4.globals_ | HEAD, fused=MISTRAL4.fused, stacked=MISTRAL4.stacked)
ALIASES = (  # transformers' names in memory -> its files'
    (r"\.attn_hc\.(fn|base|scale)$", r".hc_pre.hc_attn_layer.hc_\1"),
    (r"\.ffn_hc\.(fn|base|scale)$", r".hc_pre.hc_mlp_layer.hc_\1"),
    (r"^model\.hc_head\.hc_(fn|base|scale)$", r"model.hc_pre.hc_head.hc_head_\1"),
    (r"\.self_attn\.sinks$", ".self_attn.learnable_sink_param"),
    (r"\.gate_proj\.weight$", ".linear_gate.weight"),
)
RECORDS = (
    Record(
        "hy_v4",
        "HYV4ForCausalLM",
        hy_v4,
        CHECKPOINT,
        config,
        aliases=ALIASES,
        config_alone=True,
        skipped=(r"^model\.mtp_layers\.",),  # (its multi-token prediction layers, which transformers skips)
    ),
)

__all__ = ["RECORDS"]
