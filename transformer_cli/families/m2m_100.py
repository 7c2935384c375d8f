"""M2M-100 (M2M100ForConditionalGeneration: Facebook's M2M-100 and NLLB-200): mBART's pre-norm stacks (bart.py:
one embedding shared by both stacks and tied to the head, a final norm in each, biases everywhere) without a norm
of the embedded columns, the embedded columns times sqrt(d) (scale_embedding), ReLU, and fairseq's sinusoids in
place of learned positions: position t at row t + pad_token_id + 1 of a table without parameters (tfm's
sinusoidal_fairseq). Like RoBERTa's, its positions skip padding: tfm runs unpadded sequences (pad_id)."""

from __future__ import annotations

from typing import Any

from .bart import MBART, SKIPPED, bart, without_embedding_norm
from .keys import Keys
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    defaults = {"scale_embedding": True, "activation_function": "relu"}
    base = bart(Keys(defaults | c.data, c.source, notes=c.notes))
    pad = c.index("pad_token_id", 1)
    drop = ("max_len", "embed_norm")
    out = {k: v for k, v in base.items() if k not in drop}
    return out | {"norm": "pre", "positional": "sinusoidal_fairseq", "position_offset": pad + 1, "pad_id": pad}


M2M_100 = without_embedding_norm(MBART, positions=False)
RECORD = Record("m2m_100", "M2M100ForConditionalGeneration", spec, M2M_100, skipped=SKIPPED)

__all__ = ["RECORD"]
