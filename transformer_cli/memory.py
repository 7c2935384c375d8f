"""How much memory a forward pass needs, estimated from the spec before anything is allocated.

The estimate is an upper bound of the arrays the NumPy forward pass holds at its peak, so a command can
refuse a size that does not fit instead of being killed by the operating system.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from .errors import TfmError
from .params import count_params
from .spec import Spec

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
CHUNK_BYTES = 64 << 20  # default budget for one chunk of attention scores


def chunk_size(H: int, n_q: int, n_k: int, itemsize: int, chunk_bytes: int) -> int:
    """How many queries of one sequence fit in a chunk of scores (H, chunk, n_k) within chunk_bytes (>= 1)."""
    return max(1, min(n_q, chunk_bytes // max(H * n_k * itemsize, 1)))


class MemoryLimitError(TfmError):
    """The estimated memory of a command exceeds the available memory or --max-memory."""


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes held at the peak of a forward pass over a (b, d, n) input, by part."""

    weights: int  # the weights as loaded (float64) plus their stacked copies in the compute dtype
    activations: int  # the (b, d, n) arrays alive across a block
    attention: int  # Q, K, V, scores and weights, head outputs: the n^2 part
    feedforward: int  # the (b, r, n) hidden layer

    @property
    def total(self) -> int:
        return self.weights + self.activations + max(self.attention, self.feedforward)

    def to_dict(self) -> dict[str, int]:
        return {"weights": self.weights, "activations": self.activations, "attention": self.attention,
                "feedforward": self.feedforward, "total": self.total}  # fmt: skip


def estimate_forward(
    spec: Spec, b: int, n: int, dtype: str | np.dtype = "float64", chunk_bytes: int = CHUNK_BYTES
) -> MemoryEstimate:
    """Peak memory of Transformer(X) for X of shape (b, d, n), in exact integers (any size)."""
    s = np.dtype(dtype).itemsize
    params = count_params(spec, check=False).total
    H, m, d, r = spec.H, spec.m, spec.d, spec.r
    c = chunk_size(H, n, n, s, chunk_bytes) if n else 0
    mask = c * n * (8 + s) if spec.mask == "causal" else 0  # one chunk's float64 -inf mask and its cast
    stacked = params if s != 8 else 4 * H * m * d * spec.N  # float64 weights are used in place but Q, K, V, O
    return MemoryEstimate(
        weights=8 * params + s * stacked,  # as loaded (float64), plus the model's stacked copies
        activations=b * d * n * (8 + 5 * s) + 3 * d * n * 8,  # the input, X and sublayer outputs; positions
        attention=(4 * b * H * m * n + 2 * H * c * n) * s + mask,  # Q, K, V, heads; a chunk of scores, twice
        feedforward=2 * b * r * n * s,  # the hidden layer and the activation's temporary
    )


def available_memory() -> int | None:
    """Memory the system can give this process now (Linux MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def parse_size(text: str) -> int:
    """'512M', '1.5G', '2GB', '1000000' -> bytes (binary units)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(i?B)?\s*", text, re.IGNORECASE)
    if not match:
        raise TfmError(f"--max-memory: got '{text}', expected a size such as 512M, 1.5G or 2GB")
    value = float(match.group(1)) * UNITS[match.group(2).upper()]
    if value <= 0:
        raise TfmError(f"--max-memory: got '{text}', expected a positive size")
    return int(value)


def human(size: int | float) -> str:
    """Bytes in binary units, 3 significant digits: 1536 -> '1.50 KiB', 1034000 -> '1010 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(size) < 1024 or unit == "PiB":
            break
        size /= 1024
    if unit == "B":
        return f"{size:.0f} B"
    return f"{size:.3g} {unit}" if abs(size) < 1000 else f"{size:,.0f} {unit}"


def check_memory(estimate: MemoryEstimate, max_memory: str | None, what: str) -> None:
    """Refuse before allocating when the estimate exceeds --max-memory or the memory available now."""
    limit = parse_size(max_memory) if max_memory else available_memory()
    source = "--max-memory" if max_memory else "available memory"
    if limit is not None and estimate.total > limit:
        raise MemoryLimitError(
            f"{what} needs about {human(estimate.total)} (weights {human(estimate.weights)}, attention "
            f"{human(estimate.attention)}), more than the {source} of {human(limit)}"
        )
