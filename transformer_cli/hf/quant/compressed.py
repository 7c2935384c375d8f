"""compressed-tensors (`quant_method: compressed-tensors`), as llm-compressor and vLLM write it.

The config's `config_groups` each name `targets` (`Linear`, a module name, or `re:` a regular expression) and the
`weights`' arguments (num_bits, type int or float, symmetric, strategy tensor / channel / group / block,
group_size, block_structure); `ignore` lists modules left as they are (the head). The group's `format` (or the
config's) says how a weight W (o, i) is stored:

- pack-quantized (int, 1 to 8 bits): `W.weight_packed` (o, ceil(i b / 32)) int32, each row one little-endian
  stream of b-bit values offset by 2^(b-1); `W.weight_shape` (2,); `W.weight_scale`; with asymmetric groups
  `W.weight_zero_point` packed alike down the columns; with `actorder: group` (older files) `W.weight_g_idx`
  (i,), each input's group (`actorder: weight` reorders during calibration only and stores none).
- int-quantized, naive-quantized: `W.weight` int8 (o, i) (or float8 for a float type), `W.weight_scale`, and a
  `W.weight_zero_point` for asymmetric ones.
- float-quantized: `W.weight` float8 E4M3 (o, i), `W.weight_scale`.
- mxfp4-pack-quantized: `W.weight_packed` (o, i / 2) uint8, two E2M1 codes a byte (the first in the low half),
  `W.weight_scale` (o, i / 32) uint8, E8M0 powers 2^(s - 127), as gpt-oss's MXFP4 (mxfp4.py).
- nvfp4-pack-quantized: `W.weight_packed` (o, i / 2) uint8, two E2M1 codes a byte, `W.weight_scale` float8 per
  16 inputs, `W.weight_global_scale` (1,): counted and planned; not run (the library dequantises it in bfloat16,
  no exact reference to test against).

The scale's shape follows the strategy: tensor (1,), channel (o, 1), group (o, ceil(i / g)), block (ceil(o / bo),
ceil(i / bi)); the weight is `(q - zero) * scale`, each element with its own row's and group's (or block's) scale,
exact in float64.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ...errors import ArrayError
from ...families.keys import Keys
from .base import Read, Scheme, Shape, Stored, fitting_group, group_index, linear, spread, unpack
from .mxfp4 import E2M1

FORMATS = (
    "pack-quantized",
    "int-quantized",
    "naive-quantized",
    "float-quantized",
    "mxfp4-pack-quantized",
    "nvfp4-pack-quantized",
)
STRATEGIES = ("tensor", "channel", "group", "block", "tensor_group")
SCALES = ("F32", "BF16", "F16")
GROUP_ORDERS = ("group", "dynamic")  # the act-orders that store a g_idx ("weight", "static" reorder, store none)
MX_GROUP = 32  # inputs per E8M0 scale in mxfp4-pack-quantized

Pattern = str | re.Pattern[str]


@dataclass(frozen=True)
class Group:
    targets: tuple[Pattern, ...]
    format: str
    bits: int
    float_: bool
    symmetric: bool
    strategy: str
    group: int | None
    block: tuple[int, int] | None
    actorder: bool
    keys: Keys = field(compare=False, repr=False)  # the group's weights' arguments, for errors naming the key


def _patterns(c: Keys, key: str, default: list | None = None) -> tuple[Pattern, ...]:
    """A list of module names, 'Linear' or 're:' regular expressions (compiled here: one that does not compile
    is an error naming the key and the pattern)."""
    value = c.data.get(key, default)
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise c.fail(key, value, "a list of module names, 'Linear' or 're:' patterns")
    out: list[Pattern] = []
    for pattern in value:
        if not pattern.startswith("re:"):
            out.append(pattern)
            continue
        try:
            out.append(re.compile(pattern[3:]))
        except (re.error, RecursionError, OverflowError) as error:
            raise c.fail(key, pattern, f"a regular expression after 're:' ({error})") from None
    return tuple(out)


def _matches(patterns: tuple[Pattern, ...], prefix: str) -> bool:
    for pattern in patterns:
        if isinstance(pattern, re.Pattern):
            if pattern.match(prefix):
                return True
        elif pattern == "Linear" or prefix == pattern or prefix.endswith(f".{pattern}"):
            return True
    return False


def _group(c: Keys, default_format: str) -> Group:
    targets = _patterns(c, "targets")
    weights = c.nested("weights")
    if weights is None:
        raise c.fail("weights", c.data.get("weights"), "the weights' quantisation arguments")
    fmt = c.text("format", default_format)
    if fmt not in FORMATS:
        raise c.refuse("format", fmt, f"tfm reads the formats {', '.join(FORMATS)}")
    strategy = weights.text("strategy", "tensor")
    if strategy not in STRATEGIES:
        raise weights.refuse("strategy", strategy, f"tfm reads the strategies {', '.join(STRATEGIES)}")
    block = weights.data.get("block_structure")
    if strategy == "block" and not (
        isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block)
    ):
        raise weights.fail("block_structure", block, "two positive integers [rows, columns]")
    shape = tuple(block) if isinstance(block, list) and strategy == "block" else None
    group = weights.count("group_size", None) if strategy in ("group", "tensor_group") else None
    if strategy in ("group", "tensor_group") and group is None:
        raise weights.fail("group_size", None, "a positive integer (the strategy is group)")
    if fmt == "mxfp4-pack-quantized" and group != MX_GROUP:
        raise weights.fail("group_size", group, f"{MX_GROUP} (an mxfp4 scale covers 32 inputs)")
    bits, float_ = weights.count("num_bits", 8), weights.text("type", "int") == "float"
    if not float_ and bits > 8:
        raise weights.refuse("num_bits", bits, "compressed-tensors stores integers of 1 to 8 bits")
    actorder = weights.data.get("actorder")
    return Group(
        targets,
        fmt,
        bits,
        float_,
        weights.flag("symmetric", True),
        strategy,
        group,
        shape,
        actorder is True or actorder in GROUP_ORDERS,
        weights,
    )


class CompressedTensors(Scheme):
    method = "compressed-tensors"

    def __init__(self, c: Keys):
        self.source = c.source
        groups = c.nested("config_groups")
        if groups is None:
            raise c.fail("config_groups", c.data.get("config_groups"), "the quantisation groups")
        fmt = c.text("format", "pack-quantized")
        self.groups = [_group(groups.nested(k) or Keys({}, c.source, f"config_groups.{k}."), fmt) for k in groups.data]
        self.ignore = _patterns(c, "ignore", []) if c.data.get("ignore") is not None else ()
        kinds = sorted({g.format for g in self.groups})
        self.label = f"compressed-tensors {', '.join(kinds)}"
        if "nvfp4-pack-quantized" in kinds:
            self.refused = "compressed-tensors nvfp4-pack-quantized weights are counted and planned, not run"

    def _group_of(self, name: str, shape: Shape) -> tuple[str, Group] | None:
        prefix = linear(name, shape)
        if prefix is None or _matches(self.ignore, prefix):
            return None
        for group in self.groups:
            if _matches(group.targets, prefix):
                return prefix, group
        return None

    @staticmethod
    def _scale_shape(g: Group, shape: Shape) -> Shape:
        o, i = shape
        if g.strategy == "tensor":
            return (1,)
        if g.strategy == "channel":
            return (o, 1)
        if g.block is not None:
            return (-(-o // g.block[0]), -(-i // g.block[1]))
        return (o, -(-i // (g.group or i)))

    def packed(self, name: str, shape: Shape) -> dict[str, Stored] | None:
        found = self._group_of(name, shape)
        if found is None:
            return None
        prefix, g = found
        o, i = shape
        scale = self._scale_shape(g, shape)
        if g.format == "mxfp4-pack-quantized":
            return {
                f"{prefix}.weight_packed": Stored((o, -(-i // 2)), ("U8",)),
                f"{prefix}.weight_scale": Stored(scale, ("U8",), "scales"),
            }
        if g.format == "nvfp4-pack-quantized":
            return {
                f"{prefix}.weight_packed": Stored((o, -(-i // 2)), ("U8",)),
                f"{prefix}.weight_scale": Stored(scale, ("F8_E4M3",), "scales"),
                f"{prefix}.weight_global_scale": Stored((1,), ("F32",), "scales"),
            }
        out: dict[str, Stored]
        if g.format == "pack-quantized":
            out = {
                f"{prefix}.weight_packed": Stored((o, -(-i * g.bits // 32)), ("I32",)),
                f"{prefix}.weight_shape": Stored((2,), ("I64", "I32"), "metadata"),
            }
            zero = Stored((-(-o * g.bits // 32), scale[-1]), ("I32",), "zero points")
        else:
            out = {
                f"{prefix}.weight_scale": Stored(scale, SCALES, "scales"),
                name: Stored(shape, ("F8_E4M3",) if g.float_ else ("I8",)),
            }
            zero = Stored(scale, ("I8", "I32", *SCALES), "zero points")
        out[f"{prefix}.weight_scale"] = Stored(scale, SCALES, "scales")
        if not g.symmetric:
            out[f"{prefix}.weight_zero_point"] = zero
        if g.actorder:
            out[f"{prefix}.weight_g_idx"] = Stored((i,), ("I32", "I64"), "index")
        return out

    def check(self, name: str, shape: Shape) -> None:
        found = self._group_of(name, shape)
        if found is not None and found[1].group is not None:
            fitting_group(found[1].keys, "group_size", found[1].group, name, shape[1])

    def dequantise(self, name: str, shape: Shape, read: Read) -> np.ndarray:
        found = self._group_of(name, shape)
        assert found is not None
        prefix, g = found
        o, i = shape
        offset = 1 << (g.bits - 1)
        if g.format == "mxfp4-pack-quantized":
            packed = read(f"{prefix}.weight_packed").astype(np.uint8)
            codes = np.stack([packed & 15, packed >> 4], axis=-1).reshape(o, -1)[:, :i]
            powers = read(f"{prefix}.weight_scale").astype(np.int64) - 127
            return np.ldexp(E2M1[codes], spread(powers, MX_GROUP, i, 1))
        if g.format == "pack-quantized":
            held = read(f"{prefix}.weight_shape")
            if held.tolist() != [o, i]:
                raise ArrayError(
                    f"{read.where(f'{prefix}.weight_shape')}: tensor {prefix}.weight_shape: "
                    f"{held.tolist()}, expected [{o}, {i}], the shape of {name}"
                )
            q = unpack(read(f"{prefix}.weight_packed"), g.bits, 1, i) - offset
        else:
            q = read(name).astype(np.float64)
        zero: np.ndarray | float = 0.0
        if not g.symmetric:
            zero = read(f"{prefix}.weight_zero_point").astype(np.float64)
            if g.format == "pack-quantized":
                zero = unpack(read(f"{prefix}.weight_zero_point"), g.bits, 0, o) - offset
        scale = read(f"{prefix}.weight_scale").astype(np.float64)
        return (q - self._spread(g, zero, shape, read, prefix)) * self._spread(g, scale, shape, read, prefix)

    def _spread(self, g: Group, per: np.ndarray | float, shape: Shape, read: Read, prefix: str) -> np.ndarray:
        """A scale (or zero point) of the strategy's shape, repeated to one per element of the weight."""
        o, i = shape
        per = np.asarray(per, dtype=np.float64)
        if per.ndim == 0 or g.strategy == "tensor":
            return np.broadcast_to(per.reshape(-1)[0], shape)
        if g.strategy == "channel":
            return np.broadcast_to(per.reshape(o, 1), shape)
        if g.block is not None:
            return spread(spread(per, g.block[0], o, 0), g.block[1], i, 1)
        if g.actorder:
            return per[:, group_index(read, f"{prefix}.weight_g_idx", i, per.shape[1])]
        return spread(per, g.group or i, i, 1)


def scheme(c: Keys) -> Scheme:
    return CompressedTensors(c)


__all__ = ["CompressedTensors", "scheme"]
