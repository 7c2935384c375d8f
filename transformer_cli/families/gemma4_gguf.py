"""Gemma 4's GGUF files (gemma4) as convert_hf_to_gguf.py's Gemma4Model writes them: Gemma 3's keys with the full
layers' head size as key_length and the sliding layers' as key_length_swa, each layer's kind in
attention.sliding_window_pattern, each layer's key/value heads and feedforward size as lists where they differ
(num_global_key_value_heads, use_double_wide_mlp), the sharing layers in attention.shared_kv_layers, the per-layer
inputs' width in embedding_length_per_layer_input (0: none), its norms' gains as they are (x w), each layer's
layer_scalar as layer_output_scale, and rope_freqs.weight: the full layers' pairs that turn (1) and those that do
not (1e30), which is the proportional rope (gguf/base.py). Its mixture: the experts' gate and up projections stacked
(ffn_gate_up_exps), the router's scale (ffn_gate_inp.scale) and each expert's (ffn_down_exps.scale). llama.cpp
reads no attention biases, no scaling of the full layers' rope and no bidirectional attention for text: a model with
them is refused when written (the keys that would differ)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..spec.definition import Spec
from .config_keys import layer_types
from .gguf_keys import sliding_kinds, vocabulary, windowed
from .keys import Keys
from .layout import Family

SANDWICH_BLOCK = {  # Gemma 3n's and 4's: the attention, the four norms, the MLP and the per-layer inputs
    "attention.W_Q": "attn_q.weight",
    "attention.W_K": "attn_k.weight",
    "attention.W_V": "attn_v.weight",
    "attention.W_O": "attn_output.weight",
    "attention.q_norm.gamma": "attn_q_norm.weight",
    "attention.k_norm.gamma": "attn_k_norm.weight",
    "norm1.gamma": "attn_norm.weight",
    "norm1_out.gamma": "post_attention_norm.weight",
    "norm2.gamma": "ffn_norm.weight",
    "norm2_out.gamma": "post_ffw_norm.weight",
    "ff.W1": "ffn_gate.weight",
    "ff.W3": "ffn_up.weight",
    "ff.W2": "ffn_down.weight",
    "per_layer.W_gate": "inp_gate.weight",
    "per_layer.W_proj": "proj.weight",
    "per_layer.norm.gamma": "post_norm.weight",
}
SANDWICH_GLOBALS = {  # (Gemma 3n's and 4's: with the per-layer inputs' table, projection and norm)
    "embedding.E": "token_embd.weight",
    "head.W": "output.weight",
    "final_norm.gamma": "output_norm.weight",
    "per_layer.E": "per_layer_token_embd.weight",
    "per_layer.W": "per_layer_model_proj.weight",
    "per_layer.norm.gamma": "per_layer_proj_norm.weight",
}
_BLOCK = SANDWICH_BLOCK | {
    "scale": "layer_output_scale.weight",
    # the mixture beside the MLP (expert_norms: components/stream_experts.py)
    "ff.shared.W1": "ffn_gate.weight",
    "ff.shared.W3": "ffn_up.weight",
    "ff.shared.W2": "ffn_down.weight",
    "ff.shared_norm.gamma": "ffn_norm.weight",
    "ff.shared_norm_out.gamma": "post_ffw_norm_1.weight",
    "ff.routed_norm.gamma": "pre_ffw_norm_2.weight",
    "ff.routed_norm_out.gamma": "post_ffw_norm_2.weight",
    "ff.router": "ffn_gate_inp.weight",
    "ff.router_scale": "ffn_gate_inp.scale",
    "ff.expert_scale": "ffn_down_exps.scale",
}
GATE_UP, DOWN = "ffn_gate_up_exps.weight", "ffn_down_exps.weight"  # (E, 2 r_e, d), (E, d, r_e)
LAYOUT = Family(
    "blk.{i}.",
    _BLOCK,
    SANDWICH_GLOBALS,
    fused=((GATE_UP, ("ff.W1", "ff.W3"), lambda spec: spec.E or 0), (DOWN, ("ff.W2",), lambda spec: 1)),
    stacked=frozenset((GATE_UP, DOWN)),
)


def sandwich_keys(c: Keys, header: Any) -> dict[str, Any]:
    """What Gemma 3n's and 4's files share: Gemma's causal sandwich blocks of GELU MLPs, unscaled scores over
    normed queries, keys and values, the embedding times sqrt(d), rotary of rope.freq_base."""
    return {
        "V": vocabulary(c, header),
        "tie_embeddings": "output.weight" not in header.tensors,
        "scale": "none",
        "mask": "causal",
        "norm": "sandwich",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("attention.layer_norm_rms_epsilon", 1e-6),
        "embed_scale": "sqrt",
        "feedforward": "gated",
        "activation": "gelu",
        "ff_bias": False,
        "qk_norm": True,
        "v_norm": True,
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", 1e6),
    }


def per_layer(c: Keys, key: str, N: int) -> list[int]:
    """A count the file gives once or per layer (a list of N)."""
    value = c.data.get(key)
    if isinstance(value, list):
        if len(value) != N or not all(isinstance(v, int) and v > 0 for v in value):
            raise c.fail(key, value, f"a positive integer or a list of {N}, one per layer")
        return value
    return [c.count(key)] * N


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """gemma4.* -> spec (`spec`: the full layers' rope share, gguf/base.proportional)."""
    N, d, H = c.count("block_count"), c.count("embedding_length"), c.count("attention.head_count")
    full_m, m = c.count("attention.key_length"), c.count("attention.key_length_swa")
    heads, widths = per_layer(c, "attention.head_count_kv", N), per_layer(c, "feed_forward_length", N)
    found = sliding_kinds(c, N, 6)
    kinds = found[1] if found else ["full"] * N
    S = c.index("attention.shared_kv_layers", 0)
    out: dict[str, Any] = {
        "N": N,
        "H": H,
        "d": d,
        "r": widths[0],
        **sandwich_keys(c, header),
        "layer_scale": "blk.0.layer_output_scale.weight" in header.tensors,
        "rope_pairing": "proportional" if spec else "half",
        **spec,
    }
    if c.has("context_length"):
        out["context"] = c.count("context_length")
    if c.has("final_logit_softcapping"):
        out["logit_softcap"] = c.number("final_logit_softcapping")
    full = [i for i, kind in enumerate(kinds) if kind == "full"]
    G_full = heads[full[0]] if full else heads[0]
    if found and "sliding" in kinds:
        G = heads[kinds.index("sliding")]
        out |= {"m": m, "G": G_full} | windowed(found[0], kinds) | ({"full_m": full_m} if full_m != m else {})
        out |= {"local_G": G} if G != G_full else {}
        out["rope_local_theta"] = c.number("rope.freq_base_swa", 10000.0)
        rotated = c.count("rope.dimension_count_swa", m)
        out |= {"rope_local_fraction": rotated / m} if rotated != m or "rope_fraction" in out else {}
    else:
        out |= {"m": full_m, "G": G_full}
    if (
        full
        and f"blk.{full[0]}.attn_v.weight" not in header.tensors
        and f"blk.{full[0]}.attn_k.weight" in header.tensors
    ):
        out["v_from_k"] = True  # (the full layers' values their keys: attention_k_eq_v)
    if S:
        out["kv_shared"] = S
        out |= {"kv_shared_r": widths[-1]} if widths[-1] != widths[0] else {}
    P = c.index("embedding_length_per_layer_input", 0)
    if P:
        rows = header.tensors["per_layer_token_embd.weight"].shape[0]
        out |= {"ple_dim": P} | ({"ple_vocab": rows} if rows != out["V"] else {})
    if c.has("expert_count"):
        r_e = c.count("expert_feed_forward_length")
        out |= {"E": c.count("expert_count"), "k": c.count("expert_used_count"), "expert_r": r_e}
        out |= {"shared_r": widths[0], "expert_norms": True}
    return out


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> the gemma4.* keys beyond the shared ones, as Gemma4Model.set_gguf_parameters writes them."""
    full_m = spec.full_m or spec.m
    kinds = layer_types(spec)
    shared = spec.kv_shared or 0
    out: dict[str, Any] = {
        "attention.key_length": full_m,
        "attention.value_length": full_m,
        "attention.key_length_swa": spec.m,
        "attention.value_length_swa": spec.m,
        "attention.shared_kv_layers": shared,
        "embedding_length_per_layer_input": spec.ple_dim or 0,
        "attention.sliding_window_pattern": [kind == "sliding_attention" for kind in kinds],
        "rope.dimension_count": full_m,
        "rope.dimension_count_swa": int(spec.m * (spec.rope_local_fraction or 1.0)),
        "rope.freq_base_swa": float(spec.rope_local_theta or spec.rope_theta),
        "attention.sliding_window": spec.window or 512,
    }
    if spec.kv_shared_r:
        out["feed_forward_length"] = [spec.r] * (spec.N - shared) + [spec.kv_shared_r] * shared
    if spec.local_G:
        out["attention.head_count_kv"] = [spec.local_G if k == "sliding_attention" else spec.kv_heads for k in kinds]
    if spec.E:
        out["expert_feed_forward_length"] = spec.expert_r
    return out


def rope_freqs(spec: Spec) -> dict[str, np.ndarray]:
    """Gemma4Model.generate_extra_tensors: a factor per pair of the full layers' heads, 1 where it turns, 1e30
    where it does not."""
    full_m = spec.full_m or spec.m
    turned = int(full_m * spec.rope_fraction) // 2 if spec.rope_pairing == "proportional" else full_m // 2
    factors = np.array([1.0] * turned + [1e30] * (full_m // 2 - turned), dtype=np.float32)
    return {"rope_freqs.weight": factors}


__all__ = ["LAYOUT", "gguf_metadata", "gguf_spec", "rope_freqs"]
