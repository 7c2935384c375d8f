"""GGUF architectures -> tfm specs, and where each tfm tensor is in the file, as llama.cpp's convert_hf_to_gguf.py
writes them: one entry per `general.architecture`, made from the first family record written to it (families/: its
`{arch}.*` keys read as the Hugging Face families read config.json, one tensor layout, and the converter's changes
to undo, such as the Q and K rows it permutes for llama.cpp's interleaved rotary or Gemma's norms stored as 1 + w).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..families import GGUF_OF, RECORDS
from ..families.keys import Keys
from ..families.record import Gguf
from .base import Arch, latent, llama, proportional, sizes
from .header import Header
from .others import phi3

# the shared readers a family's GGUF reader starts from: LLaMA's spec, Phi-3's (PhiMoE's starts from it too), the
# sizes every architecture reads alike, the rotary scaling of latent attention's heads (a reader that reads tensors
# is one of these: tensors are read in gguf/ only), or none (a family that reads every key itself)
BASES: dict[str, Callable[[Keys, Header], dict[str, Any]]] = {
    "llama_like": llama,
    "phi3_like": phi3,
    "sizes": sizes,
    "latent": latent,
    "proportional": proportional,
    "none": lambda c, header: {},
}


def _arch(gguf: Gguf) -> Arch:
    """A family record's architecture: its reader applied to the spec its base reader makes."""
    base = BASES[gguf.base]
    return Arch(
        lambda c, header: gguf.spec(c, header, base(c, header)),
        gguf.layout,
        dict(gguf.transforms),
        experts=gguf.experts,
        skipped=gguf.skipped,
        alternatives=gguf.alternatives,
        redo=dict(gguf.redo),
        joined=dict(gguf.joined),
        in_metadata=dict(gguf.in_metadata),
    )


ARCHITECTURES: dict[str, Arch] = {arch: _arch(gguf) for arch, gguf in GGUF_OF.items()}

# a Hugging Face model_type's architecture, and the inverse: the model_type each architecture's files come from (the
# first of those written to it: llama's files are llama's, also Mistral's and Mixtral's; a record's Gguf.model_type
# may choose another by the spec, gguf/hf_config.py)
ARCH_OF = {kind: record.gguf.arch for kind, record in RECORDS.items() if record.gguf and not record.gguf.read_only}
MODEL_TYPE: dict[str, str] = {}
for _kind, _arch_name in ARCH_OF.items():
    MODEL_TYPE.setdefault(_arch_name, _kind)
    for _also in RECORDS[_kind].gguf_also:  # (Nemotron-H's files with experts: nemotron_h_moe)
        MODEL_TYPE.setdefault(_also.arch, _kind)

__all__ = ["ARCHITECTURES", "ARCH_OF", "MODEL_TYPE", "Arch"]
