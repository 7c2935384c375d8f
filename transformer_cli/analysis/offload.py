"""Where llama.cpp puts a model (src/llama-model.cpp load_tensors, llama-kv-cache.cpp; common/fit.cpp for --fit):
which blocks its -ngl puts on the devices and how --tensor-split shares them out, what --override-tensor moves,
where the caches go (-nkvo), and so what each device and the host hold.

- Blocks are numbered 0..N-1 and the output layer is number N: -ngl L offloads the last L of those N + 1 (the
  output layer first); block i of them goes to the first device whose share, summed over the devices before it,
  exceeds (i - first) / L (float32, as llama.cpp divides). The input layer (the token embeddings) stays on the host.
- A tied head (no output.weight) reads the token embeddings a second time: a copy on the output layer's device
  when that is not the host.
- --override-tensor PATTERN=DEVICE: the first pattern found in a tensor's name decides its place (CPU: the host).
- Each block's cache follows its block unless --no-kv-offload (then the host's); the output buffer is the host's.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import SpecError

HOST = "host"
INPUT = ("token_embd.", "token_types.", "position_embd.", "per_layer_token_embd.")  # (LLM_TENSOR_LAYER_INPUT)
BLOCK = re.compile(r"blk\.(\d+)\.")


@dataclass(frozen=True)
class Offload:
    """llama.cpp's placement flags: -ngl (None: the host runs it all), --tensor-split (a share per device; its
    length is the devices), --no-kv-offload, --override-tensor (pattern, device) in order; devices "GPU0"..."""

    gpu_layers: int | None = None
    split: tuple[float, ...] = (1.0,)
    no_kv_offload: bool = False
    overrides: tuple[tuple[str, str], ...] = ()

    @property
    def devices(self) -> list[str]:
        return [f"GPU{i}" for i in range(len(self.split))] if self.gpu_layers is not None else []


@dataclass
class Memory:
    """Bytes one device (or the host) holds, by kind."""

    weights: int = 0
    kv_cache: int = 0
    compute: int = 0
    output: int = 0
    layers: list[int] = field(default_factory=list)  # its blocks (N: the output layer)

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.compute + self.output

    def to_dict(self) -> dict:
        out = {"weights": self.weights, "kv_cache": self.kv_cache, "compute": self.compute}
        return out | ({"output": self.output} if self.output else {}) | {"total": self.total}


def parse_overrides(values: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """--override-tensor values, PATTERN=DEVICE[,PATTERN=DEVICE...], checked: a regular expression and CPU or GPUi."""
    out = []
    for value in values:
        for item in value.split(","):
            pattern, sep, device = item.partition("=")
            if not sep or not pattern or not re.fullmatch(r"(?i)cpu|[a-z_]*\d+", device):
                raise SpecError(f"--override-tensor {item}: expected PATTERN=DEVICE, DEVICE CPU or GPU0, GPU1, ...")
            try:
                re.compile(pattern)
            except re.error as e:
                raise SpecError(f"--override-tensor {item}: {pattern!r} is no regular expression ({e})") from None
            index = re.search(r"(\d+)$", device)
            out.append((pattern, "CPU" if index is None else f"GPU{index[1]}"))
    return tuple(out)


def layer_devices(n_layer: int, offload: Offload) -> list[str]:
    """The device of each block and (last) of the output layer, as llama.cpp assigns them."""
    devices = offload.devices
    ngl = offload.gpu_layers or 0
    ngl = n_layer + 1 if ngl < 0 else ngl
    first = max(n_layer + 1 - ngl, 0)
    active = min(ngl, n_layer + 1) if devices else 0
    shares = np.cumsum(np.asarray(offload.split, dtype=np.float32), dtype=np.float32)
    points = [float(x) for x in (shares / shares[-1]).astype(np.float32)]
    out = []
    for il in range(n_layer + 1):
        if il < first or il - first >= active:
            out.append(HOST)
        else:
            at = float(np.float32(il - first) / np.float32(active))
            out.append(devices[min(bisect_right(points, at), len(devices) - 1)])
    return out


def tensor_device(name: str, placed: list[str], overrides: Sequence[tuple[str, str]]) -> str:
    """Where a tensor of the file goes: an override's device, else its layer's (the host for the input layer)."""
    for pattern, device in overrides:
        if re.search(pattern, name):
            return HOST if device == "CPU" else device
    if name.startswith(INPUT):
        return HOST
    found = BLOCK.match(name)
    if found is not None:
        return placed[min(int(found[1]), len(placed) - 1)]
    return placed[0] if name.startswith("rope_") else placed[-1]  # (rope factors: block 0's; else output's)


def place(
    tensors: Mapping[str, int], caches: Sequence[int], n_layer: int, offload: Offload
) -> tuple[dict[str, Memory], list[str]]:
    """Each device's and the host's weights and caches (compute and output added by the caller), and each
    block's device (the output layer's last)."""
    placed = layer_devices(n_layer, offload)
    for pattern, device in offload.overrides:
        if device != "CPU" and device not in offload.devices:
            have = ", ".join(offload.devices) or "none: no --gpu-layers"
            raise SpecError(f"--override-tensor {pattern}={device}: no such device (the devices: {have})")
    memory = {HOST: Memory()} | {device: Memory() for device in offload.devices}
    for name, size in tensors.items():
        memory[tensor_device(name, placed, offload.overrides)].weights += size
    if "output.weight" not in tensors and "token_embd.weight" in tensors:  # (a tied head: its own copy there)
        device = tensor_device("output.weight", placed, offload.overrides)
        if device != HOST:
            memory[device].weights += tensors["token_embd.weight"]
    for il, size in enumerate(caches):
        memory[HOST if offload.no_kv_offload else placed[il]].kv_cache += size
    for il, device in enumerate(placed):
        memory[device].layers.append(il)
    return memory, placed


__all__ = ["HOST", "Memory", "Offload", "layer_devices", "parse_overrides", "place", "tensor_device"]
