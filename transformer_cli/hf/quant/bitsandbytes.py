"""bitsandbytes (`quant_method: bitsandbytes`), as transformers saves a model loaded in 4 or 8 bits.

4-bit (`load_in_4bit`, NF4 or FP4): a weight of n = o i elements becomes `W.weight`, its 4-bit codes two to a
byte (the first element in the high half), (ceil(n / 2), 1) uint8; `W.weight.quant_map`, the 16 values a code
stands for (float32); `W.weight.absmax`, one scale per block of 64 elements of the flattened weight; and
`W.weight.quant_state.bitsandbytes__nf4`, the state as JSON bytes (blocksize, shape, nested_offset). With double
quantisation the absmax are themselves 8-bit codes (uint8), decoded by `nested_quant_map` (256 float32) times
`nested_absmax` (one float32 per block of 256) plus `nested_offset`. The weight is
`quant_map[code] * absmax[block]`, computed in float32 as bitsandbytes' dequantize_4bit does.

8-bit (`load_in_8bit`, LLM.int8): `W.weight` (o, i) int8, `W.SCB` (o,) float32, the absolute maximum of each
row, and `W.weight_format` (a byte, 0: row-major); the weight is `weight * SCB / 127` per row, in float64 (bitsandbytes'
float32 kernels round it, each in its own order).
The head and embeddings stay as they are (transformers keeps the output embedding unquantised).
"""

from __future__ import annotations

import json
import math

import numpy as np

from ...errors import ArrayError
from ...families.keys import Keys
from .base import Read, Scheme, Shape, Stored, linear

QUANT_TYPES = ("nf4", "fp4")
STATE_BYTES = 4096  # the JSON state is under 200 bytes


class FourBit(Scheme):
    method = "bitsandbytes"

    def __init__(self, c: Keys):
        self.kind = c.text("bnb_4bit_quant_type", "fp4")
        if self.kind not in QUANT_TYPES:
            raise c.refuse("bnb_4bit_quant_type", self.kind, "bitsandbytes' 4-bit types are nf4 and fp4")
        self.double = c.flag("bnb_4bit_use_double_quant", False)
        storage = c.text("bnb_4bit_quant_storage", "uint8")
        if storage != "uint8":
            raise c.refuse("bnb_4bit_quant_storage", storage, "tfm reads 4-bit codes stored as uint8")
        self.source = c.source
        self.label = f"bitsandbytes {self.kind}{' (double quantisation)' if self.double else ''}"

    def packed(self, name: str, shape: Shape) -> dict[str, Stored] | None:
        if linear(name, shape) is None:
            return None
        n = math.prod(shape)
        blocks = -(-n // 64)
        out = {f"{name}.quant_map": Stored((16,), ("F32",), "metadata"), name: Stored((-(-n // 2), 1), ("U8",))}
        if self.double:
            out |= {
                f"{name}.absmax": Stored((blocks,), ("U8",), "scales"),
                f"{name}.nested_absmax": Stored((-(-blocks // 256),), ("F32",), "scales"),
                f"{name}.nested_quant_map": Stored((256,), ("F32",), "metadata"),
            }
        else:
            out[f"{name}.absmax"] = Stored((blocks,), ("F32",), "scales")
        return out | {f"{name}.quant_state.bitsandbytes__{self.kind}": Stored((-1,), ("U8",), "metadata")}

    def _state(self, name: str, read: Read) -> dict:
        raw = read(f"{name}.quant_state.bitsandbytes__{self.kind}")
        try:
            state = json.loads(bytes(raw[:STATE_BYTES].astype(np.uint8)).decode())
        except (UnicodeDecodeError, ValueError):
            state = None
        if not isinstance(state, dict) or not isinstance(state.get("blocksize"), int):
            raise ArrayError(f"{self.source}: {name}.quant_state: not the JSON state bitsandbytes writes")
        return state

    def dequantise(self, name: str, shape: Shape, read: Read) -> np.ndarray:
        state = self._state(name, read)
        if state["blocksize"] != 64 or list(state.get("shape", ())) != list(shape):
            raise ArrayError(
                f"{self.source}: {name}.quant_state: blocksize {state['blocksize']} and shape {state.get('shape')}; "
                f"expected 64 and {list(shape)}"
            )
        absmax = read(f"{name}.absmax")
        if self.double:
            codes = read(f"{name}.nested_quant_map").astype(np.float32)
            nested = read(f"{name}.nested_absmax").astype(np.float32)
            scale = codes[absmax.astype(np.intp)] * np.repeat(nested, 256)[: absmax.size]
            absmax = scale + np.float32(state.get("nested_offset", 0.0))
        absmax = absmax.astype(np.float32)
        packed = read(name).reshape(-1).astype(np.uint8)
        codes = np.stack([packed >> 4, packed & 15], axis=-1).reshape(-1)[: math.prod(shape)]
        values = read(f"{name}.quant_map").astype(np.float32)[codes]
        weights = values * np.repeat(absmax, 64)[: codes.size]
        return weights.reshape(shape)


class EightBit(Scheme):
    method = "bitsandbytes"
    label = "bitsandbytes int8 (LLM.int8)"

    def __init__(self, c: Keys):
        self.source = c.source

    def packed(self, name: str, shape: Shape) -> dict[str, Stored] | None:
        prefix = linear(name, shape)
        if prefix is None:
            return None
        return {
            f"{prefix}.SCB": Stored((shape[0],), ("F32",), "scales"),
            name: Stored(shape, ("I8",)),
            f"{prefix}.weight_format": Stored((), ("U8",), "metadata", optional=True),
        }

    def dequantise(self, name: str, shape: Shape, read: Read) -> np.ndarray:
        prefix = linear(name, shape)
        rows = read(f"{prefix}.SCB").astype(np.float64)
        if read.has(f"{prefix}.weight_format") and np.any(read(f"{prefix}.weight_format") != 0):
            raise ArrayError(f"{self.source}: {prefix}.weight_format: not 0 (row-major), the only layout saved")
        return read(name).astype(np.float64) * rows[:, None] / 127


def scheme(c: Keys) -> Scheme:
    four = c.flag("load_in_4bit", False) or c.flag("_load_in_4bit", False)
    eight = c.flag("load_in_8bit", False) or c.flag("_load_in_8bit", False)
    if four == eight:
        raise c.fail("load_in_4bit", c.data.get("load_in_4bit"), "exactly one of load_in_4bit and load_in_8bit true")
    return FourBit(c) if four else EightBit(c)
