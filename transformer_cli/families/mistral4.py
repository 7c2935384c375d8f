"""Mistral 4 (Mistral4ForCausalLM, Mistral Small 4's text model, as its config class names its checkpoint):
DeepSeek-V3's latent attention (deepseek.py) with Llama 4's query scaling (rope_query_beta from rope_parameters'
llama_4_scaling_beta, as Ministral 3), YaRN by default; every layer from first_k_dense_replace on routed by a
softmax over E (groups by their best two), the chosen renormalised and scaled, a shared expert beside; its experts
stacked as stored, gate and up in one (E, 2r, d). rope_parameters' partial_rotary_factor is qk_rope_head_dim's
share of the head. Its GGUF file (mistral4) is DeepSeek's (deepseek2's reader and names) with the query scaling as
attention.temperature_scale and temperature_length, which llama.cpp's deepseek2 graph applies; the converter, whose
only route is Mistral 3's multimodal class, drops them, and tfm writes them."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .deepseek import config as deepseek_config
from .deepseek import latent_model, router_groups, router_scale
from .deepseek_gguf import JOINED, LAYOUT, gguf_metadata, gguf_spec
from .expert_checkpoints import MISTRAL4
from .keys import Keys
from .parts import default_rope
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: 128 experts of 2,048, 4 chosen, one shared, no dense layer)."""
    nope, rotated = c.count("qk_nope_head_dim", 64), c.count("qk_rope_head_dim", 64)
    default = {
        "rope_type": "yarn",
        "rope_theta": 10000.0,
        "factor": 128.0,
        "original_max_position_embeddings": 8192,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "mscale_all_dim": 1.0,
        "mscale": 1.0,
        "llama_4_scaling_beta": 0.1,
    }
    c = default_rope(c, default, "5.24's Mistral4Config sets its YaRN when no rope_parameters")
    p = c.nested("rope_parameters") or c.nested("rope_scaling") or Keys({}, c.source, "rope_parameters.")
    share = p.fraction("partial_rotary_factor", rotated / (nope + rotated))
    if abs(share - rotated / (nope + rotated)) > 1e-12:
        raise p.refuse("partial_rotary_factor", share, f"Mistral 4 turns qk_rope_head_dim = {rotated} of each head")
    rotary = {k: v for k, v in p.data.items() if k not in ("partial_rotary_factor", "llama_4_scaling_beta")}
    keys = Keys(c.data | {"rope_parameters": rotary, "rope_scaling": None}, c.source, notes=c.notes)
    defaults = {"kv_lora_rank": 256, "v_head_dim": 128, "qk_nope_head_dim": nope, "num_experts_per_tok": 4}
    keys = Keys(defaults | keys.data, c.source, notes=c.notes)
    spec = latent_model(
        keys,
        q_rank=1024,
        E=128,
        shared=1,
        size=2048,
        dense=0,
        max_positions=1048576,
        interleaved=c.flag("rope_interleave", True),
    )
    if p.has("llama_4_scaling_beta"):
        original = p.count("original_max_position_embeddings")
        spec |= {"rope_query_beta": p.number("llama_4_scaling_beta"), "rope_query_len": original}
    if "E" not in spec:
        return spec
    router = {"router_renorm": c.flag("norm_topk_prob", True)}
    return spec | router | router_groups(c, spec, 1, 1, "top2") | router_scale(c, 1.0)


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Mistral 4's config.json (DeepSeek's keys; its rotary with the query scaling)."""
    out = deepseek_config(spec)
    for key in ("scoring_func", "topk_method"):
        out.pop(key, None)
    rotary = out.pop("rope_scaling", None) or {"rope_type": "default"}
    rotary |= {"rope_theta": out.pop("rope_theta")}
    if spec.rope_query_beta is not None:
        rotary |= {
            "llama_4_scaling_beta": spec.rope_query_beta,
            "original_max_position_embeddings": spec.rope_query_len,
        }
    return out | {"rope_parameters": rotary, "rope_interleave": spec.rope_pairing == "interleaved"}


GGUF = Gguf("mistral4", LAYOUT, gguf_spec, gguf_metadata, base="latent", joined=JOINED)
RECORD = Record("mistral4", "Mistral4ForCausalLM", spec, MISTRAL4, config, GGUF, config_alone=True)

__all__ = ["RECORD"]
