"""GGUF architectures -> tfm specs, and where each tfm tensor is in the file, as llama.cpp's convert_hf_to_gguf.py
writes them: one entry per `general.architecture` (its `{arch}.*` keys read as the Hugging Face families read
config.json), one tensor layout, and the converter's changes to undo (the Q and K rows it permutes for llama.cpp's
interleaved rotary, Gemma's norms stored as 1 + w). A new architecture is one function and one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..families import GGUF_ARCHS, RECORDS
from ..families.gguf_layout import LLAMA_EXPERTS, LLAMA_LAYOUT, LLAMA_PERMUTED, LLAMA_REDO
from ..families.keys import Keys
from ..families.record import Gguf
from .base import Arch, latent, llama, sizes
from .bert import BERT
from .header import Header
from .llama_likes import OLMO2
from .others import FALCON, PHI3, phi3
from .t5 import T5

# the shared readers a family's GGUF reader starts from: LLaMA's spec, the sizes every architecture reads alike,
# Phi-3's spec, or the rotary scaling of latent attention's heads (a reader that reads tensors is one of these)
BASES: dict[str, Callable[[Keys, Header], dict[str, Any]]] = {
    "llama": llama,
    "sizes": sizes,
    "phi3_like": phi3,
    "latent": latent,
}


def _arch(gguf: Gguf) -> Arch:
    """A family record's architecture: its reader applied to the spec its base reader makes."""
    base = BASES[gguf.base]
    return Arch(
        lambda c, header: gguf.spec(c, header, base(c, header)),
        gguf.layout,
        dict(gguf.transforms),
        skipped=gguf.skipped,
        redo=dict(gguf.redo),
        joined=dict(gguf.joined),
    )


ARCHITECTURES: dict[str, Arch] = {
    # (Mixtral's files: with experts)
    "llama": Arch(llama, LLAMA_LAYOUT, LLAMA_PERMUTED, experts=LLAMA_EXPERTS, redo=LLAMA_REDO),
    "qwen2": Arch(llama, LLAMA_LAYOUT),  # llama.cpp turns Qwen's halves as they are (NEOX rope): no permutation
    "qwen3": Arch(llama, LLAMA_LAYOUT),
    "phi3": PHI3,
    "falcon": FALCON,
    "olmo2": OLMO2,
    "bert": BERT,
    "t5": T5,
} | {arch: _arch(record.gguf) for arch, record in GGUF_ARCHS.items() if record.gguf is not None}  # (families/)

# a Hugging Face model_type's architecture, and the inverse: the model_type each architecture's files come from (the
# first of those written to it: llama's files are llama's, also Mistral's and Mixtral's)
ARCH_OF = {
    "llama": "llama",
    "mistral": "llama",
    "mixtral": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "phi3": "phi3",
    "falcon": "falcon",
    "olmo2": "olmo2",
    "t5": "t5",
    "mt5": "t5",
}
ARCH_OF |= {kind: record.gguf.arch for kind, record in RECORDS.items() if record.gguf is not None}
MODEL_TYPE: dict[str, str] = {}
for _kind, _arch_name in ARCH_OF.items():
    MODEL_TYPE.setdefault(_arch_name, _kind)

__all__ = ["ARCHITECTURES", "ARCH_OF", "MODEL_TYPE", "Arch"]
