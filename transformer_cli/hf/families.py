"""One mapping per Hugging Face family: its config keys, with the defaults transformers 5.24 gives them, onto
tfm's spec keys (docs/families.md lists them; each default is the family's `configuration_*.py`).

A null is the default, except where transformers types the key `int | None` and gives None a meaning of its own
(Qwen2's `num_key_value_heads: null` is H where an absent one is 32; Mistral's `sliding_window: null` is no window).
Sizes (hidden size, layers, heads, vocabulary, feedforward) are required: transformers would fill them in
from the 7B model its class describes, which a config.json without them never means.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..families import RECORDS
from ..families.keys import Keys

# each model_type's transformers class and its config.json read as a spec (families/: one record a family)
FAMILIES: dict[str, tuple[str, Callable[[Keys], dict[str, Any]]]] = {
    kind: (record.hf_class, record.spec) for kind, record in RECORDS.items()
}

__all__ = ["FAMILIES"]
