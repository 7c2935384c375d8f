"""Llama 4's text model (Llama4ForCausalLM, the text stack of Llama 4 Scout and Maverick): LLaMA's block with the
rotary on interleaved pairs, every no_rope_layer_interval-th layer without positions (no_rope_layers); the turning
layers attend within chunks of attention_chunk_size (tfm's chunk) and normalise their queries and keys without
gains (Llama4TextL2Norm, use_qk_norm: qk_norm_affine and qk_norm_nope false), the others attend to every earlier
key and scale their queries by 1 + attn_scale ln(1 + floor((t + 1) / floor_scale)) (attn_temperature_tuning:
nope_query_beta). Dense layers of intermediate_size_mlp and routed ones (moe_layers, every
interleave_moe_layer_step-th): the top k of E logits, each chosen expert's sigmoid weighting its input (not its
output: router_on_input), beside a shared expert, both of intermediate_size. tfm holds the chunks on the turning
layers: a layer_types that chunks another way is refused.

Its GGUF file (llama4) holds the sizes, the dense layers' width (feed_forward_length), the experts' and shared
expert's (expert_feed_forward_length) and interleave_moe_layer_step; llama.cpp's llama4 graph hard-codes the rest,
and tfm reads them as it does: chunks of 8,192, every fourth layer without positions, its queries scaled by
0.1 ln(1 + floor((t + 1) / 8192)), query/key norms unless 128 experts (Maverick), Llama 3's rope_freqs (Scout's
bands 1 and 1). A model the file cannot hold (other chunks, layers or scaling) is refused when written; a file with
attention.sliding_window 0 (every layer full: llama.cpp then treats only the last layer as unturned) is refused."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import feedforward_kinds, positional_kinds, shared_keys
from .deepseek_gguf import routed_layout
from .expert_checkpoints import LLAMA4
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .parts import llama_like
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: Scout's, 16 experts of 8,192, one chosen, chunks of 8,192)."""
    plain = llama_like(
        c, c.nullable_count("num_key_value_heads", None) or 8, 128, 1e-5, False, 4096 * 32, theta=500000.0
    )
    N = plain["N"]
    every = c.count("no_rope_layer_interval", 4)
    turning = c.data.get("no_rope_layers") or [int((i + 1) % every != 0) for i in range(N)]
    if not isinstance(turning, list) or len(turning) != N or any(t not in (0, 1) for t in turning):
        raise c.fail("no_rope_layers", turning, f"a list of {N} 1 (rotary) or 0 (no positions)")
    chunk = c.nullable_count("attention_chunk_size", 8192)
    kinds = ["chunked_attention" if t and chunk is not None else "full_attention" for t in turning]
    given = c.data.get("layer_types")
    if given is not None and given != kinds:
        raise c.refuse("layer_types", given, "tfm's chunked layers are the turning ones (no_rope_layers' 1s)")
    out = plain | {"rope_pairing": "interleaved", "r": c.count("intermediate_size_mlp", 16384)}
    out |= {"attention_bias": c.flag("attention_bias", False)}
    tuned = c.flag("attn_temperature_tuning", True)
    tuning = (c.number("attn_scale", 0.1), c.count("floor_scale", 8192)) if tuned else None
    return out | _layers(turning, chunk, tuning, c.flag("use_qk_norm", True)) | _experts(c, N)


def _layers(turning: list[int], chunk: int | None, tuning: tuple[float, int] | None, qk_norm: bool) -> dict[str, Any]:
    """The layers without positions (turning's 0s) and their queries' scaling (`tuning`: attn_scale, floor_scale),
    the chunks and the query/key norms without gains of the turning ones."""
    out: dict[str, Any] = {}
    if 0 in turning:
        out["positional_layers"] = ["rope" if t else "nope" for t in turning]
        if tuning is not None:
            out |= {"nope_query_beta": tuning[0], "nope_query_len": tuning[1]}
    if chunk is not None and 1 in turning:
        out["chunk"] = chunk
    if qk_norm and 1 in turning:
        out |= {"qk_norm": True, "qk_norm_affine": False, "qk_norm_nope": False}
    return out


def _experts(c: Keys, N: int) -> dict[str, Any]:
    """The routed layers (moe_layers, else every interleave_moe_layer_step-th), their router and shared expert."""
    step = c.count("interleave_moe_layer_step", 1)
    routed = c.data.get("moe_layers")
    routed = list(range(step - 1, N, step)) if routed is None else routed
    if not isinstance(routed, list) or any(not isinstance(i, int) or not 0 <= i < N for i in routed):
        raise c.fail("moe_layers", routed, f"a list of layer indices below {N}")
    if not routed:
        return {}
    E, k = c.count("num_local_experts", 16), c.count("num_experts_per_tok", 1)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_local_experts = {E}")
    size = c.count("intermediate_size", 8192)
    out = {"E": E, "k": k, "expert_r": size, "shared_r": size, "router_score": "sigmoid", "router_renorm": False}
    out["router_on_input"] = True
    if len(routed) < N:
        out["feedforward_layers"] = ["routed" if i in routed else "dense" for i in range(N)]
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Llama 4's text config.json."""
    out = shared_keys(spec) | {"intermediate_size_mlp": spec.r, "attention_bias": spec.attention_bias}
    out |= {"no_rope_layers": [int(t == "rope") for t in positional_kinds(spec)], "attention_chunk_size": spec.chunk}
    out |= {"use_qk_norm": spec.qk_norm, "attn_temperature_tuning": spec.nope_query_beta is not None}
    if spec.nope_query_beta is not None:
        out |= {"attn_scale": spec.nope_query_beta, "floor_scale": spec.nope_query_len}
    routed = [i for i, kind in enumerate(feedforward_kinds(spec)) if kind == "routed"]
    out |= {"moe_layers": routed, "num_local_experts": spec.E or 16, "num_experts_per_tok": spec.k or 1}
    out["intermediate_size"] = spec.expert_r or spec.r
    return out


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's reader (E and k from expert_count, expert_used_count) with llama.cpp's llama4 constants."""
    if c.has("attention.sliding_window") and c.count("attention.sliding_window", None) == 0:
        raise c.refuse(
            "attention.sliding_window", 0, "a file of every layer full (llama.cpp leaves only the last unturned)"
        )
    N, E, k = spec["N"], spec.pop("E", 0), spec.pop("k", 1)
    if not E:
        raise c.refuse("expert_count", 0, "llama.cpp's llama4 has experts")
    turning = [int((i + 1) % 4 != 0) for i in range(N)]
    out = spec | {"rope_pairing": "interleaved"} | _layers(turning, 8192, (0.1, 8192), E != 128)
    routed = Keys(
        {
            "interleave_moe_layer_step": c.count("interleave_moe_layer_step"),
            "num_local_experts": E,
            "num_experts_per_tok": k,
            "intermediate_size": c.count("expert_feed_forward_length"),
        },
        c.source,
        c.prefix,
    )
    return out | _experts(routed, N)


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """The routed layers' step and the experts' width (the dense layers' is feed_forward_length)."""
    routed = [i for i, kind in enumerate(feedforward_kinds(spec)) if kind == "routed"]
    step = routed[0] + 1 if routed else 0
    return {"interleave_moe_layer_step": step, "expert_feed_forward_length": spec.expert_r or spec.r}


GGUF = Gguf("llama4", routed_layout(LLAMA_LAYOUT.names, LLAMA_LAYOUT.globals_), gguf_spec, gguf_metadata)
RECORD = Record("llama4_text", "Llama4ForCausalLM", spec, LLAMA4, config, GGUF, lora_router="router", config_alone=True)

__all__ = ["RECORD"]
