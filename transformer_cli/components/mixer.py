"""What the mixers other than attention share (short_conv.py, mamba2.py): a recurrence or a convolution over the
columns, causal, with a fixed decoding state per sequence and nothing cached per token."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..spec.choices import ATTENTIONS
from ..spec.definition import Spec
from .base import Component, GgmlCache


class RecurrentMixer(Component):
    """A block's mixer that reads earlier columns through a state: no keys or values per token, no queries."""

    tensor_split_refusal: str | None = None  # (its rows split over devices as a feedforward's)

    @staticmethod
    def check_keys(spec: Spec, data: dict[str, Any], source: str) -> None:
        """Its keys' checks are spec/validate_mixers.py's."""

    def cache_per_token(self, size: int, scale: int) -> int:
        return 0

    def device_cache_per_token(self, size: int, scale: int, tensor: int) -> int:
        return 0

    def normalised(self) -> str | None:
        return f"{self.spec.attention}: a mixer without queries or keys"

    def causal(self) -> bool:
        return True


@ATTENTIONS.register("none")
class NoMixer(RecurrentMixer):
    """No mixer: the block is its feedforward alone (Nemotron-H's MLP and MoE blocks), without the first norm
    (norm.py); each column alone, nothing kept for decoding."""

    def prepare(self, get: Any) -> None:
        return None

    def mix(self, model: Any, i: int, w: Any, X: np.ndarray, *args: Any, **kwargs: Any) -> np.ndarray:
        return np.zeros_like(X)

    def cache(self, b: int, n: int, dtype: np.dtype) -> None:
        return None

    def ggml_cache(self) -> GgmlCache | None:
        return GgmlCache()

    def causal(self) -> bool:
        return False

    def reach(self) -> int | None:
        return 0

    def held_per_token(self) -> int:
        return 0

    def saved_bytes(self, keys: int, s: int, fused: bool, needed: Any = (True,) * 3, frozen: bool = False) -> int:
        return 0

    def transient_bytes(self, b: int, n: int, keys: int, s: int, fused: bool) -> int:
        return 0


__all__ = ["NoMixer", "RecurrentMixer"]
