"""AFMoE (AfmoeForCausalLM, Arcee's Trinity): LLaMA's attention with an RMSNorm of each query and key head and an
output gate (each head's output times sigmoid(gate_proj x) before o_proj: tfm's attn_gate), three sliding layers to
one full (global_attn_every_n_layers) where only the sliding ones turn, even without a sliding layer; Gemma 2's four
norms a block; num_dense_layers dense layers, then routed ones: sigmoid scores, a correction bias to choose (a
frozen parameter, expert_bias, counted as transformers counts it), the chosen renormalised and scaled by
route_scale, shared experts of num_shared_experts x moe_intermediate_size; the embedded columns times sqrt(d) with
mup_enabled.

Its GGUF file (afmoe) holds Gemma 2's four norms, the output gate (attn_gate), the experts stacked with the
correction bias (exp_probs_b), DeepSeek's router keys and the window. What it does not hold is read as llama.cpp's
afmoe graph hard-codes it: three sliding layers in four (no pattern written), the embedding times sqrt(d) (MuP,
whatever mup_enabled said), sigmoid scoring; the chosen weights renormalised, as transformers always does (the
converter writes expert_weights_norm only where config.json has route_norm)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .config_keys import feedforward_kinds, layer_types, shared_keys
from .deepseek import routed_experts
from .deepseek_gguf import SIGMOID, routed_layout, routed_metadata, routed_spec
from .expert_checkpoints import AFMOE
from .gemma import GGUF2_LAYOUT
from .gguf_keys import sliding_kinds, turning, windowed
from .keys import Keys
from .parts import llama_like, typed_layers
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: 64 experts of 1,408, 6 chosen, two shared, one dense layer, a window of 1024)."""
    plain = llama_like(c, c.nullable_count("num_key_value_heads", None), 128, 1e-5, False, 16384)
    N, window = plain["N"], c.nullable_count("sliding_window", 1024)
    every = c.count("global_attn_every_n_layers", 4)
    kinds = c.data.get("layer_types") or [
        "sliding_attention" if (i + 1) % every else "full_attention" for i in range(N)
    ]
    out = plain | {"attention_bias": c.flag("attention_bias", False), "qk_norm": True, "attn_gate": True}
    out |= {"norm": "sandwich"} | typed_layers(c, N, window, kinds)
    turning = ["rope" if kind == "sliding_attention" else "nope" for kind in kinds]
    out |= {"positional_layers": turning} if "nope" in turning else {}
    if c.flag("mup_enabled", False):
        out["embed_scale"] = "sqrt"
    keys = Keys(c.data | {"first_k_dense_replace": c.index("num_dense_layers", 1)}, c.source, notes=c.notes)
    experts = routed_experts(keys, N, 64, 2, 1408, 1, k=6, shared_key="num_shared_experts")
    if not experts:
        return out
    scale = c.number("route_scale", 1.0)
    router = {"router_score": "sigmoid", "router_bias": True, "router_bias_param": True, "router_renorm": True}
    return out | experts | router | ({"router_scale": scale} if scale != 1.0 else {})


def config(spec: Spec) -> dict[str, Any]:
    """spec -> AFMoE's config.json (the layers' kinds as layer_types)."""
    out = shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": "silu"}
    out |= {"sliding_window": spec.window or 1024, "layer_types": layer_types(spec)}
    out |= {"mup_enabled": spec.embed_scale == "sqrt"}
    dense = feedforward_kinds(spec).count("dense")
    out |= {"num_dense_layers": dense}
    if spec.E:
        out |= {"num_experts": spec.E, "num_experts_per_tok": spec.k, "moe_intermediate_size": spec.expert_r}
        out |= {"num_shared_experts": (spec.shared_r or 0) // (spec.expert_r or 1), "route_scale": spec.router_scale}
    return out


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's reader, the per-head norms, the output gate, the four norms, MuP's embedding scale, three sliding
    layers in four (only those turning), DeepSeek's mixture renormalised and scored by sigmoid."""
    N = spec["N"]
    window, kinds = sliding_kinds(c, N, 4) or (0, ["full"] * N)
    out = spec | {"qk_norm": True, "attn_gate": True, "norm": "sandwich", "embed_scale": "sqrt"}
    out |= windowed(window, kinds) | (turning(kinds) if "full" in kinds else {})
    experts = routed_spec(c, header, N, SIGMOID)
    return out | experts | ({"router_renorm": True, "router_bias_param": True} if experts else {})


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    return routed_metadata(spec)


GGUF = Gguf(
    "afmoe",
    routed_layout(GGUF2_LAYOUT.names | {"attention.W_G": "attn_gate.weight"}, GGUF2_LAYOUT.globals_),
    gguf_spec,
    gguf_metadata,
)
_LORA = ("gate_proj", "up_proj", "down_proj", "gate")
RECORD = Record("afmoe", "AfmoeForCausalLM", spec, AFMOE, config, GGUF, lora_stacked=_LORA, config_alone=True)

__all__ = ["RECORD"]
