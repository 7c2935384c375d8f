"""The model spec: the seed's symbols N, H, m, d, r plus the standard model's variants.

Every key is declared once, as a field of `Spec` with its metadata; validate.py checks a document against those
declarations, so an error always names the file, the key, the value and what was expected; load.py reads a file.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from ..text import escaped, value_text
from .altup_keys import ALTUP_FIELDS
from .attention_keys import ATTENTION_FIELDS
from .choices import (
    ACTIVATIONS,
    LABELS,
    MASKS,
    NORM_TYPES,
    NORMS,
    POSITIONALS,
    ROTARY,
    ROUTED,
    SCALES,
    SLIDING,
    shortest_pattern,
)
from .choices import key as _key
from .derived import Derived
from .encoder_decoder_keys import ENCODER_DECODER_FIELDS
from .expert_keys import EXPERT_FIELDS
from .feedforward_keys import FEEDFORWARD_FIELDS
from .latent_keys import LATENT_FIELDS
from .mixer_keys import MIXER_FIELDS
from .ngram_keys import NGRAM_FIELDS
from .norm_keys import NORM_FIELDS
from .rope_keys import ROPE_FIELDS
from .scale_keys import SCALE_FIELDS


@dataclass(frozen=True)
class Spec(Derived):
    """A transformer spec; the defaults of the optional keys give the seed's plain definition."""

    N: int = field(metadata=_key("posint", "number of blocks"))
    H: int = field(metadata=_key("posint", "number of attention heads"))
    m: int = field(metadata=_key("posint", "size of one head (need not be d/H)"))
    d: int = field(metadata=_key("posint", "model size: rows of X, one column per token"))
    r: int = field(metadata=_key("posint", "hidden size of the feedforward network"))
    name: str = field(default="", metadata=_key("str", "a label for tables"))
    description: str = field(default="", metadata=_key("str", "free text"))
    context: int | None = field(
        default=None,
        metadata=_key(
            "posint",
            "a label: the longest context the model was made for (Hugging Face: "
            "max_position_embeddings); tfm plan caps what fits at it",
        ),
    )
    scale: str | float = field(
        default="none", metadata=_key("scale", "score scale: none (1), sqrt (1/sqrt(m)) or a positive number", SCALES)
    )
    mask: str = field(default="none", metadata=_key("choice", "attention mask", MASKS))
    positional: str = field(
        default="none",
        metadata=_key(
            "choice",
            "positions: added to X (sinusoidal, sinusoidal_fairseq: M2M-100's halves, learned), rotating Q and K "
            "(rope), a learned bias per head on "
            "the scores of each distance bucket (relative: T5), or a fixed slope per head times the distance "
            "(alibi: BLOOM)",
            POSITIONALS,
        ),
    )
    max_len: int | None = field(default=None, metadata=_key("posint", "longest sequence (learned positions only)"))
    rope_theta: float = ROPE_FIELDS["rope_theta"]
    rope_fraction: float = ROPE_FIELDS["rope_fraction"]
    rope_pairing: str = ROPE_FIELDS["rope_pairing"]
    rope_scaling: str = ROPE_FIELDS["rope_scaling"]
    rope_factor: float = ROPE_FIELDS["rope_factor"]
    rope_low_freq_factor: float = ROPE_FIELDS["rope_low_freq_factor"]
    rope_high_freq_factor: float = ROPE_FIELDS["rope_high_freq_factor"]
    rope_original_max_len: int = ROPE_FIELDS["rope_original_max_len"]
    rope_attention_factor: float | None = ROPE_FIELDS["rope_attention_factor"]
    rope_short_factor: tuple[float, ...] | None = ROPE_FIELDS["rope_short_factor"]
    rope_long_factor: tuple[float, ...] | None = ROPE_FIELDS["rope_long_factor"]
    rope_beta_fast: float = ROPE_FIELDS["rope_beta_fast"]
    rope_beta_slow: float = ROPE_FIELDS["rope_beta_slow"]
    rope_mscale: float | None = ROPE_FIELDS["rope_mscale"]
    rope_mscale_all_dim: float | None = ROPE_FIELDS["rope_mscale_all_dim"]
    rope_truncate: bool = ROPE_FIELDS["rope_truncate"]
    rope_query_beta: float | None = ROPE_FIELDS["rope_query_beta"]
    rope_learned: bool = ROPE_FIELDS["rope_learned"]
    rope_query_len: int | None = ROPE_FIELDS["rope_query_len"]
    norm: str = field(
        default="none",
        metadata=_key(
            "choice",
            "layer norm placement; sandwich: pre-norm plus a norm of each sublayer's output "
            "before its residual (Gemma 2, 3); output: only the norm of each sublayer's output (OLMo 2); "
            "both with a final norm",
            NORMS,
        ),
    )
    norm_eps: float = field(default=1e-5, metadata=_key("posfloat", "layer norm epsilon"))
    attention_bias: bool = field(default=False, metadata=_key("bool", "biases b_Q, b_K, b_V, b_O"))
    activation: str = field(default="relu", metadata=_key("choice", "feedforward activation", ACTIVATIONS))
    norm_type: str = field(
        default="layernorm",
        metadata=_key("choice", "layernorm: (x - mean) / std * gamma + beta; rmsnorm: x / rms * gamma", NORM_TYPES),
    )
    feedforward: str = FEEDFORWARD_FIELDS["feedforward"]
    swiglu_alpha: float = FEEDFORWARD_FIELDS["swiglu_alpha"]
    swiglu_limit: float = FEEDFORWARD_FIELDS["swiglu_limit"]
    ff_bias: bool = field(default=True, metadata=_key("bool", "feedforward biases b1, b2 (and b3 when gated)"))
    V: int | None = field(
        default=None, metadata=_key("posint", "vocabulary: token ids in, V logits per column out (embedding E (d, V))")
    )
    embed_dim: int | None = SCALE_FIELDS["embed_dim"]
    embed_project: bool = SCALE_FIELDS["embed_project"]
    block_groups: int | None = SCALE_FIELDS["block_groups"]
    head_transform: str = SCALE_FIELDS["head_transform"]
    tie_embeddings: bool = field(default=False, metadata=_key("bool", "the head is E^T (no head.W); only with V"))
    head_bias: bool = field(default=False, metadata=_key("bool", "a bias head.b (V,) on the logits; only with V"))
    head: bool = field(
        default=True,
        metadata=_key("bool", "an output head: logits out; false gives the final columns (BertModel); only with V"),
    )
    type_vocab: int | None = SCALE_FIELDS["type_vocab"]
    embed_norm: bool = SCALE_FIELDS["embed_norm"]
    pooler: bool = SCALE_FIELDS["pooler"]
    logit_softcap: float | None = field(
        default=None, metadata=_key("posfloat", "logits capped as cap tanh(z / cap) (Gemma 2); only with V and a head")
    )
    embed_scale: str | float = SCALE_FIELDS["embed_scale"]
    logit_scale: float = SCALE_FIELDS["logit_scale"]
    residual_scale: float = SCALE_FIELDS["residual_scale"]
    layer_scale: bool = SCALE_FIELDS["layer_scale"]
    ple_dim: int | None = SCALE_FIELDS["ple_dim"]
    ple_vocab: int | None = SCALE_FIELDS["ple_vocab"]
    parallel: bool = field(
        default=False,
        metadata=_key("bool", "parallel blocks: X + Attn(N1(X)) + FF(N2(X)) (GPT-NeoX, Falcon, Phi-2); pre-norm"),
    )
    shared_norm: bool = field(
        default=False, metadata=_key("bool", "parallel blocks with one norm, N1 = N2 (Falcon-7B, Phi-2)")
    )
    out_bias: bool | None = field(
        default=None,
        metadata=_key(
            "bool",
            "the output projection's bias b_O [default: attention_bias]; false with attention_bias "
            "true gives biases on q, k, v only (Qwen2), true with attention_bias false b_O alone (GPT-Neo)",
        ),
    )
    qk_norm_over: str = field(
        default="head",
        metadata=_key(
            "choice",
            "what the query and key norms normalise: each head, gains (m,) the heads share (Qwen3, "
            "Gemma 3); all heads' projections together, gains (Hm,) and (Gm,) (OLMo 2); per_head: each head "
            "with gains of its own, (H, m) and (G, m), no beta (StableLM, Cohere); with qk_norm",
            ("head", "all", "per_head"),
        ),
    )
    norm_bias: bool = field(default=True, metadata=_key("bool", "layernorm's beta; false: gamma only (OLMo-style)"))
    norm_affine: bool = NORM_FIELDS["norm_affine"]
    first_attn_norm: bool = NORM_FIELDS["first_attn_norm"]
    norm_layers: tuple[str, ...] | None = NORM_FIELDS["norm_layers"]
    qk_norm: bool = ATTENTION_FIELDS["qk_norm"]
    norm_plus_one: bool = NORM_FIELDS["norm_plus_one"]
    E: int | None = field(
        default=None, metadata=_key("posint", "experts: E feedforwards and a router W_r (E, d) in each block (Mixtral)")
    )
    k: int | None = field(default=None, metadata=_key("posint", "experts per token, the top k of the router; with E"))
    expert_r: int | None = EXPERT_FIELDS["expert_r"]
    expert_clamp: float | None = EXPERT_FIELDS["expert_clamp"]
    router_renorm: bool = EXPERT_FIELDS["router_renorm"]
    shared_r: int | None = EXPERT_FIELDS["shared_r"]
    shared_gate: bool = EXPERT_FIELDS["shared_gate"]
    shared_scale: float = EXPERT_FIELDS["shared_scale"]
    router_on_input: bool = EXPERT_FIELDS["router_on_input"]
    router_score: str = EXPERT_FIELDS["router_score"]
    router_hash: bool = EXPERT_FIELDS["router_hash"]
    router_jitter: float = EXPERT_FIELDS["router_jitter"]
    router_groups: int | None = EXPERT_FIELDS["router_groups"]
    router_topk_groups: int | None = EXPERT_FIELDS["router_topk_groups"]
    router_group_score: str = EXPERT_FIELDS["router_group_score"]
    router_scale: float = EXPERT_FIELDS["router_scale"]
    router_renorm_eps: float | None = EXPERT_FIELDS["router_renorm_eps"]
    router_softcap: float | None = EXPERT_FIELDS["router_softcap"]
    expert_out_bias: bool = EXPERT_FIELDS["expert_out_bias"]
    router_logit_bias: bool = EXPERT_FIELDS["router_logit_bias"]
    router_bias: bool = EXPERT_FIELDS["router_bias"]
    router_bias_param: bool = EXPERT_FIELDS["router_bias_param"]
    zero_experts: int | None = EXPERT_FIELDS["zero_experts"]
    expert_norms: bool = EXPERT_FIELDS["expert_norms"]
    routed_later: bool = EXPERT_FIELDS["routed_later"]
    feedforward_layers: tuple[str, ...] | None = FEEDFORWARD_FIELDS["feedforward_layers"]
    ff_scales: tuple[float, ...] | None = FEEDFORWARD_FIELDS["ff_scales"]
    attn_softcap: float | None = ATTENTION_FIELDS["attn_softcap"]
    attn_sinks: bool = ATTENTION_FIELDS["attn_sinks"]
    qkv_clip: float | None = ATTENTION_FIELDS["qkv_clip"]
    attn_gate: bool = ATTENTION_FIELDS["attn_gate"]
    value_scale: float = ATTENTION_FIELDS["value_scale"]
    local_G: int | None = ATTENTION_FIELDS["local_G"]
    local_sinks: bool = ATTENTION_FIELDS["local_sinks"]
    full_m: int | None = ATTENTION_FIELDS["full_m"]
    v_norm: bool = ATTENTION_FIELDS["v_norm"]
    v_from_k: bool = ATTENTION_FIELDS["v_from_k"]
    kv_shared: int | None = ATTENTION_FIELDS["kv_shared"]
    kv_shared_r: int | None = ATTENTION_FIELDS["kv_shared_r"]
    kv_reused: bool = ATTENTION_FIELDS["kv_reused"]
    attn_experts: int | None = ATTENTION_FIELDS["attn_experts"]
    attn_k: int | None = ATTENTION_FIELDS["attn_k"]
    attn_gate_fn: str = ATTENTION_FIELDS["attn_gate_fn"]
    attn_gate_per_head: bool = ATTENTION_FIELDS["attn_gate_per_head"]
    chunk: int | None = ATTENTION_FIELDS["chunk"]
    qk_norm_nope: bool = ATTENTION_FIELDS["qk_norm_nope"]
    qk_norm_affine: bool = ATTENTION_FIELDS["qk_norm_affine"]
    nope_query_beta: float | None = ATTENTION_FIELDS["nope_query_beta"]
    nope_query_len: int | None = ATTENTION_FIELDS["nope_query_len"]
    window: int | None = ATTENTION_FIELDS["window"]
    attention_layers: tuple[str, ...] | None = ATTENTION_FIELDS["attention_layers"]
    positional_layers: tuple[str, ...] | None = ATTENTION_FIELDS["positional_layers"]
    rope_local_theta: float | None = ATTENTION_FIELDS["rope_local_theta"]
    rope_local_fraction: float | None = ATTENTION_FIELDS["rope_local_fraction"]
    attention: str = LATENT_FIELDS["attention"]
    kv_rank: int | None = LATENT_FIELDS["kv_rank"]
    q_rank: int | None = LATENT_FIELDS["q_rank"]
    rope_m: int | None = LATENT_FIELDS["rope_m"]
    v_m: int | None = LATENT_FIELDS["v_m"]
    latent_scale: bool = LATENT_FIELDS["latent_scale"]
    latent_eps: float = LATENT_FIELDS["latent_eps"]
    query_temperature: bool = LATENT_FIELDS["query_temperature"]
    latent_layers: tuple[str, ...] | None = LATENT_FIELDS["latent_layers"]
    index_query: str = LATENT_FIELDS["index_query"]
    index_heads: int | None = LATENT_FIELDS["index_heads"]
    index_m: int | None = LATENT_FIELDS["index_m"]
    index_topk: int | None = LATENT_FIELDS["index_topk"]
    index_pairing: str = LATENT_FIELDS["index_pairing"]
    index_rope: str = LATENT_FIELDS["index_rope"]
    index_pool: int | None = LATENT_FIELDS["index_pool"]
    index_eps: float = LATENT_FIELDS["index_eps"]
    mixer_layers: tuple[str, ...] | None = MIXER_FIELDS["mixer_layers"]
    conv_kernel: int = MIXER_FIELDS["conv_kernel"]
    conv_bias: bool = MIXER_FIELDS["conv_bias"]
    ssm_heads: int | None = MIXER_FIELDS["ssm_heads"]
    ssm_head_dim: int | None = MIXER_FIELDS["ssm_head_dim"]
    ssm_state: int | None = MIXER_FIELDS["ssm_state"]
    ssm_groups: int = MIXER_FIELDS["ssm_groups"]
    ssm_dt_min: float | None = MIXER_FIELDS["ssm_dt_min"]
    ssm_bias: bool = MIXER_FIELDS["ssm_bias"]
    linear_k_heads: int | None = MIXER_FIELDS["linear_k_heads"]
    linear_k_dim: int | None = MIXER_FIELDS["linear_k_dim"]
    linear_v_heads: int | None = MIXER_FIELDS["linear_v_heads"]
    linear_v_dim: int | None = MIXER_FIELDS["linear_v_dim"]
    linear_beta_scale: float = MIXER_FIELDS["linear_beta_scale"]
    linear_norm_eps: float | None = MIXER_FIELDS["linear_norm_eps"]
    linear_decay_bound: float | None = MIXER_FIELDS["linear_decay_bound"]
    linear_gate_fn: str = MIXER_FIELDS["linear_gate_fn"]
    ssm_inner: int | None = MIXER_FIELDS["ssm_inner"]
    ssm_dt_rank: int | None = MIXER_FIELDS["ssm_dt_rank"]
    ssm_bcdt_norm: str = MIXER_FIELDS["ssm_bcdt_norm"]
    ssm_bcdt_eps: float | None = MIXER_FIELDS["ssm_bcdt_eps"]
    ssm_norm: str = MIXER_FIELDS["ssm_norm"]
    ssm_scales: tuple[float, ...] | None = MIXER_FIELDS["ssm_scales"]
    parallel_scales: tuple[float, ...] | None = MIXER_FIELDS["parallel_scales"]
    mem_blocks: int | None = MIXER_FIELDS["mem_blocks"]
    mem_rank: int | None = MIXER_FIELDS["mem_rank"]
    mem_qkv_adapters: bool = MIXER_FIELDS["mem_qkv_adapters"]
    ngram_blocks: tuple[int, ...] | None = NGRAM_FIELDS["ngram_blocks"]
    ngram_dim: int | None = NGRAM_FIELDS["ngram_dim"]
    ngram_size: int = NGRAM_FIELDS["ngram_size"]
    ngram_heads: int = NGRAM_FIELDS["ngram_heads"]
    ngram_vocab: int = NGRAM_FIELDS["ngram_vocab"]
    ngram_vocab_multiple: int = NGRAM_FIELDS["ngram_vocab_multiple"]
    ngram_seed: int = NGRAM_FIELDS["ngram_seed"]
    ngram_kernel: int = NGRAM_FIELDS["ngram_kernel"]
    ngram_eos: int | None = NGRAM_FIELDS["ngram_eos"]
    ngram_table: int | None = NGRAM_FIELDS["ngram_table"]
    o_groups: int | None = MIXER_FIELDS["o_groups"]
    o_rank: int | None = MIXER_FIELDS["o_rank"]
    compress_rate: int | None = MIXER_FIELDS["compress_rate"]
    compress_heavy_rate: int | None = MIXER_FIELDS["compress_heavy_rate"]
    altup: int | None = ALTUP_FIELDS["altup"]
    altup_active: int = ALTUP_FIELDS["altup_active"]
    altup_correct_scale: bool = ALTUP_FIELDS["altup_correct_scale"]
    hc_streams: int | None = ALTUP_FIELDS["hc_streams"]
    hc_form: str = ALTUP_FIELDS["hc_form"]
    hc_post_scale: float = ALTUP_FIELDS["hc_post_scale"]
    hc_head: str = ALTUP_FIELDS["hc_head"]
    hc_rank: int | None = ALTUP_FIELDS["hc_rank"]
    hc_sinkhorn: int = ALTUP_FIELDS["hc_sinkhorn"]
    hc_eps: float = ALTUP_FIELDS["hc_eps"]
    laurel_rank: int | None = ALTUP_FIELDS["laurel_rank"]
    r_layers: tuple[int, ...] | None = ALTUP_FIELDS["r_layers"]
    sparsity_layers: tuple[float, ...] | None = ALTUP_FIELDS["sparsity_layers"]
    G: int | None = ATTENTION_FIELDS["G"]
    N_enc: int | None = ENCODER_DECODER_FIELDS["N_enc"]
    V_src: int | None = ENCODER_DECODER_FIELDS["V_src"]
    cross_H: int | None = ENCODER_DECODER_FIELDS["cross_H"]
    cross_m: int | None = ENCODER_DECODER_FIELDS["cross_m"]
    cross_G: int | None = ENCODER_DECODER_FIELDS["cross_G"]
    encoder: tuple[tuple[str, Any], ...] | None = ENCODER_DECODER_FIELDS["encoder"]  # (key, value) pairs
    cross_bias: bool | None = ENCODER_DECODER_FIELDS["cross_bias"]
    rel_buckets: int = ENCODER_DECODER_FIELDS["rel_buckets"]
    rel_max_distance: int = ENCODER_DECODER_FIELDS["rel_max_distance"]
    position_offset: int | None = ENCODER_DECODER_FIELDS["position_offset"]
    pad_id: int | None = ENCODER_DECODER_FIELDS["pad_id"]
    rel_per_block: bool = ENCODER_DECODER_FIELDS["rel_per_block"]
    rel_terms: str = ENCODER_DECODER_FIELDS["rel_terms"]
    head_scale: str = SCALE_FIELDS["head_scale"]

    def __post_init__(self) -> None:
        """Per-layer kinds in their canonical form: the shortest pattern that repeats to them, None if all default."""
        defaults: dict[str, Any] = {"attention_layers": SLIDING, "feedforward_layers": ROUTED}
        defaults |= {"positional_layers": ROTARY, "r_layers": self.r, "sparsity_layers": 0.0}
        defaults["mixer_layers"] = self.attention
        for key, default in defaults.items():
            kinds = getattr(self, key)
            if kinds is not None:
                pattern = shortest_pattern(kinds, self.N) if self.N > 0 and len(kinds) else tuple(kinds)
                object.__setattr__(self, key, None if pattern == (default,) else pattern)

    def summary(self) -> str:
        """One line for titles: 'gpt2-small: N=12, H=12, ..., norm=pre'."""
        keys = {k: v for k, v in self.to_dict().items() if k not in LABELS}
        return f"{escaped(self.label)}: " + ", ".join(f"{k}={value_text(v)}" for k, v in keys.items())

    def variant_keys(self) -> dict[str, Any]:
        """The optional model keys that differ from the seed's plain definition."""
        plain = Spec(N=1, H=1, m=1, d=1, r=1)
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in REQUIRED + LABELS and getattr(self, f.name) != getattr(plain, f.name)
        }

    def model_keys(self) -> dict[str, Any]:
        """What changes the model's function: the keys without the labels, the scale as the factor it applies."""
        keys = {k: v for k, v in self.to_dict().items() if k not in LABELS}
        return keys | {"scale": self.score_scale, "G": self.kv_heads}

    def differing_keys(self, other: Spec) -> list[str]:
        """The model keys on which two specs differ (labels aside), sorted: [] for the same model."""
        mine, theirs = self.model_keys(), other.model_keys()
        return sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k))

    def to_dict(self) -> dict[str, Any]:
        """The spec as the mapping a YAML file would hold (optional keys only where set)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in REQUIRED}
        if self.name:
            out["name"] = self.name
        if self.description:
            out["description"] = self.description
        if self.context:
            out["context"] = self.context
        out.update(self.variant_keys())
        for key in LIST_KEYS:
            if key in out:
                out[key] = list(out[key])
        if self.encoder:
            out["encoder"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.encoder}
        return out


FIELDS = {f.name: f for f in fields(Spec)}
LIST_KEYS: tuple[str, ...] = ("attention_layers", "feedforward_layers", "positional_layers", "rope_short_factor")
LIST_KEYS += ("rope_long_factor", "r_layers", "sparsity_layers", "mixer_layers", "ssm_scales", "parallel_scales")
LIST_KEYS += ("ff_scales", "norm_layers", "ngram_blocks")
REQUIRED = tuple(name for name, f in FIELDS.items() if f.default is MISSING)

DEFAULT_SPEC = Spec(N=2, H=4, m=8, d=32, r=64, name="default", description="built-in default spec")


__all__ = ["DEFAULT_SPEC", "FIELDS", "REQUIRED", "Spec"]
