"""GGUF architectures -> tfm specs, and where each tfm tensor is in the file, as llama.cpp's convert_hf_to_gguf.py
writes them: one entry per `general.architecture` (its `{arch}.*` keys read as the Hugging Face families read
config.json), one tensor layout, and the converter's changes to undo (the Q and K rows it permutes for llama.cpp's
interleaved rotary, Gemma's norms stored as 1 + w). A new architecture is one function and one line here.
"""

from __future__ import annotations

from .base import LLAMA_LAYOUT, Arch, llama, permute, unpermute
from .bert import BERT
from .deepseek2 import DEEPSEEK2
from .gemma import GEMMA, GEMMA2, GEMMA3
from .gpt_oss import GPT_OSS
from .layernorm_families import BLOOM, GPTJ, GPTNEOX, PHI2
from .llama_likes import COMMAND_R, OLMO2, STABLELM, granite
from .moe import MIXTRAL, PHIMOE, QWEN2MOE, QWEN3MOE
from .others import FALCON, GPT2, PHI3, STARCODER2
from .t5 import T5

_Q, _K = unpermute("attention.head_count"), unpermute("attention.head_count_kv")
_PERMUTED = {"attn_q.weight": _Q, "attn_k.weight": _K, "attn_q.bias": _Q, "attn_k.bias": _K}  # weights and biases
_Q2, _K2 = permute("attention.head_count"), permute("attention.head_count_kv")
_REDO = {"attn_q.weight": _Q2, "attn_k.weight": _K2, "attn_q.bias": _Q2, "attn_k.bias": _K2}

ARCHITECTURES: dict[str, Arch] = {
    "llama": Arch(llama, LLAMA_LAYOUT, _PERMUTED, experts=MIXTRAL, redo=_REDO),  # (Mixtral's: llama with experts)
    "qwen2": Arch(llama, LLAMA_LAYOUT),  # llama.cpp turns Qwen's halves as they are (NEOX rope): no permutation
    "qwen3": Arch(llama, LLAMA_LAYOUT),
    "qwen2moe": QWEN2MOE,
    "qwen3moe": QWEN3MOE,
    "gemma": GEMMA,
    "gemma2": GEMMA2,
    "gemma3": GEMMA3,
    "phi3": PHI3,
    "phimoe": PHIMOE,
    "starcoder2": STARCODER2,
    "gpt2": GPT2,
    "falcon": FALCON,
    "olmo2": OLMO2,
    "granite": Arch(granite, LLAMA_LAYOUT, _PERMUTED, redo=_REDO),  # (LLaMA's file, permuted, with multipliers)
    "command-r": COMMAND_R,
    "stablelm": STABLELM,
    "bloom": BLOOM,
    "gptneox": GPTNEOX,
    "phi2": PHI2,
    "gpt-oss": GPT_OSS,
    "deepseek2": DEEPSEEK2,
    "bert": BERT,
    "t5": T5,
    "gptj": GPTJ,
}

__all__ = ["ARCHITECTURES", "Arch"]
