"""EuroBERT (EuroBertModel): LLaMA's block (RMSNorms, grouped-query attention, rotary on halves, SwiGLU, a final
norm) with every token attending to every other (no causal mask), run as tfm runs BERT: the base model, no head.
Its ...ForMaskedLM files (a model. prefix, an lm_head) are read too, the head skipped. Its GGUF file (eurobert) is
LLaMA's names without a head, attention.causal false."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import _llama_names
from .config_keys import shared_keys
from .gguf_layout import LLAMA_LAYOUT
from .keys import Keys
from .layout import Family, norm_names
from .parts import llama_like
from .record import Gguf, Record


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


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's reader, every token attending to every other, no head."""
    spec = {key: value for key, value in spec.items() if key != "out_bias"}  # (attention_bias: o's too)
    ff_bias = {"ff_bias": "blk.0.ffn_up.bias" in header.tensors}
    return spec | ff_bias | {"mask": "none", "head": False, "tie_embeddings": False}


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    return {"attention.causal": False, "rope.scaling.type": "none"}


GGUF_LAYOUT = Family(
    "blk.{i}.",
    LLAMA_LAYOUT.names,
    {"embedding.E": "token_embd.weight", "final_norm.gamma": "output_norm.weight"},
)
RECORD = Record(
    "eurobert",
    "EuroBertModel",
    spec,
    EUROBERT,
    config,
    Gguf("eurobert", GGUF_LAYOUT, gguf_spec, gguf_metadata),
    aliases=((r"^model\.", ""),),
    skipped=(r"^lm_head\.",),
    config_alone=True,
)

__all__ = ["RECORD"]
