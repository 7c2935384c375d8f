"""Marian (MarianMTModel: the opus-mt translation models): BART's post-norm stacks (bart.py: one embedding shared by
both stacks and tied to the head, biases everywhere) without a norm of the embedded columns, the embedded columns
times sqrt(d) with scale_embedding, and a table of sinusoids (sin in the first d/2 columns, cos in the next) in
place of learned positions, from position 0. transformers holds the table as a frozen parameter (tfm's learned
positions P, counted as it counts them) and leaves it out of its files: tfm makes it where a file has none.
share_encoder_decoder_embeddings false (a decoder embedding of its own) is refused: tfm's stacks share one."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..spec.definition import Spec
from .bart import BART, SKIPPED, bart, without_embedding_norm
from .keys import Keys
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    if not c.flag("share_encoder_decoder_embeddings", True):
        raise c.refuse("share_encoder_decoder_embeddings", False, "tfm's encoder and decoder share one embedding")
    return {k: v for k, v in bart(c).items() if k not in ("position_offset", "embed_norm")}


def sinusoids(spec: Spec) -> np.ndarray:
    """MarianSinusoidalPositionalEmbedding's table as its file would hold it, (max_len, d), in float64."""
    n, d = spec.max_len or 0, spec.d
    j = np.arange(d)
    angle = np.arange(n)[:, None] / np.power(10000.0, 2 * (j // 2) / d)[None, :]
    half = d // 2 + d % 2
    return np.concatenate([np.sin(angle[:, 0::2]), np.cos(angle[:, 1::2])], axis=1)[:, : half + d // 2]


_TABLES = ("model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight")
MARIAN = without_embedding_norm(BART, computed=dict.fromkeys(_TABLES, sinusoids))
RECORD = Record("marian", "MarianMTModel", spec, MARIAN, skipped=SKIPPED)

__all__ = ["RECORD"]
