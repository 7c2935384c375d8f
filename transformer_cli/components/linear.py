"""The linear modules LoRA may target, as a checkpoint names them (analysis/lora.py counts their adapters; a Hugging
Face family's are hf/lora_modules.py's, a tfm spec's are its own projections), and which of tfm's tensors are linear
at all: not a lookup table (embeddings, learned positions, relative-position biases), nor the output head."""

from __future__ import annotations

from dataclasses import dataclass

_LOOKUPS = ("embedding.E", "encoder_embedding.E", "embedding.T", "per_layer.E", "head.W")  # lookups, the head
_POSITIONS = ("positional.", "encoder_positional.")  # learned positions and relative-position biases: lookups


@dataclass(frozen=True)
class Module:
    """One linear module LoRA may target: its name in the checkpoint (without .weight), in and out features."""

    name: str
    features_in: int
    features_out: int
    tfm: tuple[str, ...] = ()  # the tfm tensors it holds (a fused projection: several) [default: (name,)]
    experts: int = 1  # a stack of experts' parameters: A and B for each
    rank_factor: int = 1  # the rank of its adapter, in r (a fused stack of two: 2)
    aliases: tuple[str, ...] = ()  # the names a target list gives it by (peft's, all of them), if not its own
    wrapped: bool = False  # a parameter peft wraps: its weight merged with B A for each forward, no A output kept

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def columns(self) -> int:
        """The columns of its A and rows of its B, in r: one adapter's rank for each expert."""
        return self.rank_factor * self.experts

    def matched(self, names: list[str]) -> bool:
        if self.aliases:
            return any(alias in names for alias in self.aliases)
        return any(self.name == t or self.name.endswith("." + t) for t in names)


def linear(name: str) -> bool:
    """Whether a tfm tensor is (in) a linear module: not a lookup table, nor the output head."""
    return name not in _LOOKUPS and not name.startswith(_POSITIONS)


__all__ = ["Module", "linear"]
