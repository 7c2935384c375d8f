"""ELECTRA (ElectraModel, google/electra-*-discriminator and -generator): BERT's post-norm block under BERT's names,
its whole embedding (words, positions, token types and their norm) at embedding_size, then projected up to
hidden_size by embeddings_project (a bias too) where the two differ; no pooler. Its ...ForPreTraining and
...ForMaskedLM files (an electra. prefix; the discriminator's and generator's heads) are read too, the heads
skipped: tfm runs the base model."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .bert import BERT_SKIPPED, bert, encoder_keys
from .checkpoints import BERT
from .keys import Keys
from .layout import Family
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (ElectraConfig's defaults: a 128-wide embedding below a 256-wide model)."""
    base = bert(c) | {"pooler": False}
    d, e = base["d"], c.count("embedding_size", 128)
    return base if e == d else base | {"embed_dim": e, "embed_project": True}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> ElectraConfig's config.json."""
    positions = {"max_position_embeddings": spec.max_len, "type_vocab_size": spec.type_vocab or 1}
    return encoder_keys(spec) | {"embedding_size": spec.input_width, "is_decoder": spec.mask == "causal"} | positions


ELECTRA = Family(
    BERT.block,
    BERT.names,
    {k: v for k, v in BERT.globals_.items() if not k.startswith("pooler")}
    | {"embedding.W_in": "embeddings_project.weight", "embedding.b_in": "embeddings_project.bias"},
)
RECORD = Record(
    "electra",
    "ElectraModel",
    spec,
    ELECTRA,
    config,
    aliases=((r"^electra\.", ""),),
    skipped=(*BERT_SKIPPED, r"^discriminator_predictions\.", r"^generator_(predictions|lm_head)\."),
    config_alone=True,
)

__all__ = ["RECORD"]
