"""Youtu-LLM (YoutuForCausalLM, Tencent): DeepSeek-V3's latent attention (deepseek.py) in every layer of a dense
LLaMA block, rotary on interleaved pairs by default, a tied head. YoutuConfig drops DeepSeek's expert keys: a file
that keeps them has them stored and never read, which tfm follows and says. A head_dim other than
qk_rope_head_dim sizes transformers' rotary apart from the heads (its forward fails): refused. Its GGUF file is
DeepSeek's (deepseek2, the converter's DeepseekV2Model): it reads back as a dense DeepSeek-V2, the same model."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .deepseek import GGUF, latent_model
from .deepseek import config as deepseek_config
from .expert_checkpoints import DEEPSEEK
from .keys import Keys
from .record import Record

_EXPERT_KEYS: tuple[str, ...] = ("n_routed_experts", "num_experts_per_tok", "moe_intermediate_size")
_EXPERT_KEYS += ("n_shared_experts", "first_k_dense_replace", "n_group", "topk_group", "routed_scaling_factor")
_EXPERT_KEYS += ("norm_topk_prob",)


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (defaults: queries through a rank of 1,536, eps 1e-6, a tied head)."""
    for key in _EXPERT_KEYS:
        c.ignored(key, "5.24's YoutuConfig has no experts")
    rotated = c.count("qk_rope_head_dim", 64)
    if c.has("head_dim") and c.data["head_dim"] != rotated:
        raise c.refuse("head_dim", c.data["head_dim"], f"transformers' Youtu turns qk_rope_head_dim = {rotated}")
    N = c.count("num_hidden_layers")
    dense = {k: v for k, v in c.data.items() if k not in _EXPERT_KEYS} | {"first_k_dense_replace": N}
    keys = Keys(dense | {"tie_word_embeddings": c.flag("tie_word_embeddings", True)}, c.source, notes=c.notes)
    interleaved = c.flag("rope_interleave", True)
    return latent_model(keys, 1536, 0, 0, 0, N, 131072, interleaved)


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Youtu's config.json: DeepSeek's latent keys, none of its experts'."""
    routing = ("topk_method", "scoring_func")
    out = {k: v for k, v in deepseek_config(spec).items() if k not in _EXPERT_KEYS + routing}
    return out | {"rope_interleave": spec.rope_pairing == "interleaved"}


RECORD = Record("youtu", "YoutuForCausalLM", spec, DEEPSEEK, config, GGUF, config_alone=True)

__all__ = ["RECORD"]
