"""ALBERT (AlbertModel, albert-base-v2 .. albert-xxlarge-v2): BERT's post-norm block under its own names, its whole
embedding (words, positions, token types and their norm) at embedding_size, projected up to hidden_size by the
encoder's embedding_hidden_mapping_in (always, with a bias), and its blocks sharing weights: the
num_hidden_layers blocks in num_hidden_groups runs of consecutive blocks, each run one group's layer (tfm's
block_groups; every published ALBERT has one group). Its ...ForMaskedLM and ...ForPreTraining files (an albert.
prefix, their heads) are read too, the heads skipped; the pooler is optional, as BERT's."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .bert import BERT_SKIPPED, bert, encoder_keys
from .checkpoints import _plain_block_names
from .keys import Keys
from .layout import Family, norm_names
from .parts import activation
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (AlbertConfig's defaults: gelu_new, one group of layers, an embedding of 128)."""
    inner = c.count("inner_group_num", 1)
    if inner != 1:
        raise c.refuse("inner_group_num", inner, "one layer per group (every published ALBERT's)")
    N, groups = c.count("num_hidden_layers", 12), c.count("num_hidden_groups", 1)
    if groups > N:
        raise c.fail("num_hidden_groups", groups, f"at most num_hidden_layers = {N} (transformers never runs the rest)")
    base = bert(c) | {"activation": activation(c, "hidden_act", "gelu_new")}
    shared = {} if groups == N else {"block_groups": groups}
    return base | {"embed_dim": c.count("embedding_size", 128), "embed_project": True} | shared


def config(spec: Spec) -> dict[str, Any]:
    """spec -> AlbertConfig's config.json."""
    positions = {"max_position_embeddings": spec.max_len, "type_vocab_size": spec.type_vocab or 1}
    groups = {"num_hidden_groups": spec.stored_blocks, "inner_group_num": 1}
    return encoder_keys(spec) | {"embedding_size": spec.input_width} | groups | positions


ALBERT = Family(
    "encoder.albert_layer_groups.{i}.albert_layers.0.",
    _plain_block_names(
        ("attention.query", "attention.key", "attention.value", "attention.dense"),
        ("ffn", "ffn_output"),
        ("attention.LayerNorm", "full_layer_layer_norm"),
    ),
    {
        "embedding.E": "embeddings.word_embeddings.weight",
        "positional.P": "embeddings.position_embeddings.weight",
        "embedding.T": "embeddings.token_type_embeddings.weight",
        "embedding.W_in": "encoder.embedding_hidden_mapping_in.weight",
        "embedding.b_in": "encoder.embedding_hidden_mapping_in.bias",
        "pooler.W": "pooler.weight",
        "pooler.b": "pooler.bias",
    }
    | norm_names("embedding.norm", "embeddings.LayerNorm"),
)
RECORD = Record(
    "albert",
    "AlbertModel",
    spec,
    ALBERT,
    config,
    aliases=((r"^albert\.", ""),),
    skipped=(*BERT_SKIPPED, r"^predictions\.", r"^sop_classifier\."),
    config_alone=True,
    optional=("pooler", False, ("pooler.weight", "pooler.bias")),
)

__all__ = ["RECORD"]
