"""Time on named hardware: a roofline estimate of prefill and decoding from the spec's exact FLOPs and bytes.

A step takes max(FLOPs / peak FLOP/s, bytes / memory bandwidth): the larger names the bound. The peaks are
the vendors' data-sheet figures for dense matrix products (no sparsity), so the times are lower bounds: real
kernels reach perhaps 50-80 % of them. FLOPs are the matrix products' (2 per multiply-add; causal attention
counts the allowed pairs); other operations are left out.
- prefill (time to first token) of b prompts of n tokens: the products of the forward pass, reading the
  weights once and writing the KV cache;
- decoding at context n, batch b: each step multiplies every weight matrix a token uses and reads the weights
  once for the batch (routed experts: at most min(E, b k) experts a block) and each sequence's cache.
Weights quantised to int8 or int4 are multiplied in bfloat16 after unpacking (weight-only quantisation); float8
uses the float8 peak where the hardware has one.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..spec.definition import Spec

if TYPE_CHECKING:  # (quantized.py counts parameters: not imported by `tfm --help`)
    from ..components.held import Held

T, G = 10**12, 10**9  # FLOP/s and bandwidth: the data sheets' decimal units
MiB = 1 << 20  # memory: the binary units the budget (--memory 80G = 80 GiB) and every table use

THIS_MACHINE = "this machine"  # the name of the hardware measured here (--hardware this)

# Memory: the total nvidia-smi reports for the card (NVML, in MiB), not the data sheet's rounded "80GB", so a card
# and a --memory budget of the same size are one figure. Totals as nvidia-smi prints them: Modal's table of its
# GPUs (modal-labs/modal-client#2797, thundergolfer.com/blog/nvidia-gpu-memory-capacity) for H100, A100 80GB and
# L4; an RTX 4090's nvidia-smi in RLinf/RLinf#255.
# - A100 80GB: 81,920 MiB = 80 GiB (also A800-SXM4-80GB's nvidia-smi, dexmal/dexbotic#41);
# - H100 SXM 80GB HBM3: 81,559 MiB = 79.6 GiB, a little under 80 GiB;
# - L4: 23,034 MiB = 22.5 GiB (of its 24 GB);
# - RTX 4090: 24,564 MiB = 24.0 GiB.


@dataclass(frozen=True)
class Hardware:
    name: str
    flops: dict[str, float]  # peak dense FLOP/s by compute type: float32, bfloat16, float8
    bandwidth: float  # bytes/s
    memory: int  # bytes
    source: str


PRESETS = {
    "h100-sxm": Hardware(
        "H100 SXM",
        {"float32": 67 * T, "bfloat16": 989 * T, "float8": 1979 * T},
        3350 * G,
        81_559 * MiB,
        "NVIDIA H100 Tensor Core GPU data sheet (SXM5, HBM3)",
    ),
    "a100-80gb": Hardware(
        "A100 80GB SXM",
        {"float32": 19.5 * T, "bfloat16": 312 * T},
        2039 * G,
        81_920 * MiB,
        "NVIDIA A100 Tensor Core GPU data sheet (80GB SXM, HBM2e)",
    ),
    "l4": Hardware(
        "L4",
        {"float32": 30.3 * T, "bfloat16": 121 * T, "float8": 242.5 * T},
        300 * G,
        23_034 * MiB,
        "NVIDIA L4 Tensor Core GPU data sheet (sparsity figures halved)",
    ),
    "rtx-4090": Hardware(
        "RTX 4090",
        {"float32": 82.6 * T, "bfloat16": 165.2 * T, "float8": 330.3 * T},
        1008 * G,
        24_564 * MiB,
        "NVIDIA Ada Lovelace architecture white paper (FP32 accumulate)",
    ),
}


def probe(seconds: float = 0.1) -> Hardware:
    """This machine, measured: NumPy's float32 and float64 GEMM (1024 x 1024, best of a few) and the copy
    bandwidth of a 64 MiB array (bytes read + written a second, best of a few). No 16-bit or float8 GEMM in
    NumPy: those use the float32 figure."""
    from .limits import memory_limits  # (here: `tfm --help` imports this module, and only "this" measures)

    rng = np.random.default_rng(0)
    peak = {}
    for dtype in ("float64", "float32"):
        A, B = (rng.standard_normal((1024, 1024)).astype(dtype) for _ in range(2))
        peak[dtype] = 2 * 1024**3 / _best(lambda A=A, B=B: A @ B, seconds)
    src = np.ones(8 << 20)  # 64 MiB of float64
    dst = np.empty_like(src)
    bandwidth = 2 * src.nbytes / _best(lambda: np.copyto(dst, src), seconds)
    free = min((lim.free for lim in memory_limits()), default=0)
    return Hardware(
        THIS_MACHINE,
        {"float32": peak["float32"], "float64": peak["float64"]},
        bandwidth,
        free,
        "measured now: NumPy GEMM 1024^3 and a 64 MiB copy",
    )


def _best(fn, seconds: float) -> float:
    fn()  # warm up
    best, start = float("inf"), time.perf_counter()
    for _ in range(50):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
        if time.perf_counter() - start > seconds:
            break
    return best


def compute_type(hw: Hardware, weights: str | Held) -> str:
    """The FLOP/s figure a step in these weights uses on this hardware."""
    if weights == "float32":
        return "float32"
    if weights == "float8" and "float8" in hw.flops:
        return "float8"
    return "bfloat16" if "bfloat16" in hw.flops else "float32"


@dataclass(frozen=True)
class Roofline:
    """A step's time on the roofline: max(FLOPs / peak, bytes / bandwidth), and which bound it is."""

    flops: int
    bytes: int
    seconds: float
    bound: str  # "compute" or "memory"
    flops_per_byte: float


@dataclass(frozen=True)
class Timing:
    """Prefill (the time to the first token) and, for a model that decodes, one decoding step, on one machine."""

    hardware: str
    compute_type: str
    peak_flops: float
    bandwidth: float
    time_to_first_token: Roofline
    decode_step: Roofline | None = None
    tokens_per_second: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _roofline(hw: Hardware, kind: str, flops: int, read: int) -> Roofline:
    compute, memory = flops / hw.flops[kind], read / hw.bandwidth
    return Roofline(flops, read, max(compute, memory), "compute" if compute >= memory else "memory", flops / read)


def timing(
    spec: Spec,
    hw: Hardware,
    b: int,
    n: int,
    weights: str | Held = "bfloat16",
    kv: str = "bfloat16",
    n_src: int | None = None,
) -> Timing:
    """Prefill of b prompts of n tokens, and one decoding step at context n for b sequences, on `hw` (None for a
    model that does not decode: an encoder's prefill is its whole forward pass)."""
    # here, not at the top: `tfm --help` imports this module for the preset names, and these import the components
    from .decode import step_multiply_adds, weights_read
    from .flops import multiply_adds
    from .kv_cache import decodes, served_cache_bytes
    from .quantized import total_bytes

    kind = compute_type(hw, weights)
    prefill_flops = 2 * sum(multiply_adds(spec, b, n, causal_pairs=True, n_src=n_src).values())
    cache = served_cache_bytes(spec, b, n, kv, n_src)
    prefill = _roofline(hw, kind, prefill_flops, total_bytes(spec, weights) + cache)
    out = Timing(hw.name, kind, hw.flops[kind], hw.bandwidth, prefill)
    if decodes(spec):  # an encoder's time is its one forward pass
        linear, attention = step_multiply_adds(spec, n, n_src)
        step = _roofline(hw, kind, 2 * b * (linear + attention), weights_read(spec, b, weights) + cache)
        out = replace(out, decode_step=step, tokens_per_second=b / step.seconds)
    return out
