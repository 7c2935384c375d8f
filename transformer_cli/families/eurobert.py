"""EuroBERT (EuroBertModel): LLaMA's block (RMSNorms, grouped-query attention, rotary on halves, SwiGLU, a final
norm) with every token attending to every other (no causal mask), run as tfm runs BERT: the base model, no head.
Its ...ForMaskedLM files (a model. prefix, an lm_head) are read too, the head skipped."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import _llama_names
from .config_keys import shared_keys
from .keys import Keys
from .layout import Family, norm_names
from .parts import llama_like
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (LlamaConfig's defaults; an untied head it does not build)."""
    plain = llama_like(c, c.nullable_count("num_key_value_heads", None), None, 1e-5, False, 8192)
    biases = {"attention_bias": c.flag("attention_bias", False), "ff_bias": c.flag("mlp_bias", False)}
    return plain | biases | {"mask": "none", "head": False, "tie_embeddings": False}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> EuroBERT's config.json."""
    return shared_keys(spec) | {"attention_bias": spec.attention_bias, "mlp_bias": spec.ff_bias, "hidden_act": "silu"}


EUROBERT = Family(
    "layers.{i}.",
    _llama_names(),
    {"embedding.E": "embed_tokens.weight"} | norm_names("final_norm", "norm"),
)
RECORD = Record(
    "eurobert",
    "EuroBertModel",
    spec,
    EUROBERT,
    config,
    aliases=((r"^model\.", ""),),
    skipped=(r"^lm_head\.",),
    config_alone=True,
)

__all__ = ["RECORD"]
