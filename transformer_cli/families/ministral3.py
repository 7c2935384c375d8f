"""Ministral 3 (Ministral3ForCausalLM, the text model of Mistral's Ministral 3): Mistral's
block with heads of head_dim (128), YaRN by default (base 1e6, factor 16 over 16,384 positions), and Llama 4's
attention scaling: each query, after its rotation, times 1 + beta ln(1 + floor(t / L)) at position t
(rope_parameters' llama_4_scaling_beta and original_max_position_embeddings; transformers' forward fails without
them, so tfm asks for them). A window, where sliding_window says, on every layer: transformers 5.24 stores
layer_types and never reads it, nor a flat rope_theta beside its default rope_parameters; tfm follows it and says
so. Its GGUF file (mistral3) is LLaMA's, Q's and K's rows permuted, with YaRN's mscale_all_dim as
rope.scaling.yarn_log_multiplier (llama.cpp takes mscale as 1) and the query scaling's beta as
attention.temperature_scale over YaRN's original context; it holds no window."""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..spec.definition import Spec
from .checkpoints import LLAMA
from .config_keys import shared_keys
from .gguf_layout import LLAMA_LAYOUT, LLAMA_PERMUTED, LLAMA_REDO
from .keys import Keys
from .parts import default_rope, llama_like, window_key
from .record import Gguf, Record

DEFAULT_ROPE = {
    "rope_type": "yarn",
    "rope_theta": 1000000.0,
    "factor": 16.0,
    "original_max_position_embeddings": 16384,
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "mscale_all_dim": 1.0,
    "mscale": 1.0,
    "llama_4_scaling_beta": 0.1,
}


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    c.ignored("layer_types", "5.24's Ministral3Model gives every layer the same attention")
    c = default_rope(c, DEFAULT_ROPE, "5.24's Ministral3Config sets its YaRN of base 1e6 when no rope_parameters")
    p = c.nested("rope_parameters") or c.nested("rope_scaling") or Keys({}, c.source, "rope_parameters.")
    head = 128 if "head_dim" not in c.data else None  # (null: d / H)
    plain = llama_like(c, c.count("num_key_value_heads", 8), head, 1e-5, False, 262144)
    scaling = {
        "rope_query_beta": p.number("llama_4_scaling_beta"),
        "rope_query_len": p.count("original_max_position_embeddings"),
    }
    return plain | scaling | window_key(c.nullable_count("sliding_window", None))


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Ministral 3's config.json (its rotary as rope_parameters, with Llama 4's scaling)."""
    out = shared_keys(spec)
    rotary = {"rope_type": "default", "rope_theta": out.pop("rope_theta")} | out.pop("rope_scaling", {})
    original = rotary.get("original_max_position_embeddings", spec.rope_query_len)
    if original != spec.rope_query_len:
        why = f"YaRN's original context {original} and the query scaling's {spec.rope_query_len} are one key there"
        raise SpecError(f"{spec.label}: Ministral 3's config.json cannot hold it: {why}")
    rotary |= {"llama_4_scaling_beta": spec.rope_query_beta, "original_max_position_embeddings": spec.rope_query_len}
    if spec.rope_mscale or spec.rope_mscale_all_dim:  # (YaRN's: its attention factor their ratio)
        rotary |= {"mscale": spec.rope_mscale, "mscale_all_dim": spec.rope_mscale_all_dim}
    return out | {"rope_parameters": rotary, "sliding_window": spec.window, "hidden_act": "silu"}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's reader; YaRN's mscale_all_dim (mscale 1, as llama.cpp takes it), the queries' scaling."""
    if c.has("rope.scaling.yarn_log_multiplier"):
        spec |= {"rope_mscale": 1.0, "rope_mscale_all_dim": c.number("rope.scaling.yarn_log_multiplier")}
    if c.has("attention.temperature_scale"):
        original = c.count("rope.scaling.original_context_length", c.count("context_length", None))
        beta, length = c.number("attention.temperature_scale"), original  # (llama.cpp's n_ctx_orig_yarn)
        spec |= {"rope_query_beta": beta, "rope_query_len": length}
    return spec


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if spec.rope_query_beta:  # over YaRN's original context, which llama.cpp reads without YaRN too
        out |= {"attention.temperature_scale": float(spec.rope_query_beta)}
        out["rope.scaling.original_context_length"] = spec.rope_query_len
    if spec.rope_mscale_all_dim:
        out["rope.scaling.yarn_log_multiplier"] = float(spec.rope_mscale_all_dim)
    return out


GGUF = Gguf("mistral3", LLAMA_LAYOUT, gguf_spec, gguf_metadata, transforms=LLAMA_PERMUTED, redo=LLAMA_REDO)
RECORD = Record("ministral3", "Ministral3ForCausalLM", spec, LLAMA, config, GGUF, config_alone=True)

__all__ = ["RECORD"]
