"""What the mixers other than attention share (short_conv.py, mamba2.py): a recurrence or a convolution over the
columns, causal, with a fixed decoding state per sequence and nothing cached per token."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .base import Component


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


__all__ = ["RecurrentMixer"]
