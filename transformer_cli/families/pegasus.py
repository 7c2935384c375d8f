"""Pegasus (PegasusForConditionalGeneration): mBART's pre-norm stacks (bart.py: one embedding shared by both
stacks and tied to the head, a final norm in each, biases everywhere) without a norm of the embedded columns, and
a table of sinusoids (sin in the first d/2 columns, cos in the next) in place of BART's learned positions, from
position 0: transformers holds it as a frozen parameter and saves it, so tfm reads it as learned positions P (the
count is transformers'). Its scale_embedding (sqrt(d)) is off by default."""

from __future__ import annotations

from typing import Any

from .bart import MBART, SKIPPED, bart, without_embedding_norm
from .keys import Keys
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    base = {k: v for k, v in bart(c).items() if k not in ("position_offset", "embed_norm")}
    return base | {"norm": "pre"}


PEGASUS = without_embedding_norm(MBART)
RECORD = Record("pegasus", "PegasusForConditionalGeneration", spec, PEGASUS, skipped=SKIPPED)

__all__ = ["RECORD"]
