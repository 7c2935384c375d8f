"""`tfm bench` as a library call: time the forward pass, count its FLOPs, and set them against NumPy's GEMM peak.

tfm never imports PyTorch: the comparison with PyTorch, torch.compile, JAX and ONNX Runtime on the same weights
is benchmarks/peers.py, and PyTorch's forward pass is tests/torch_reference.py, outside the package.

FLOPs are the analytic count of `tfm count --seq-len` (costs.forward_flops: a multiply-add is 2 FLOPs,
attention counted in full), checked in the tests against a direct count of what the forward pass computes.
"""

from __future__ import annotations

import os
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..analysis.flops import forward_flops
from ..analysis.modes import Mode, build
from ..io.weights import Weights
from ..model.transformer import Transformer
from ..spec.definition import Spec


def timings(fn: Callable[[], Any], repeat: int, warmup: int = 1) -> list[float]:
    """Wall-clock seconds of `repeat` calls after `warmup` calls."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


KERNEL_RANK = {
    "Prescott": 0,
    "Core2": 0,
    "Nehalem": 1,
    "Sandybridge": 2,
    "Haswell": 3,
    "Zen": 3,
    "SkylakeX": 4,
    "Cooperlake": 5,
    "SapphireRapids": 6,
}


def blas_info() -> dict[str, Any]:
    """The BLAS NumPy calls: library, version, kernel (threadpoolctl's `architecture`), threads; and a warning when
    OPENBLAS_CORETYPE forces OpenBLAS below the kernel this CPU supports (AVX-512 run on AVX2 code, for one)."""
    from threadpoolctl import threadpool_info

    found = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not found:
        return {"library": "unknown", "version": None, "kernel": None, "threads": None, "warning": None}
    info = found[0]
    kernel = info.get("architecture")
    out = {
        "library": info.get("internal_api"),
        "version": info.get("version"),
        "kernel": kernel,
        "threads": info.get("num_threads"),
        "warning": None,
    }
    flags = _cpu_flags()
    best = "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else None
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if forced and best and KERNEL_RANK.get(kernel or "", 99) < KERNEL_RANK[best]:
        out["warning"] = (
            f"OPENBLAS_CORETYPE={forced} forces OpenBLAS's {kernel} kernel on a CPU that runs "
            f"{best} code: matrix products run slower than on the same machine without it"
        )
    return out


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            return next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
    except OSError:  # not Linux
        return set()


def gemm_gflops(dtype: str, size: int = 2048, repeat: int = 3) -> float:
    """NumPy's own matrix-multiply throughput on this machine (best of `repeat`), the peak to compare with."""
    rng = np.random.default_rng(0)
    A, B = (rng.standard_normal((size, size)).astype(dtype) for _ in range(2))
    return 2 * size**3 / min(timings(lambda: A @ B, repeat)) / 1e9


@dataclass
class BenchResult:
    """Timings of one spec, batch, length and dtype."""

    spec: Spec
    b: int
    n: int
    dtype: str
    flops: dict[str, int]
    tfm_times: list[float]
    tfm_peak_bytes: int  # NumPy's peak allocation during one forward pass (tracemalloc)
    gemm_gflops: float
    peer: str | None = None  # another implementation timed beside tfm's (benchmarks/run.py: PyTorch)
    peer_times: list[float] = field(default_factory=list)
    max_rel_diff: float | None = None  # tfm's output against the peer's, relative to max|output|
    mode: Mode | None = None  # how a checkpoint's weights were held (None: every block prepared up front)

    @property
    def total_flops(self) -> int:
        return sum(self.flops.values())

    def summary(self, times: list[float]) -> dict[str, float]:
        median = statistics.median(times)
        return {
            "median_s": median,
            "min_s": min(times),
            "max_s": max(times),
            "tokens_per_s": self.b * self.n / median,
            "gflops": self.total_flops / median / 1e9,
        }

    def to_dict(self) -> dict[str, Any]:
        tfm = self.summary(self.tfm_times) | {"peak_bytes": self.tfm_peak_bytes}
        tfm["fraction_of_gemm_peak"] = tfm["gflops"] / self.gemm_gflops
        out: dict[str, Any] = {
            "spec": self.spec.label,
            "batch": self.b,
            "seq_len": self.n,
            "dtype": self.dtype,
            "repeat": len(self.tfm_times),
            "flops": self.total_flops,
            "flops_by_component": self.flops,
            "gemm_gflops": self.gemm_gflops,
            "blas": blas_info(),
            "tfm": tfm,
            "weights_mode": self.mode.to_dict() if self.mode is not None else None,
        }
        if self.peer is not None:
            out["peer"] = self.summary(self.peer_times) | {"name": self.peer, "max_rel_diff": self.max_rel_diff}
            out["ratio_tfm_over_peer"] = tfm["median_s"] / out["peer"]["median_s"]
        return out


def run_bench(
    spec: Spec,
    weights: Weights,
    b: int,
    n: int,
    dtype: str = "float32",
    repeat: int = 5,
    progress: Callable[[str], None] | None = None,
    peer: tuple[str, Callable[[np.ndarray], np.ndarray]] | None = None,
    mode: Mode | None = None,
) -> BenchResult:
    """Time tfm's forward after a warm-up, and NumPy's GEMM peak in the same run; `peer` (a name and a function
    of the same (b, d, n) input, as benchmarks/run.py passes PyTorch's) is timed too, interleaved with tfm's
    runs so a noisy neighbour slows both alike, and its output compared with tfm's. `mode`: how a checkpoint's
    weights are held (analysis/modes.py; default every block prepared up front)."""
    say = progress or (lambda _: None)
    X = np.random.default_rng(0).standard_normal((b, spec.input_width, n)).astype(dtype)
    model = Transformer(spec, weights, dtype) if mode is None else build(spec, weights, dtype, mode)
    say("measuring NumPy's GEMM peak")
    peak = gemm_gflops(dtype)
    tracemalloc.start()
    y = model(X)  # its output is what a peer's is compared with
    tfm_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    result = BenchResult(spec, b, n, dtype, forward_flops(spec, b, n), [], tfm_peak, peak, mode=mode)
    if peer is not None:
        result.peer = peer[0]
        result.max_rel_diff = float(np.max(np.abs(y.astype(np.float64) - peer[1](X))) / np.max(np.abs(y)))
    for i in range(repeat + 1):  # the first is a warm-up
        say(f"repeat {i}/{repeat}")
        result.tfm_times += timings(lambda: model(X), 1, warmup=0)
        if peer is not None:
            result.peer_times += timings(lambda: peer[1](X), 1, warmup=0)
    result.tfm_times, result.peer_times = result.tfm_times[1:], result.peer_times[1:]
    return result
