"""OLMo 1 (OlmoForCausalLM): LLaMA's block with LayerNorms of no parameters (norm_affine: false). Its GGUF file
(olmo) is LLaMA's names with no norm tensors, Q's and K's rows permuted, the norms' eps (1e-5) and clip_qkv as
attention.clamp_kqv written by the converter's OlmoModel.

OLMo 2 (Olmo2ForCausalLM): LLaMA's attention and MLP, each sublayer's output normalised before its residual (no
norm of its input), RMSNorms of all query and all key projections together (widths Hm and Gm), a final norm. Its
GGUF file (olmo2) holds the output norms as post_attention_norm and post_ffw_norm; llama.cpp turns halves, so the
converter does not permute.

OLMo 3 (Olmo3ForCausalLM): OLMo 2's blocks, three sliding layers to one full by default (layer_types, a window of
sliding_window), the full layers' rotary scaled (YaRN in the published 32B) and the sliding layers' unscaled with
their own base. Its GGUF file is OLMo 2's with the window, a flag per layer (attention.sliding_window_pattern) and
the sliding layers' base (rope.freq_base_swa), which llama.cpp's olmo2 graph does not read: it turns every layer by
rope.freq_base (the published models' two bases are equal)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import LLAMA, OLMO2
from .config_keys import layer_types, shared_keys
from .gguf_keys import sliding_layers, sliding_pattern
from .gguf_layout import LLAMA_LAYOUT, LLAMA_PERMUTED, LLAMA_REDO
from .keys import Keys
from .layout import Family
from .parts import llama_like, sliding_rope, typed_layers, typed_ropes, without_rope
from .record import Gguf, Record

_NORMS = {"norm": "output", "qk_norm": True, "qk_norm_over": "all"}


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    spec = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 2048)
    return spec | {"attention_bias": c.flag("attention_bias", False)} | _NORMS


def config(spec: Spec) -> dict[str, Any]:
    """spec -> OLMo 2's config.json."""
    return shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": "silu"}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's sizes and rotary, no norm of a sublayer's input but one of its output, RMSNorms of all query and all
    key projections together (widths Hm and Gm); OLMo 3's sliding layers with their own base, unscaled."""
    spec |= _NORMS | sliding_layers(c, spec["N"], 4)
    return sliding_rope(spec, {"rope_theta": c.number("rope.freq_base_swa", spec["rope_theta"])})


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> OLMo 3's keys beyond the shared ones: the layers' flags, the sliding layers' base."""
    if spec.window is None:
        return {}
    return sliding_pattern(spec) | {"rope.freq_base_swa": float(spec.rope_local_theta or spec.rope_theta)}


def olmo(c: Keys) -> dict[str, Any]:
    """OlmoForCausalLM (OLMo 1): LLaMA's block with LayerNorms of no gain or bias (eps 1e-5, fixed), biases with
    attention_bias; clip_qkv (OLMo-7B-0424's 8) clamps q, k and v after their projections (qkv_clip)."""
    plain = llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 2048)
    norms = {"norm_type": "layernorm", "norm_affine": False, "norm_eps": 1e-5}
    clip = {"qkv_clip": c.number("clip_qkv")} if c.has("clip_qkv") else {}
    return plain | norms | clip | {"attention_bias": c.flag("attention_bias", False)}


def olmo_config(spec: Spec) -> dict[str, Any]:
    """spec -> OLMo 1's config.json."""
    return shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": "silu", "clip_qkv": spec.qkv_clip}


def olmo_gguf(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's sizes and rotary; LayerNorms of no parameters (llama.cpp's olmo graph), attention.clamp_kqv."""
    norms = {"norm_type": "layernorm", "norm_affine": False, "norm_eps": c.number("attention.layer_norm_epsilon")}
    return spec | norms | ({"qkv_clip": c.number("attention.clamp_kqv")} if c.has("attention.clamp_kqv") else {})


def olmo_metadata(spec: Spec) -> dict[str, Any]:
    return {"attention.clamp_kqv": float(spec.qkv_clip)} if spec.qkv_clip is not None else {}


OLMO_GGUF = Gguf("olmo", LLAMA_LAYOUT, olmo_gguf, olmo_metadata, transforms=LLAMA_PERMUTED, redo=LLAMA_REDO)
OLMO3_THETA = 500000.0  # Olmo3Config.default_theta


def olmo3(c: Keys) -> dict[str, Any]:
    """config.json -> spec. A flat rope_theta turns the full layers alone: Olmo3Config gives the sliding layers its
    default base (500000) then, as transformers 5.24 does; said on stderr when the two differ."""
    N, max_positions = c.count("num_hidden_layers"), c.count("max_position_embeddings", 2048)
    plain = llama_like(
        without_rope(c), c.count("num_key_value_heads", None), None, 1e-5, False, 2048, theta=OLMO3_THETA
    )
    full, local = typed_ropes(c, max_positions, plain["m"], OLMO3_THETA, OLMO3_THETA, OLMO3_THETA)
    if local["rope_theta"] != full["rope_theta"] and c.has("rope_theta") and c.nested("rope_parameters") is None:
        c.notes.append(
            f"{c.source}: key 'rope_theta': {c.number('rope_theta')} turns the full layers only; the sliding layers "
            f"turn by {OLMO3_THETA:g}, as transformers 5.24's Olmo3Config gives them"
        )
    kinds = ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(N)]
    spec = plain | full | {"attention_bias": c.flag("attention_bias", False)} | _NORMS
    return sliding_rope(spec | typed_layers(c, N, c.nullable_count("sliding_window", 4096), kinds), local)


def config3(spec: Spec) -> dict[str, Any]:
    """spec -> OLMo 3's config.json: OLMo 2's keys, the layers' kinds and window, and 5.x's rotary per layer type."""
    out = config(spec)
    full = {"rope_type": "default", "rope_theta": out.pop("rope_theta")} | out.pop("rope_scaling", {})
    local = {"rope_type": "default", "rope_theta": spec.rope_local_theta or spec.rope_theta}
    if spec.window is not None and not spec.attention_layers:  # every layer slides: the stack's rope is the sliding one
        full = local
    rotary = {"rope_parameters": {"full_attention": full, "sliding_attention": local}}
    return out | rotary | {"sliding_window": spec.window, "layer_types": layer_types(spec)}


GGUF_LAYOUT = Family(
    "blk.{i}.",
    {ours: theirs for ours, theirs in LLAMA_LAYOUT.names.items() if not ours.startswith(("norm1", "norm2"))}
    | {"norm1_out.gamma": "post_attention_norm.weight", "norm2_out.gamma": "post_ffw_norm.weight"},
    LLAMA_LAYOUT.globals_,
)
GGUF = Gguf("olmo2", GGUF_LAYOUT, gguf_spec, gguf_metadata, model_type=lambda s: "olmo3" if s.window else "olmo2")
RECORDS = (
    Record("olmo", "OlmoForCausalLM", olmo, LLAMA, olmo_config, OLMO_GGUF, config_alone=True),
    Record("olmo2", "Olmo2ForCausalLM", spec, OLMO2, config, GGUF, config_alone=True),
    Record("olmo3", "Olmo3ForCausalLM", olmo3, OLMO2, config3, GGUF, config_alone=True),
)

__all__ = ["RECORDS"]
