"""GGUF DeepSeek-V2 and V3 (architecture deepseek2) as convert_hf_to_gguf.py writes them: latent attention (its
key/value expansion kv_b split by newer converters into attn_k_b, (H, c, nope) transposed, and attn_v_b, (H, v, c);
older files hold attn_kv_b whole), the first leading_dense_block_count blocks dense, the others' experts stacked
with the shared experts beside them and V3's correction bias (exp_probs_b). The metadata's sizes are the latent
ones: key_length_mla and value_length_mla are the heads' (older files: key_length and value_length).

What the file does not hold is read as llama.cpp reads it: the rotary part turned in adjacent pairs (DeepSeek's
interleaved pairing; the converter does not permute), YaRN's mscale equal to its mscale_all_dim (the file keeps
0.1 mscale_all_dim as yarn_log_multiplier), every head its own keys (head_count_kv is the latent's 1). The groups
of a softmax router (V2's group_limited_greedy) are scored by their best expert, as V2's own code does; llama.cpp
scores every router's groups by their best two, V3's rule."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..spec.definition import Spec
from .gguf_keys import vocabulary
from .gguf_layout import EXPERTS, Joined
from .keys import Keys
from .layout import Family

SOFTMAX, SIGMOID = 1, 2  # llama.cpp's expert_gating_func


def gguf_spec(c: Keys, header: Any, rope: dict[str, Any]) -> dict[str, Any]:
    """deepseek2: the latent attention's sizes, its rotary (`rope`: the scaling read by the shared reader 'latent',
    gguf/base.py, which alone reads tensors), the dense and routed blocks."""
    d, H = c.count("embedding_length"), c.count("attention.head_count")
    N = c.count("block_count") - c.index("nextn_predict_layers", 0)  # (the prediction layers after the model's)
    rotated = c.count("rope.dimension_count")
    m = c.count("attention.key_length_mla", None) or c.count("attention.key_length")
    v = c.count("attention.value_length_mla", None) or c.count("attention.value_length")
    spec: dict[str, Any] = {
        "N": N,
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("feed_forward_length"),
        "V": vocabulary(c, header),
        "scale": "sqrt",
        "mask": "causal",
        "norm": "pre",
        "positional": "rope",
        "rope_pairing": "interleaved",
        "rope_theta": c.number("rope.freq_base", 10000.0),
        "norm_type": "rmsnorm",
        "norm_eps": c.number("attention.layer_norm_rms_epsilon", 1e-6),
        "feedforward": "gated",
        "activation": "silu",
        "ff_bias": False,
        "tie_embeddings": "output.weight" not in header.tensors,
        "attention": "latent",
        "kv_rank": c.count("attention.kv_lora_rank"),
        "rope_m": rotated,
    }
    if v != m:
        spec["v_m"] = v
    if "blk.0.attn_q_a.weight" in header.tensors:
        spec["q_rank"] = header.tensors["blk.0.attn_q_a.weight"].shape[0]
    if c.has("context_length"):
        spec["context"] = c.count("context_length")
    spec |= _yarn(c, rope, m)
    if c.has("attention.temperature_scale"):  # (Mistral 4's and Mistral Large 3's: Llama 4's query scaling)
        spec |= {
            "rope_query_beta": c.number("attention.temperature_scale"),
            "rope_query_len": c.count("attention.temperature_length"),
        }
    return spec | routed_spec(c, header, N)


def _yarn(c: Keys, rope: dict[str, Any], m: int) -> dict[str, Any]:
    out = dict(rope)
    if out.get("rope_scaling") == "yarn" and c.has("rope.scaling.yarn_log_multiplier"):
        k = _mscale_all_dim(c.number("rope.scaling.yarn_log_multiplier"))
        factor = out["rope_factor"]
        mscale = 1.0 if factor <= 1 else 0.1 * k * math.log(factor) + 1.0
        out |= {"rope_mscale": k, "rope_mscale_all_dim": k, "scale": m**-0.5 * mscale * mscale}
    return out


def _mscale_all_dim(log_multiplier: float) -> float:
    """mscale_all_dim from the file's float32 of 0.1 mscale_all_dim: the shortest decimal that stores as it (as
    float32 metadata is read), not the quotient (0.08 / 0.1 is 0.7999999999999999)."""
    stored = np.float32(log_multiplier)
    for digits in range(1, 18):
        k = float(f"{log_multiplier / 0.1:.{digits}g}")
        if np.float32(0.1 * k) == stored:
            return k
    return log_multiplier / 0.1


def routed_spec(c: Keys, header: Any, N: int, gating: int = SOFTMAX) -> dict[str, Any]:
    """The mixture as llama.cpp's build_moe_ffn reads it (DeepSeek's and the architectures that copy it): the first
    leading_dense_block_count blocks dense, E experts of expert_feed_forward_length, expert_shared_count shared
    ones in one MLP, the scoring (expert_gating_func, else `gating`) with exp_probs_b's correction, the groups,
    expert_weights_norm and expert_weights_scale."""
    if not c.has("expert_count"):
        return {}
    first = c.index("leading_dense_block_count", 0)
    E, r_e = c.count("expert_count"), c.count("expert_feed_forward_length")
    out: dict[str, Any] = {
        "E": E,
        "k": c.count("expert_used_count"),
        "expert_r": r_e,
        "router_renorm": c.flag("expert_weights_norm", False),
    }
    shared = c.index("expert_shared_count", 0)
    if shared:
        out["shared_r"] = shared * r_e
    if first:
        out["feedforward_layers"] = ["dense" if i < first else "routed" for i in range(N)]
    sigmoid = c.index("expert_gating_func", gating) == SIGMOID
    if sigmoid:
        out |= {"router_score": "sigmoid", "router_bias": f"blk.{first}.exp_probs_b.bias" in header.tensors}
    groups = c.index("expert_group_count", 1)
    if groups > 1:
        out |= {
            "router_groups": groups,
            "router_topk_groups": c.count("expert_group_used_count"),
            "router_group_score": "top2" if sigmoid else "max",
        }
    scale = c.number("expert_weights_scale", 1.0)
    if scale not in (0.0, 1.0):
        out["router_scale"] = scale
    return out


def _kv_b_pieces(spec) -> dict[str, tuple[int, ...]]:
    nope, c = spec.m - spec.rotated_dims, spec.kv_rank
    return {"attn_k_b.weight": (spec.H, c, nope), "attn_v_b.weight": (spec.H, spec.value_size, c)}


def _kv_b(pieces: list[np.ndarray]) -> np.ndarray:
    """W_KVB's rows, head by head [nope keys; values], from the converter's k_b (transposed) and v_b."""
    k_b, v_b = pieces
    whole = np.concatenate((k_b.swapaxes(1, 2), v_b), axis=1)
    return whole.reshape(-1, whole.shape[-1])


def _kv_b_divided(whole: np.ndarray, spec) -> list[np.ndarray]:
    """DeepseekV2Model.modify_tensors' split: per head, the nope key rows (transposed) and the value rows."""
    nope = spec.m - spec.rotated_dims
    heads = whole.reshape(spec.H, nope + spec.value_size, whole.shape[-1])
    return [np.ascontiguousarray(heads[:, :nope].swapaxes(1, 2)), np.ascontiguousarray(heads[:, nope:])]


_one = lambda spec: 1  # noqa: E731
ROUTED_NAMES = {  # the mixture's tensors in DeepSeek's file and those of its kind: router, correction, shared MLP
    "ff.router": "ffn_gate_inp.weight",
    "ff.router_bias": "exp_probs_b.bias",
    "ff.shared.W1": "ffn_gate_shexp.weight",
    "ff.shared.W3": "ffn_up_shexp.weight",
    "ff.shared.W2": "ffn_down_shexp.weight",
}
_NAMES = ROUTED_NAMES | {
    "norm1.gamma": "attn_norm.weight",
    "norm2.gamma": "ffn_norm.weight",
    "attention.W_QA": "attn_q_a.weight",
    "attention.q_a_norm.gamma": "attn_q_a_norm.weight",
    "attention.W_QB": "attn_q_b.weight",
    "attention.W_Q": "attn_q.weight",
    "attention.W_KVA": "attn_kv_a_mqa.weight",
    "attention.kv_a_norm.gamma": "attn_kv_a_norm.weight",
    "attention.W_KVB": "attn_kv_b.weight",
    "attention.W_O": "attn_output.weight",
    "ff.W1": "ffn_gate.weight",
    "ff.W3": "ffn_up.weight",
    "ff.W2": "ffn_down.weight",
}


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """DeepseekV2Model's keys: the latent sizes (key_length and value_length the latent's, the heads' in *_mla),
    the leading dense blocks, the router's scoring, groups, normalisation and scale."""
    c, rotated = spec.kv_rank or 0, spec.rotated_dims
    out: dict[str, Any] = {
        "attention.head_count_kv": 1,
        "attention.kv_lora_rank": c,
        "attention.key_length": c + rotated,
        "attention.value_length": c,
        "attention.key_length_mla": spec.m,
        "attention.value_length_mla": spec.value_size,
        "rope.dimension_count": rotated,
    }
    if spec.q_rank:
        out["attention.q_lora_rank"] = spec.q_rank
    if spec.rope_scaling == "yarn" and spec.rope_mscale_all_dim:
        out["rope.scaling.yarn_log_multiplier"] = 0.1 * float(spec.rope_mscale_all_dim)
    if spec.rope_query_beta:  # (llama.cpp's deepseek2 reads its length from temperature_length)
        out |= {"attention.temperature_scale": float(spec.rope_query_beta)}
        out["attention.temperature_length"] = spec.rope_query_len
    if not spec.E:  # (DeepseekV2Model for a dense model, Youtu-LLM: the keys llama.cpp's deepseek2 requires)
        return out | {
            "leading_dense_block_count": spec.N,
            "expert_feed_forward_length": spec.r,
            "expert_shared_count": 0,
        }
    return out | routed_metadata(spec)


def routed_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> `routed_spec`'s keys."""
    out: dict[str, Any] = {}
    if spec.E:
        dense = spec.feedforward_layers or ()
        out |= {
            "leading_dense_block_count": sum(1 for kind in dense if kind == "dense"),
            "expert_shared_count": (spec.shared_r or 0) // (spec.expert_r or 1),
            "expert_gating_func": 2 if spec.router_score == "sigmoid" else 1,
            "expert_group_count": spec.router_groups or 1,
            "expert_group_used_count": spec.router_topk_groups or 1,
            "expert_weights_scale": float(spec.router_scale),
        }
        if spec.router_renorm:
            out["expert_weights_norm"] = True
    return out


LAYOUT = Family(
    "blk.{i}.",
    _NAMES,
    {"embedding.E": "token_embd.weight", "head.W": "output.weight", "final_norm.gamma": "output_norm.weight"},
    fused=EXPERTS,
    stacked=frozenset(t for t, _, _ in EXPERTS),
)


def routed_layout(names: dict[str, str], globals_: dict[str, str]) -> Family:
    """A layout of dense blocks named `names` and routed ones with the experts stacked and `ROUTED_NAMES`."""
    return Family(
        "blk.{i}.", names | ROUTED_NAMES, globals_, fused=EXPERTS, stacked=frozenset(t for t, _, _ in EXPERTS)
    )


JOINED = {"attn_kv_b.weight": Joined(_kv_b_pieces, _kv_b, _kv_b_divided)}

__all__ = [
    "JOINED",
    "LAYOUT",
    "ROUTED_NAMES",
    "SIGMOID",
    "SOFTMAX",
    "gguf_metadata",
    "gguf_spec",
    "routed_layout",
    "routed_metadata",
    "routed_spec",
]
