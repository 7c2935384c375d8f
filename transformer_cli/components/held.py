"""What the formats and the cost model share about weights as a file stores them: which tensors quantisation packs,
the bytes an element of the rest, and `Held`, the bytes each tensor of a file takes (analysis/quantized.py prices a
type's formula; a reader of a quantised checkpoint or a GGUF file reports what it holds)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

KEPT = 2  # bytes an element of what stays unquantised (bfloat16)


def quantised(name: str, shape: tuple[int, ...]) -> bool:
    """Whether a tensor is one of the blocks' matrices that quantisation packs."""
    in_block, leaf = name.startswith(("blocks.", "encoder.")), name.rsplit(".", 1)[-1]
    return in_block and len(shape) >= 2 and leaf not in ("router", "rel_bias") and not leaf.startswith("b")


@dataclass(frozen=True)
class Held:
    """Weights as a file holds them (a quantised checkpoint, a GGUF file of mixed types): the bytes of each of
    tfm's tensors by full name ('blocks.3.ff.W1'), its scales, zero points and metadata included. The plan
    prices these in place of a type's formula."""

    label: str  # "gptq int4, groups of 128", "GGUF Q4_K, Q6_K"
    tensors: Mapping[str, int]
    dtype: str | None = None  # a type asked for (a llama.cpp mix: "q4_k_m") rather than a file's own
    # the vocabulary matrices a model not all resident keeps as stored, rows dequantised as used (a GGUF file's)
    rows: frozenset[str] = frozenset()

    def total(self) -> int:
        return sum(self.tensors.values())


__all__ = ["KEPT", "Held", "quantised"]
