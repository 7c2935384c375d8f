"""The keys of the attention's variants per block: capped scores, sinks, the sliding window and which blocks slide,
and the sliding blocks' own rotary base. The Spec's class body takes each field from here."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from .choices import ATTENTION_KINDS, POSITION_KINDS
from .choices import key as _key

ATTENTION_FIELDS: dict[str, Any] = {
    "qk_norm": field(
        default=False,
        metadata=_key(
            "bool",
            "a norm of each query and key head over its m entries, before rotary positions "
            "(Qwen3): the spec's norm_type, gains (m,) shared by the heads; see qk_norm_over",
        ),
    ),
    "attn_softcap": field(
        default=None,
        metadata=_key(
            "posfloat", "attention scores capped as cap tanh(s / cap), after the scale and before the mask (Gemma 2)"
        ),
    ),
    "attn_sinks": field(
        default=False,
        metadata=_key(
            "bool",
            "a learned logit per head, attention.sinks (H,), in each query's softmax beside its "
            "keys' scores, its weight then dropped: the weights sum to less than 1 (gpt-oss)",
        ),
    ),
    "chunk": field(
        default=None,
        metadata=_key(
            "posint",
            "chunked attention: query t sees keys C floor(t / C) .. t only, chunks of C from position 0 (Llama 4); "
            "with positional_layers, in the turning blocks only; causal",
        ),
    ),
    "qk_norm_nope": field(
        default=True,
        metadata=_key(
            "bool", "the blocks without positions normalise queries and keys too (false: Llama 4); with qk_norm"
        ),
    ),
    "qk_norm_affine": field(
        default=True,
        metadata=_key("bool", "the query/key norms have gains (false: no parameters, Llama 4's L2 norm); with qk_norm"),
    ),
    "nope_query_beta": field(
        default=None,
        metadata=_key(
            "posfloat",
            "Llama 4's attention temperature in the blocks without positions: the query at position t times "
            "1 + beta ln(1 + floor((t + 1) / nope_query_len))",
        ),
    ),
    "nope_query_len": field(
        default=None, metadata=_key("posint", "the positions per step of that temperature; with nope_query_beta")
    ),
    "attn_gate": field(
        default=False,
        metadata=_key(
            "bool",
            "each head's output times sigmoid(W_G x) entry by entry before W_O, attention.W_G (H, m, d) from the "
            "block's normed input (AFMoE's gated attention)",
        ),
    ),
    "qkv_clip": field(
        default=None,
        metadata=_key(
            "posfloat",
            "q, k and v clamped to [-c, c] after their projections (and the query/key norms): OLMo's, OLMoE's, "
            "MPT's and DBRX's clip_qkv",
        ),
    ),
    "window": field(
        default=None,
        metadata=_key(
            "posint",
            "sliding window: query t sees keys t - w + 1 .. t (Mistral); unmasked, keys s with |s - t| < w "
            "(ModernBERT)",
        ),
    ),
    "G": field(
        default=None,
        metadata=_key("posint", "key/value heads, each shared by H/G query heads (grouped-query; 1: multi-query)"),
    ),
    "attention_layers": field(
        default=None,
        metadata=_key(
            "layers",
            "which blocks attend through the window and which see every earlier key (Gemma 2, gpt-oss): a list of "
            "N kinds or a shorter pattern repeated over the blocks [default: all sliding]; with window",
            ATTENTION_KINDS,
        ),
    ),
    "positional_layers": field(
        default=None,
        metadata=_key(
            "layers",
            "which blocks turn their queries and keys by the rotary positions and which attend without positions "
            "(SmolLM3's and Llama 4's NoPE layers): a list of N kinds or a shorter pattern repeated over the "
            "blocks [default: all rope]; with positional rope",
            POSITION_KINDS,
        ),
    ),
    "attn_experts": field(
        default=None,
        metadata=_key("posint", "attention: mixture: the experts of query and output projections (JetMoE)"),
    ),
    "attn_k": field(default=None, metadata=_key("posint", "attention: mixture: the experts each token chooses")),
    "value_scale": field(
        default=1.0, metadata=_key("posfloat", "the values times this number after their projection (MiMo-V2-Flash)")
    ),
    "local_G": field(
        default=None,
        metadata=_key("posint", "the sliding blocks' key/value heads (MiMo-V2-Flash's: 2 G); with attention_layers"),
    ),
    "full_m": field(
        default=None,
        metadata=_key(
            "posint", "the full blocks' head size (Gemma 4's global_head_dim) [default: m]; with attention_layers"
        ),
    ),
    "kv_shared": field(
        default=None,
        metadata=_key(
            "posint",
            "the last S blocks attend with their own queries to the keys and values of the last earlier block of "
            "their kind (full or sliding): no W_K, W_V or key norm, no cache of their own (Gemma 4's "
            "num_kv_shared_layers); below N",
        ),
    ),
    "kv_shared_r": field(
        default=None,
        metadata=_key(
            "posint", "those blocks' feedforward size (Gemma 4's double-wide MLP: 2r) [default: r]; with kv_shared"
        ),
    ),
    "kv_reused": field(
        default=False,
        metadata=_key("bool", "a block of kv_shared's (each block's own kind: set by kv_shared, not by hand)"),
    ),
    "v_from_k": field(
        default=False,
        metadata=_key(
            "bool",
            "no W_V: the values are the keys' projection before their norm and rotation (Gemma 4's "
            "attention_k_eq_v); with attention_layers, on the full blocks only",
        ),
    ),
    "v_norm": field(
        default=False,
        metadata=_key("bool", "each value head normalised over its entries (an RMS norm, no gain: Gemma 4's v_norm)"),
    ),
    "local_sinks": field(
        default=False,
        metadata=_key("bool", "a sink per head on the sliding blocks only (MiMo-V2-Flash); with attention_layers"),
    ),
    "attn_gate_fn": field(
        default="sigmoid",
        metadata=_key(
            "choice",
            "the output gate's function: sigmoid (AFMoE) or softplus (Laguna, torch's: x past 20); with attn_gate",
            ("sigmoid", "softplus"),
        ),
    ),
    "attn_gate_per_head": field(
        default=False,
        metadata=_key("bool", "one gate a head, W_G (H, d), not one an entry (Laguna's gating: true); with attn_gate"),
    ),
    "rope_local_fraction": field(
        default=None,
        metadata=_key(
            "fraction",
            "the share of each head the sliding blocks turn (Laguna's: all, beside half in its full blocks); with "
            "rope and attention_layers [default: rope_fraction]",
        ),
    ),
    "rope_local_theta": field(
        default=None,
        metadata=_key(
            "posfloat",
            "rotary base of the sliding blocks, which turn without rope_scaling (Gemma 3's "
            "local layers); with rope and attention_layers [default: rope_theta]",
        ),
    ),
}

__all__ = ["ATTENTION_FIELDS"]
