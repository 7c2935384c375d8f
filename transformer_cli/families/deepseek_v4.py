"""DeepSeek-V4 (DeepseekV4ForCausalLM): hyper-connections' streams (components/hyper.py, the mixed form) around
attention of one key head that is its value (components/compressed.py): every layer's queries see a sliding window
of keys; the sliding_attention layers that alone (shared_kv), the heavily_compressed_attention ones every entry pooled
from compress_rates' windows too (compressed, HCA), the compressed_sparse_attention ones the entries their indexer
chooses, each pooled from two windows (compressed_sparse, CSA). Every layer routes to experts: sqrt(softplus)
scores (scoring_func), DeepSeek-V3's correction bias to choose, renormalised and scaled; its hash_moe layers choose
by the token's id from a table (tid2eid: router_hash). Every SwiGLU, the shared expert's too, is clamped at
swiglu_limit (feedforward limited).

As DeepseekV4Config reads it: layer_types (else the legacy compress_ratios, else two HCA layers then CSA and HCA in
turn), mlp_layer_types (else num_hash_layers hashed first), a sliding layer turning by rope_theta unscaled and the
compressed ones by compress_rope_theta with the file's rope scaling (its YaRN's attention factor 1: cos and sin
unscaled), every norm's eps rms_norm_eps. Not read, as transformers does not: num_key_value_heads (one key head),
n_shared_experts (always one), norm_topk_prob (always renormalised), attention_bias, the multi-token prediction
layers (mtp.*). Refused in one line: mlp_bias (the shared expert's biases)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .keys import Keys
from .layout import Family
from .parts import CAUSAL_PRE
from .record import Record

DEFAULTS = {  # DeepseekV4Config's
    "vocab_size": 129280,
    "hidden_size": 4096,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 43,
    "num_attention_heads": 64,
    "head_dim": 512,
    "q_lora_rank": 1024,
    "num_experts_per_tok": 6,
    "n_routed_experts": 256,
    "routed_scaling_factor": 1.5,
    "rope_theta": 10000.0,
    "compress_rope_theta": 160000.0,
    "hc_mult": 4,
    "hc_sinkhorn_iters": 20,
    "hc_eps": 1e-6,
    "swiglu_limit": 10.0,
    "sliding_window": 128,
    "o_groups": 8,
    "o_lora_rank": 1024,
    "index_n_heads": 64,
    "index_head_dim": 128,
    "index_topk": 512,
    "rms_norm_eps": 1e-6,
}
KINDS = {
    "sliding_attention": "shared_kv",
    "heavily_compressed_attention": "compressed",
    "compressed_sparse_attention": "compressed_sparse",
}
RATIOS = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}


def _layers(c: Keys, N: int) -> list[str]:
    """Each layer's attention kind, as DeepseekV4Config.post_init derives it."""
    kinds = c.data.get("layer_types")
    key = "layer_types"
    if kinds is None and c.data.get("compress_ratios") is not None:
        key, ratios = "compress_ratios", c.data["compress_ratios"]
        kinds = [RATIOS.get(x, x) for x in ratios] if isinstance(ratios, list) else ratios
    elif kinds is None:
        kinds = ["heavily_compressed_attention"] * min(N, 2)
        kinds += ["compressed_sparse_attention" if i % 2 else "heavily_compressed_attention" for i in range(N - 2)]
    if not isinstance(kinds, list) or len(kinds) < N or set(kinds[:N]) - set(KINDS):
        raise c.fail(key, c.data.get(key), f"{N} layers' kinds, each one of {', '.join(KINDS)}")
    return [KINDS[kind] for kind in kinds[:N]]


def _feedforwards(c: Keys, N: int) -> list[str]:
    kinds = c.data.get("mlp_layer_types")
    if kinds is None:
        hashed = min(N, c.index("num_hash_layers", 3))
        kinds = ["hash_moe"] * hashed + ["moe"] * (N - hashed)
    if not isinstance(kinds, list) or len(kinds) != N or set(kinds) - {"moe", "hash_moe"}:
        raise c.fail("mlp_layer_types", c.data.get("mlp_layer_types"), f'{N} layers\' "moe" or "hash_moe"')
    return ["hashed" if kind == "hash_moe" else "routed" for kind in kinds]


def _rates(c: Keys) -> tuple[int, int]:
    """CSA's and HCA's rates: compress_rates, or the legacy compress_rate_csa and compress_rate_hca."""
    rates = c.data.get("compress_rates") or {}
    if not isinstance(rates, dict):
        raise c.fail("compress_rates", rates, "a mapping of the two compressed kinds to their rates")
    csa = rates.get("compressed_sparse_attention", c.data.get("compress_rate_csa", 4))
    hca = rates.get("heavily_compressed_attention", c.data.get("compress_rate_hca", 128))
    for kind, rate in (("compressed_sparse_attention", csa), ("heavily_compressed_attention", hca)):
        if not isinstance(rate, int) or isinstance(rate, bool) or rate < 1:
            raise c.fail("compress_rates", rates, f"a positive integer for {kind}")
    return csa, hca


def _rope(c: Keys, keys: Keys, m: int) -> tuple[dict[str, Any], int]:
    """The compressed layers' rotary keys (compress_rope_theta, the file's scaling), the sliding ones' base, the
    rotated part: from rope_parameters' main and compress where the file nests them, else the top level's."""
    params = c.data.get("rope_parameters") or {}
    nested = isinstance(params, dict) and "compress" in params
    main = params.get("main", {}) if nested else {}
    compress = dict(params["compress"]) if nested else dict(params) if isinstance(params, dict) else {}
    compress.setdefault("rope_theta", keys.number("compress_rope_theta"))
    fraction = compress.get("partial_rotary_factor", c.data.get("partial_rotary_factor"))
    rope_m = int(m * fraction) if fraction is not None else keys.count("qk_rope_head_dim", 64)
    kind = compress.get("rope_type", compress.get("type", "default"))
    out: dict[str, Any] = {"rope_theta": float(compress["rope_theta"])}
    if kind == "yarn":
        out |= {
            "rope_scaling": "yarn",
            "rope_factor": float(compress["factor"]),
            "rope_attention_factor": float(compress.get("attention_factor", 1.0)),
            "rope_beta_fast": float(compress.get("beta_fast", 32.0)),
            "rope_beta_slow": float(compress.get("beta_slow", 1.0)),
        }
        original = compress.get("original_max_position_embeddings")
        out |= {"rope_original_max_len": int(original)} if original else {}
    elif kind != "default":
        raise c.refuse("rope_parameters", params, "the compressed layers' rope_type default or yarn")
    out["rope_local_theta"] = float(main.get("rope_theta", keys.number("rope_theta")))
    return out, rope_m


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (DeepseekV4Config's defaults: 43 layers of 4,096, 64 heads of 512, 256 experts)."""
    keys = Keys(DEFAULTS | c.data, c.source, notes=c.notes)
    for key, why, unless in (
        ("num_key_value_heads", "gives its attention one key head, whatever the key", 1),
        ("n_shared_experts", "builds one shared expert, whatever the key", 1),
        ("norm_topk_prob", "always renormalises the chosen weights", True),
        ("attention_bias", "builds no attention biases", False),
    ):
        c.ignored(key, why, unless=unless)
    if keys.flag("mlp_bias", False):
        raise c.refuse("mlp_bias", True, "false (the shared expert's biases)")
    if (score := keys.data.get("scoring_func", "sqrtsoftplus")) not in ("sqrtsoftplus", "sigmoid"):
        raise c.refuse("scoring_func", score, "sqrtsoftplus or sigmoid")
    if (act := keys.data.get("hidden_act", "silu")) != "silu":
        raise c.refuse("hidden_act", act, "silu")
    N, m = keys.count("num_hidden_layers"), keys.count("head_dim")
    csa, hca = _rates(c)
    rope, rope_m = _rope(c, keys, m)
    mixers = _layers(c, N)
    if "shared_kv" not in mixers:  # (no sliding layer to turn by the main base)
        del rope["rope_local_theta"]
    r = keys.count("moe_intermediate_size")
    return (
        CAUSAL_PRE
        | rope
        | {
            "N": N,
            "H": keys.count("num_attention_heads"),
            "m": m,
            "d": keys.count("hidden_size"),
            "r": r,
            "V": keys.count("vocab_size"),
            "positional": "rope",
            "norm_type": "rmsnorm",
            "norm_eps": keys.number("rms_norm_eps"),
            "attention": "compressed_sparse",
            "mixer_layers": mixers,
            "rope_m": rope_m,
            "q_rank": keys.count("q_lora_rank"),
            "o_groups": keys.count("o_groups"),
            "o_rank": keys.count("o_lora_rank"),
            "window": keys.count("sliding_window"),
            "attn_sinks": True,
            "compress_rate": csa,
            "compress_heavy_rate": hca,
            "index_heads": keys.count("index_n_heads"),
            "index_m": keys.count("index_head_dim"),
            "index_topk": keys.count("index_topk"),
            "feedforward": "limited",
            "swiglu_limit": keys.number("swiglu_limit"),
            "activation": "silu",
            "ff_bias": False,
            "E": keys.count("n_routed_experts"),
            "k": keys.count("num_experts_per_tok"),
            "expert_r": r,
            "shared_r": r,
            "router_score": score,
            "router_bias": True,
            "router_renorm": True,
            "router_scale": keys.number("routed_scaling_factor"),
            "feedforward_layers": _feedforwards(c, N),
            "hc_streams": keys.count("hc_mult"),
            "hc_sinkhorn": keys.count("hc_sinkhorn_iters"),
            "hc_eps": keys.number("hc_eps"),
            "head": True,
            "tie_embeddings": keys.flag("tie_word_embeddings", False),
            "context": keys.count("max_position_embeddings", 1048576),
        }
    )


def config(spec: Spec) -> dict[str, Any]:
    """spec -> DeepseekV4Config's config.json."""
    kinds = {ours: theirs for theirs, ours in KINDS.items()}
    compress: dict[str, Any] = {"rope_type": spec.rope_scaling if spec.rope_scaling == "yarn" else "default"}
    compress |= {"rope_theta": spec.rope_theta, "partial_rotary_factor": spec.rotated_dims / spec.m}
    if spec.rope_scaling == "yarn":
        compress |= {"factor": spec.rope_factor, "attention_factor": spec.rope_attention_factor or 1.0}
        compress |= {"beta_fast": spec.rope_beta_fast, "beta_slow": spec.rope_beta_slow}
        compress |= {"original_max_position_embeddings": spec.rope_original_max_len}
    main = {"rope_type": "default", "rope_theta": spec.rope_local_theta or spec.rope_theta}
    return {
        "vocab_size": spec.V,
        "hidden_size": spec.d,
        "moe_intermediate_size": spec.expert_r or spec.r,
        "num_hidden_layers": spec.N,
        "num_attention_heads": spec.H,
        "num_key_value_heads": 1,
        "head_dim": spec.m,
        "q_lora_rank": spec.q_rank,
        "partial_rotary_factor": spec.rotated_dims / spec.m,
        "num_experts_per_tok": spec.k,
        "n_routed_experts": spec.E,
        "scoring_func": spec.router_score,
        "routed_scaling_factor": spec.router_scale,
        "rope_theta": main["rope_theta"],
        "compress_rope_theta": spec.rope_theta,
        "rope_parameters": {"main": main | {"partial_rotary_factor": spec.rotated_dims / spec.m}, "compress": compress},
        "layer_types": [kinds[kind_of(spec.mixer_layers, i, spec.attention)] for i in range(spec.N)],
        "mlp_layer_types": [
            "hash_moe" if kind_of(spec.feedforward_layers, i, "routed") == "hashed" or spec.router_hash else "moe"
            for i in range(spec.N)
        ],
        "compress_rates": {
            "compressed_sparse_attention": spec.compress_rate or 4,
            "heavily_compressed_attention": spec.compress_heavy_rate or 128,
        },
        "hc_mult": spec.hc_streams,
        "hc_sinkhorn_iters": spec.hc_sinkhorn,
        "hc_eps": spec.hc_eps,
        "swiglu_limit": spec.swiglu_limit,
        "sliding_window": spec.window,
        "o_groups": spec.o_groups,
        "o_lora_rank": spec.o_rank,
        "index_n_heads": spec.index_heads,
        "index_head_dim": spec.index_m,
        "index_topk": spec.index_topk,
        "rms_norm_eps": spec.norm_eps,
        "hidden_act": "silu",
        "tie_word_embeddings": spec.tie_embeddings,
        "max_position_embeddings": spec.context or 1048576,
    }


def _names() -> dict[str, str]:
    """Its checkpoints' names (transformers' save_pretrained writes them)."""
    a = "attention."
    names = {
        a + "W_QA": "attn.wq_a.weight",
        a + "q_a_norm.gamma": "attn.q_norm.weight",
        a + "W_QB": "attn.wq_b.weight",
        a + "W_KV": "attn.wkv.weight",
        a + "kv_norm.gamma": "attn.norm.weight",
        a + "sinks": "attn.attn_sink",
        a + "W_OA": "attn.wo_a.weight",
        a + "W_OB": "attn.wo_b.weight",
        a + "index.W_Q": "attn.indexer.wq_b.weight",
        a + "index.W_W": "attn.indexer.weights_proj.weight",
        "norm1.gamma": "attn_norm.weight",
        "norm2.gamma": "ffn_norm.weight",
        "ff.router": "ffn.gate.weight",
        "ff.router_bias": "ffn.gate.bias",
        "ff.router_hash": "ffn.gate.tid2eid",
    }
    for ours, theirs in (("pool", "attn.compressor."), ("index", "attn.indexer.compressor.")):
        names |= {f"{a}{ours}.{x}": theirs + y for x, y in (("W_KV", "wkv.weight"), ("W_gate", "wgate.weight"))}
        names |= {f"{a}{ours}.ape": theirs + "ape", f"{a}{ours}.norm.gamma": theirs + "norm.weight"}
    for n in "123":
        names[f"ff.W{n}[{{e}}]"] = f"ffn.experts.{{e}}.w{n}.weight"
        names[f"ff.shared.W{n}"] = f"ffn.shared_experts.w{n}.weight"
    for ours, theirs in (("attn", "attn"), ("ff", "ffn")):
        names |= {f"hc_{ours}.{x}": f"hc_{theirs}_{y}" for x, y in (("W", "fn"), ("b", "base"), ("scale", "scale"))}
    return names


GLOBALS = {
    "embedding.E": "model.embed_tokens.weight",
    "final_norm.gamma": "model.norm.weight",
    "head.W": "head.weight",
    "hc_head.W": "model.hc_head.hc_fn",
    "hc_head.b": "model.hc_head.hc_base",
    "hc_head.scale": "model.hc_head.hc_scale",
}
CHECKPOINT = Family("model.layers.{i}.", _names(), GLOBALS, integers=("ffn.gate.tid2eid",))
RECORDS = (
    Record(
        "deepseek_v4",
        "DeepseekV4ForCausalLM",
        spec,
        CHECKPOINT,
        config,
        config_alone=True,
        skipped=(r"^mtp\.", r"^model\.mtp\."),  # (its multi-token prediction layers, which transformers skips)
    ),
)

__all__ = ["RECORDS"]
