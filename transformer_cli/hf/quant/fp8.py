"""FP8 with block scales (`quant_method: fp8`), as DeepSeek-V3 ships and transformers' FineGrainedFP8 reads it.

A weight W (o, i) is stored as `W.weight`, float8 E4M3 (o, i), and `W.weight_scale_inv`, float32 (ceil(o / bo),
ceil(i / bi)) for `weight_block_size` [bo, bi] (DeepSeek-V3: [128, 128]): the weight is the E4M3 value times its
block's scale (edge blocks cover the remainder). The product of a 4-bit significand and a float32 is exact in
float64. Experts stacked on a leading axis (E, o, i) have scales (E, ., .). Which weights are FP8 is read from the
file (a `weight_scale_inv` beside the weight): DeepSeek-V3 keeps embeddings, norms, routers and the head in bf16.
"""

from __future__ import annotations

import numpy as np

from ...families.keys import Keys
from .base import Read, Scheme, Shape, Stored, module, spread


class FP8(Scheme):
    method = "fp8"

    def __init__(self, c: Keys):
        self.source = c.source
        fmt = c.text("fmt", "e4m3")
        if fmt != "e4m3":
            raise c.refuse("fmt", fmt, "tfm reads FP8 checkpoints in E4M3")
        block = c.data.get("weight_block_size")
        if block is not None and not (
            isinstance(block, list)
            and len(block) == 2
            and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)
        ):
            raise c.fail("weight_block_size", block, "two positive integers [rows, columns], or null (per tensor)")
        self.block = tuple(block) if block else None
        self.label = f"fp8 e4m3, blocks of {block[0]} x {block[1]}" if block else "fp8 e4m3, a scale per tensor"

    def _scales(self, shape: Shape) -> Shape:
        if self.block is None:
            return (*shape[:-2], 1, 1)
        return (*shape[:-2], -(-shape[-2] // self.block[0]), -(-shape[-1] // self.block[1]))

    def packed(self, name: str, shape: Shape) -> dict[str, Stored] | None:
        if len(shape) < 2 or module(name) is None:
            return None
        return {
            f"{name}_scale_inv": Stored(self._scales(shape), ("F32", "BF16"), "scales"),
            name: Stored(shape, ("F8_E4M3",)),
        }

    def dequantise(self, name: str, shape: Shape, read: Read) -> np.ndarray:
        scale = read(f"{name}_scale_inv").astype(np.float64)
        rows, cols = self.block or shape[-2:]
        full = spread(spread(scale, rows, shape[-2], -2), cols, shape[-1], -1)  # (a block may exceed the weight)
        return read(name).astype(np.float64) * full


def scheme(c: Keys) -> Scheme:
    return FP8(c)
