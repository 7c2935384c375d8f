"""GPTQ (`quant_method: gptq`) and AWQ (`quant_method: awq`): integer weights in groups, packed in int32 words.

GPTQ (AutoGPTQ's and GPTQModel's "gptq" format), b bits (2, 3, 4, 8), groups of g inputs (g = -1: one group):
`W.qweight` (i b / 32, o) int32, the inputs packed down the columns, little end first (3 bits: every 3 words
one 96-bit stream); `W.qzeros` (G, o b / 32) int32, G = ceil(i / g), packed along the outputs; `W.scales` (G, o)
float16; `W.g_idx` (i,) int32, each input's group (act-order permutes them). The weight is
`scales[g_idx[k], j] * (q[k, j] - zero[g_idx[k], j])`, where the "gptq" (v1) format stores each zero minus one
(the zero point is the stored value + 1, modulo 2^b) and "gptq_v2" stores it as it is.

AWQ (AutoAWQ's "gemm" version), 4 bits: `W.qweight` (i, o / 8) int32, the outputs packed along each row in
AWQ's order (word position p holds output 8 w + [0, 2, 4, 6, 1, 3, 5, 7][p]); `W.qzeros` (G, o / 8) int32 alike;
`W.scales` (G, o) float16; the weight is `scales * (q - zero)`, a group of g inputs a row of scales.

Both leave the head and embeddings unquantised. tfm counts and plans both; it runs AWQ (with zero points), whose
weights its tests hold to what compressed-tensors' AutoAWQ converter and dequantiser make of them. GPTQ runs are
refused in one line: no reference dequantiser runs on a CPU here to test tfm's against (GPTQModel's and AutoGPTQ's
kernels need CUDA builds of PyTorch).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import SpecError
from ...families.keys import Keys
from .base import Read, Scheme, Shape, Stored, fitting_group, linear, spread, unpack

REFUSED = "no reference dequantiser runs here to test tfm's against; tfm counts and plans GPTQ checkpoints only"


def _unfit(c: Keys, name: str, count: int, what: str, per: str) -> SpecError:
    """A weight whose `count` inputs or outputs do not fill whole words of the method's packing."""
    return SpecError(f"{c.source}: {name} has {count} {what}, which {c.data.get('quant_method')} cannot pack: {per}")


def _group(c: Keys, key: str) -> int:
    value = c.data.get(key, 128)
    if not isinstance(value, int) or isinstance(value, bool) or not (value == -1 or value > 0):
        raise c.fail(key, value, "a positive group size, or -1 (one group a row)")
    return value


class GPTQ(Scheme):
    method = "gptq"

    def __init__(self, c: Keys):
        self.keys = c
        self.bits = c.count("bits")
        if self.bits not in (2, 3, 4, 8):
            raise c.refuse("bits", self.bits, "GPTQ packs 2, 3, 4 or 8 bits")
        self.group = _group(c, "group_size")
        self.v1 = c.text("checkpoint_format", "gptq") != "gptq_v2"
        self.label = f"gptq int{self.bits}, groups of {self.group if self.group > 0 else 'a row'}"
        self.refused = REFUSED

    def packed(self, name: str, shape: Shape) -> dict[str, Stored] | None:
        found = _grouped(name, shape, self.group)
        if found is None:
            return None
        prefix, o, i, groups = found
        return {
            f"{prefix}.qweight": Stored((i * self.bits // 32, o), ("I32",)),
            f"{prefix}.qzeros": Stored((groups, o * self.bits // 32), ("I32",), "zero points"),
            f"{prefix}.scales": Stored((groups, o), ("F16", "BF16", "F32"), "scales"),
            f"{prefix}.g_idx": Stored((i,), ("I32",), "index"),
        }

    def check(self, name: str, shape: Shape) -> None:
        """The inputs fill whole int32 words of qweight, the outputs whole words of qzeros (a 3-bit stream: 32
        values in 3 words), and a group is no larger than the inputs (it need not divide them: g_idx)."""
        o, i = shape
        per = f"{self.bits}-bit values fill its int32 words in multiples of {32 // math.gcd(32, self.bits)}"
        for count, what in ((i, "inputs"), (o, "outputs")):
            if count * self.bits % 32:
                raise _unfit(self.keys, name, count, what, per)
        if self.group != -1:
            fitting_group(self.keys, "group_size", self.group, name, i)


def _grouped(name: str, shape: Shape, group: int) -> tuple[str, int, int, int] | None:
    """A linear layer's weight: its module, outputs, inputs and groups of `group` inputs (-1: one a row)."""
    prefix = linear(name, shape)
    if prefix is None:
        return None
    o, i = shape
    return prefix, o, i, 1 if group == -1 else -(-i // group)


class AWQ(Scheme):
    method = "awq"

    def __init__(self, c: Keys):
        self.bits = c.count("bits", 4, "w_bit")
        if self.bits != 4:
            raise c.refuse("bits", self.bits, "AWQ packs 4 bits")
        version = c.text("version", "gemm").lower()
        if version != "gemm":
            raise c.refuse("version", version, "tfm reads AWQ's gemm layout")
        self.keys, self.group_key = c, "group_size" if "group_size" in c.data else "q_group_size"
        self.group = _group(c, self.group_key)
        self.zero_point = c.flag("zero_point", True)
        self.label = f"awq int4, groups of {self.group if self.group > 0 else 'a row'}"
        if not self.zero_point:
            self.refused = "AWQ without zero points is counted and planned, not run (no reference to test against)"

    def packed(self, name: str, shape: Shape) -> dict[str, Stored] | None:
        found = _grouped(name, shape, self.group)
        if found is None:
            return None
        prefix, o, i, groups = found
        out = {f"{prefix}.qweight": Stored((i, o // 8), ("I32",))}
        if self.zero_point:
            out[f"{prefix}.qzeros"] = Stored((groups, o // 8), ("I32",), "zero points")
        return out | {f"{prefix}.scales": Stored((groups, o), ("F16", "BF16", "F32"), "scales")}

    def check(self, name: str, shape: Shape) -> None:
        """AutoAWQ's gemm layer asserts both: the outputs fill whole words of 8, the groups divide the inputs (a
        file of 172 outputs in 21 words fits the shapes and holds 168)."""
        o, i = shape
        if o % 8:
            raise _unfit(self.keys, name, o, "outputs", "its gemm layout packs 8 outputs to an int32 word")
        if self.group != -1:
            fitting_group(self.keys, self.group_key, self.group, name, i, divides=True)

    def dequantise(self, name: str, shape: Shape, read: Read) -> np.ndarray:
        prefix = linear(name, shape)
        order = (0, 4, 1, 5, 2, 6, 3, 7)  # the word position of output 0, 1, ... 7
        q = unpack(read(f"{prefix}.qweight"), 4, 1, order=order)  # (i, o)
        size = shape[1] if self.group == -1 else self.group
        zeros = spread(unpack(read(f"{prefix}.qzeros"), 4, 1, order=order), size, shape[1], 0) if self.zero_point else 0
        scales = read(f"{prefix}.scales").astype(np.float64)
        return ((q - zeros) * spread(scales, size, shape[1], 0)).T


def gptq(c: Keys) -> Scheme:
    return GPTQ(c)


def awq(c: Keys) -> Scheme:
    return AWQ(c)
