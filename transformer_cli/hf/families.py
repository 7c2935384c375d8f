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
from .deepseek import deepseek_v2, deepseek_v3
from .gemma import gemma, gemma2, gemma3_text
from .moe_families import gpt_oss, phimoe, qwen2_moe, qwen3_moe

FAMILIES: dict[str, tuple[str, Callable[[Keys], dict[str, Any]]]] = {
    "gemma": ("GemmaForCausalLM", gemma),
    "qwen2_moe": ("Qwen2MoeForCausalLM", qwen2_moe),
    "qwen3_moe": ("Qwen3MoeForCausalLM", qwen3_moe),
    "phimoe": ("PhimoeForCausalLM", phimoe),
    "gpt_oss": ("GptOssForCausalLM", gpt_oss),
    "deepseek_v2": ("DeepseekV2ForCausalLM", deepseek_v2),
    "deepseek_v3": ("DeepseekV3ForCausalLM", deepseek_v3),
    "gemma2": ("Gemma2ForCausalLM", gemma2),
    "gemma3_text": ("Gemma3ForCausalLM", gemma3_text),
}
FAMILIES |= {kind: (record.hf_class, record.spec) for kind, record in RECORDS.items()}  # (families/)

__all__ = ["FAMILIES"]
