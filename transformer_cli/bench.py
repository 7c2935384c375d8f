"""`tfm bench` as a library call: time the forward pass, count its FLOPs, and compare with PyTorch.

FLOPs are the analytic count of `tfm count --seq-len` (costs.forward_flops: a multiply-add is 2 FLOPs,
attention counted in full), checked in the tests against a direct count of what the forward pass computes.
"""

from __future__ import annotations

import math
import os
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .analysis.flops import forward_flops
from .io.weights import Weights
from .kernels import sinusoidal_positions
from .model.transformer import Transformer
from .spec.definition import Spec


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


KERNEL_RANK = {"Prescott": 0, "Core2": 0, "Nehalem": 1, "Sandybridge": 2, "Haswell": 3, "Zen": 3, "SkylakeX": 4,
               "Cooperlake": 5, "SapphireRapids": 6}  # fmt: skip


def blas_info() -> dict[str, Any]:
    """The BLAS NumPy calls: library, version, kernel (threadpoolctl's `architecture`), threads; and a warning when
    OPENBLAS_CORETYPE forces OpenBLAS below the kernel this CPU supports (AVX-512 run on AVX2 code, for one)."""
    from threadpoolctl import threadpool_info

    found = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not found:
        return {"library": "unknown", "version": None, "kernel": None, "threads": None, "warning": None}
    info = found[0]
    kernel = info.get("architecture")
    out = {"library": info.get("internal_api"), "version": info.get("version"), "kernel": kernel,
           "threads": info.get("num_threads"), "warning": None}  # fmt: skip
    flags = _cpu_flags()
    best = "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else None
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if forced and best and KERNEL_RANK.get(kernel or "", 99) < KERNEL_RANK[best]:
        out["warning"] = (f"OPENBLAS_CORETYPE={forced} forces OpenBLAS's {kernel} kernel on a CPU that runs "
                          f"{best} code: matrix products run slower than on the same machine without it")  # fmt: skip
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


def torch_model(spec: Spec, weights: Weights, dtype: str) -> Callable | None:
    """The spec's model in PyTorch (F.linear, scaled_dot_product_attention) on tensors in its usual (b, n, d)
    layout, or None without torch. Not under inference_mode: torch.compile and ONNX export take it as it is."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    tdtype = {"float32": torch.float32, "float64": torch.float64}[dtype]
    t = {k: torch.from_numpy(np.asarray(v, dtype=dtype)) for k, v in weights.items()}
    H, G, m, d = spec.H, spec.kv_heads, spec.m, spec.d
    blocks = []
    for i in range(spec.N):
        p = f"blocks.{i}."
        blk = {
            "qkv": torch.cat([t[p + f"attention.W_{k}"].reshape(-1, d) for k in "QKV"]),
            "o": t[p + "attention.W_O"].permute(1, 0, 2).reshape(d, H * m).contiguous(),
            "w1": t[p + "ff.W1"], "b1": t.get(p + "ff.b1"), "w2": t[p + "ff.W2"], "b2": t.get(p + "ff.b2"),
            "w3": t.get(p + "ff.W3"), "b3": t.get(p + "ff.b3"), "prefix": p,
            "q_norm": (t.get(p + "attention.q_norm.gamma"), t.get(p + "attention.q_norm.beta")),
            "k_norm": (t.get(p + "attention.k_norm.gamma"), t.get(p + "attention.k_norm.beta")),
            "bqkv": torch.cat([t[p + f"attention.b_{k}"].reshape(-1) for k in "QKV"]) if spec.attention_bias else None,
            "bo": t.get(p + "attention.b_O"),
        }  # fmt: skip
        for ln in ("norm1", "norm2"):
            blk[ln] = (t[p + f"{ln}.gamma"], t.get(p + f"{ln}.beta")) if p + f"{ln}.gamma" in t else None
        blocks.append(blk)
    act = {"gelu": lambda x: F.gelu(x, approximate="tanh"), "gelu_exact": F.gelu, "relu": F.relu,
           "silu": F.silu}[spec.activation]  # fmt: skip
    causal, scale, eps = spec.mask == "causal", spec.score_scale, spec.norm_eps

    def norm_m(x, params):
        if spec.norm_type == "rmsnorm":
            return F.rms_norm(x, (m,), params[0] + 1 if spec.norm_plus_one else params[0], eps)
        return F.layer_norm(x, (m,), params[0], params[1], eps)  # params[1] None: no bias

    def norm(x, params):
        if spec.norm_type == "rmsnorm":
            return F.rms_norm(x, (d,), params[0] + 1 if spec.norm_plus_one else params[0], eps)
        return F.layer_norm(x, (d,), params[0], params[1], eps)

    def attention(blk, x):
        b, n, _ = x.shape
        if G == H:  # the usual fused layout, as fast as PyTorch code gets
            q, k, v = F.linear(x, blk["qkv"], blk["bqkv"]).view(b, n, 3, H, m).permute(2, 0, 3, 1, 4)
        else:  # grouped: split (each key/value head is repeated for its H/G query heads below)
            q, k, v = F.linear(x, blk["qkv"], blk["bqkv"]).split([H * m, G * m, G * m], dim=-1)
            q, k, v = (t.view(b, n, -1, m).transpose(1, 2) for t in (q, k, v))  # (b, heads, n, m)
        if spec.qk_norm:  # each head over its m entries, with the gains (m,) the heads share
            q, k = (norm_m(t, blk[f"{x}_norm"]) for t, x in ((q, "q"), (k, "k")))
        if spec.positional == "rope":
            q, k = _torch_rope(spec, q, tdtype), _torch_rope(spec, k, tdtype)
        if G != H:  # the reference may copy
            k, v = (t.repeat_interleave(H // G, dim=1) for t in (k, v))
        if spec.window:  # query t sees keys t - w + 1 .. t: a boolean mask of the allowed pairs
            lag = torch.arange(n)[:, None] - torch.arange(n)[None, :]
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=(lag >= 0) & (lag < spec.window), scale=scale)
        else:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
        return F.linear(a.transpose(1, 2).reshape(b, n, H * m), blk["o"], blk["bo"])

    def expert(blk, x, e=None):
        pick = (lambda key: blk[key]) if e is None else (lambda key: None if blk[key] is None else blk[key][e])
        hidden = act(F.linear(x, pick("w1"), pick("b1")))
        if spec.feedforward == "gated":
            hidden = hidden * F.linear(x, pick("w3"), pick("b3"))
        return F.linear(hidden, pick("w2"), pick("b2"))

    def feedforward(blk, x):
        if not spec.E:
            return expert(blk, x)
        # every expert on every token, weighted by the softmax over the top k scores and 0 elsewhere: the dense
        # form of the routed sum, computed independently of tfm's gather by expert
        scores = F.linear(x, t[blk["prefix"] + "ff.router"])  # (b, n, E)
        top, chosen = scores.topk(spec.k, dim=-1)
        gates = torch.zeros_like(scores).scatter(-1, chosen, torch.softmax(top, dim=-1))
        return sum(gates[..., e : e + 1] * expert(blk, x, e) for e in range(spec.E))

    def model(x):  # type: ignore[no-untyped-def]
        """(b, n, d) columns, or token ids (b, n) with a vocabulary -> (b, n, d), or logits (b, n, V)."""
        if not torch.is_floating_point(x):  # token ids: nn.Embedding's lookup, on E's transpose (V, d)
            x = F.embedding(x, t["embedding.E"].T)
            x = x * math.sqrt(d) if spec.embed_scale == "sqrt" else x
        n = x.shape[1]
        if spec.positional == "sinusoidal":
            x = x + torch.from_numpy(sinusoidal_positions(d, n).T.astype(dtype))
        elif spec.positional == "learned":
            x = x + t["positional.P"][:, :n].T
        if spec.type_vocab:
            x = x + t["embedding.T"][:, 0]
        if spec.embed_norm:
            x = norm(x, (t["embedding.norm.gamma"], t.get("embedding.norm.beta")))
        for blk in blocks:
            if spec.parallel:
                second = blk["norm1"] if spec.shared_norm else blk["norm2"]
                x = x + attention(blk, norm(x, blk["norm1"])) + feedforward(blk, norm(x, second))
            elif spec.norm == "post":
                x = norm(x + attention(blk, x), blk["norm1"])
                x = norm(x + feedforward(blk, x), blk["norm2"])
            elif spec.norm == "pre":
                x = x + attention(blk, norm(x, blk["norm1"]))
                x = x + feedforward(blk, norm(x, blk["norm2"]))
            else:
                x = x + attention(blk, x)
                x = x + feedforward(blk, x)
        if spec.norm == "pre":
            x = norm(x, (t["final_norm.gamma"], t.get("final_norm.beta")))
        if spec.V and spec.head:
            x = F.linear(x, t["embedding.E"].T if spec.tie_embeddings else t["head.W"], t.get("head.b"))
        return x

    return model


def torch_forward(spec: Spec, weights: Weights, dtype: str) -> Callable[[np.ndarray], np.ndarray] | None:
    """The same computation in PyTorch (F.linear, scaled_dot_product_attention), or None without torch.

    Takes and returns (b, d, n) arrays like tfm (or ids (b, n)); inside, PyTorch's usual (b, n, d) layout.
    """
    model = torch_model(spec, weights, dtype)
    if model is None:
        return None
    import torch

    def forward(X: np.ndarray) -> np.ndarray:
        """(b, d, n) columns, or token ids (b, n) with a vocabulary -> (b, d, n), or logits (b, V, n)."""
        with torch.inference_mode():
            if np.issubdtype(X.dtype, np.integer):
                x = torch.from_numpy(X)
            else:
                x = torch.from_numpy(np.ascontiguousarray(X.transpose(0, 2, 1), dtype=dtype))
            return model(x).numpy().transpose(0, 2, 1)

    return forward


def _torch_rope(spec: Spec, x, tdtype):  # type: ignore[no-untyped-def]
    """Rotary positions as GPT-NeoX (cat(-x2, x1)) and GPT-J (stacked pairs) write them, on x (b, H, n, m), with
    the angles in float64 (unlike transformers, which makes them in float32) and cos, sin cast to the model's dtype."""
    import torch

    rot = spec.rotated_dims
    freq = spec.rope_theta ** (-torch.arange(0, rot, 2, dtype=torch.float64) / rot)
    if spec.rope_scaling == "llama3":  # as transformers' _compute_llama3_parameters
        L, low, high, factor = (spec.rope_original_max_len, spec.rope_low_freq_factor, spec.rope_high_freq_factor,
                                spec.rope_factor)  # fmt: skip
        wavelength = 2 * torch.pi / freq
        scaled = torch.where(wavelength > L / low, freq / factor, freq)
        smooth = (L / wavelength - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        middle = ~(wavelength < L / high) & ~(wavelength > L / low)
        freq = torch.where(middle, smoothed, scaled)
    angles = torch.arange(x.shape[-2], dtype=torch.float64)[:, None] * freq[None, :]  # (n, rot/2)
    cos, sin = angles.cos().to(tdtype), angles.sin().to(tdtype)
    part, rest = x[..., :rot], x[..., rot:]
    if spec.rope_pairing == "half":
        cos, sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
        turned = torch.cat([-part[..., rot // 2 :], part[..., : rot // 2]], -1)
    else:
        cos, sin = cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)
        turned = torch.stack([-part[..., 1::2], part[..., ::2]], -1).flatten(-2)
    return torch.cat([part * cos + turned * sin, rest], -1)


@dataclass
class BenchResult:
    """Timings of one spec, batch, length and dtype: tfm, and PyTorch when it is installed."""

    spec: Spec
    b: int
    n: int
    dtype: str
    flops: dict[str, int]
    tfm_times: list[float]
    tfm_peak_bytes: int  # NumPy's peak allocation during one forward pass (tracemalloc)
    gemm_gflops: float
    torch_times: list[float] = field(default_factory=list)
    torch_threads: int | None = None
    max_rel_diff: float | None = None  # tfm's output against PyTorch's, relative to max|output|

    @property
    def total_flops(self) -> int:
        return sum(self.flops.values())

    def summary(self, times: list[float]) -> dict[str, float]:
        median = statistics.median(times)
        return {"median_s": median, "min_s": min(times), "max_s": max(times),
                "tokens_per_s": self.b * self.n / median, "gflops": self.total_flops / median / 1e9}  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        tfm = self.summary(self.tfm_times) | {"peak_bytes": self.tfm_peak_bytes}
        tfm["fraction_of_gemm_peak"] = tfm["gflops"] / self.gemm_gflops
        out: dict[str, Any] = {
            "spec": self.spec.label, "batch": self.b, "seq_len": self.n, "dtype": self.dtype,
            "repeat": len(self.tfm_times), "flops": self.total_flops, "flops_by_component": self.flops,
            "gemm_gflops": self.gemm_gflops, "blas": blas_info(), "tfm": tfm, "torch": None,
        }  # fmt: skip
        if self.torch_times:
            out["torch"] = self.summary(self.torch_times) | {"threads": self.torch_threads}
            out["ratio_tfm_over_torch"] = tfm["median_s"] / out["torch"]["median_s"]
            out["max_rel_diff"] = self.max_rel_diff
        return out


def run_bench(
    spec: Spec,
    weights: Weights,
    b: int,
    n: int,
    dtype: str = "float32",
    repeat: int = 5,
    torch: bool = True,
    progress: Callable[[str], None] | None = None,
) -> BenchResult:
    """Time tfm's forward (and PyTorch's on the same weights and input, interleaved) after a warm-up."""
    say = progress or (lambda _: None)
    X = np.random.default_rng(0).standard_normal((b, spec.d, n)).astype(dtype)
    model = Transformer(spec, weights, dtype)
    say("measuring NumPy's GEMM peak")
    peak = gemm_gflops(dtype)
    tracemalloc.start()
    y = model(X)
    tfm_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    reference = torch_forward(spec, weights, dtype) if torch else None
    result = BenchResult(spec, b, n, dtype, forward_flops(spec, b, n), [], tfm_peak, peak)
    if reference is not None:
        import torch as torch_module

        result.torch_threads = torch_module.get_num_threads()
        y_torch = reference(X)
        result.max_rel_diff = float(np.max(np.abs(y.astype(np.float64) - y_torch)) / np.max(np.abs(y)))
    for i in range(repeat + 1):  # interleaved, so a noisy neighbour slows both alike; the first is a warm-up
        say(f"repeat {i}/{repeat}")
        result.tfm_times += timings(lambda: model(X), 1, warmup=0)
        if reference is not None:
            result.torch_times += timings(lambda: reference(X), 1, warmup=0)
    result.tfm_times, result.torch_times = result.tfm_times[1:], result.torch_times[1:]
    return result
