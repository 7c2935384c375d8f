"""MXFP4 (`quant_method: mxfp4`), as gpt-oss ships its experts (the OCP microscaling format, 4-bit E2M1 values).

An expert tensor `...mlp.experts.gate_up_proj` (E, d, 2r) is stored as `gate_up_proj_blocks` (E, 2r, d / 32,
16) uint8 and `gate_up_proj_scales` (E, 2r, d / 32) uint8: each output row in blocks of 32 inputs, two 4-bit
codes a byte (the first input in the low half), and one E8M0 scale a block, the power 2^(s - 127). A code is an
E2M1 number: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}. The weight is the code's value times its block's scale, transposed
to (E, inputs, outputs) as transformers' `convert_moe_packed_tensors` gives it; every product is exact in
float64. The attention, router, embedding and head stay bfloat16 (gpt-oss's modules_to_not_convert).
"""

from __future__ import annotations

import numpy as np

from ...families.keys import Keys
from .base import Read, Scheme, Shape, Stored

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
BLOCK = 32


class MXFP4(Scheme):
    method = "mxfp4"
    label = "mxfp4 (E2M1 in blocks of 32, E8M0 scales)"

    def __init__(self, c: Keys):
        self.source = c.source

    def packed(self, name: str, shape: Shape) -> dict[str, Stored] | None:
        if not name.endswith(("experts.gate_up_proj", "experts.down_proj")) or len(shape) != 3:
            return None
        E, inputs, outputs = shape
        blocks = -(-inputs // BLOCK)
        return {
            f"{name}_blocks": Stored((E, outputs, blocks, BLOCK // 2), ("U8",)),
            f"{name}_scales": Stored((E, outputs, blocks), ("U8",), "scales"),
        }

    def dequantise(self, name: str, shape: Shape, read: Read) -> np.ndarray:
        blocks = read(f"{name}_blocks").astype(np.uint8)
        scales = read(f"{name}_scales").astype(np.int64) - 127
        values = np.empty((*blocks.shape[:-1], BLOCK), dtype=np.float64)
        values[..., 0::2] = E2M1[blocks & 15]
        values[..., 1::2] = E2M1[blocks >> 4]
        values = np.ldexp(values, scales[..., None])
        E, inputs, outputs = shape
        return values.reshape(E, outputs, -1)[..., :inputs].transpose(0, 2, 1)


def scheme(c: Keys) -> Scheme:
    return MXFP4(c)
