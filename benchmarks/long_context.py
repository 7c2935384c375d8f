"""Causal prefill at long contexts, tfm beside PyTorch's fused attention (issue 26, item 1), and where tfm's time goes.

    env -u OPENBLAS_CORETYPE python benchmarks/long_context.py [--quick] [--json benchmarks/long_context.json]

The model is a small LLaMA-style stack (2 blocks, d 256, 4 heads of 64, 2 key/value heads, r 704, rotary, RMSNorm,
SwiGLU), batch 1, float32, n = 1k, 4k, 16k and 32k. The peer is PyTorch eager on the same weights
(tests/torch_reference.py): F.scaled_dot_product_attention with is_causal and enable_gqa (its fused CPU kernel,
flash attention's blocking), the rotary tables made once per length as tfm's are, 2 threads. Rounds are
interleaved (tfm, PyTorch, tfm, ...), each call 0.2 s after the last; the ratio is taken per round (tfm's time over
PyTorch's in that round) and reported as its median with the lowest and highest. Outputs agree to 1e-5.

The profile times tfm's attention kernel alone at 16k (one block's attention, in one thread, BLAS on 2) by kind of
work: the two products (scores K^T Q and outputs V P), the exponentials, and the rest (the maximum, the sums, the
subtraction, the masks, the rescaling), so the distance to the fused kernel is seen where it lies. tfm's extra
memory is the peak NumPy allocation of a pass (tracemalloc) beyond the weights and the input.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from transformer_cli import Spec, Transformer, init_weights

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

SPEC = Spec(
    N=2,
    H=4,
    G=2,
    m=64,
    d=256,
    r=704,
    scale="sqrt",
    mask="causal",
    positional="rope",
    norm="pre",
    norm_type="rmsnorm",
    feedforward="gated",
    activation="silu",
    ff_bias=False,
    name="long-llama",
)
LENGTHS = {1024: 7, 4096: 5, 16384: 3, 32768: 3}
# --tinyllama: TinyLlama's blocks (d 2048, 32 heads of 64, 4 key/value heads, r 5632; 4 blocks, no head) at 16k
TINYLLAMA = Spec(
    N=4,
    H=32,
    G=4,
    m=64,
    d=2048,
    r=5632,
    scale="sqrt",
    mask="causal",
    positional="rope",
    norm="pre",
    norm_type="rmsnorm",
    feedforward="gated",
    activation="silu",
    ff_bias=False,
    name="tinyllama-blocks",
)
PAUSE = 0.2


def peers(weights, spec: Spec = SPEC):  # type: ignore[no-untyped-def]
    import torch
    from torch_reference import torch_model

    torch.set_num_threads(2)
    model = torch_model(spec, weights, "float32", native_gqa=True, cached_rope=True)
    tfm = Transformer(spec, weights, "float32")

    def theirs(X: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return model(torch.from_numpy(np.ascontiguousarray(X.T[None]))).numpy()[0].T

    return {"tfm": lambda X: tfm(X[None])[0], "PyTorch SDPA": theirs}


def extra_memory(weights, X: np.ndarray, spec: Spec = SPEC) -> int:  # type: ignore[no-untyped-def]
    """The peak bytes NumPy allocates during one pass of tfm (the model built before: its weights not counted)."""
    model = Transformer(spec, weights, "float32")
    tracemalloc.start()
    try:
        model(X[None])
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def profile(n: int) -> dict[str, float]:
    """Seconds of tfm's attention kernel at n by kind of work (one thread; BLAS on its own threads)."""
    from peer_models import timer

    import transformer_cli.kernels as kernels

    rng = np.random.default_rng(0)
    H, G, m = SPEC.H, SPEC.kv_heads, SPEC.m
    Q, K, V = (rng.standard_normal((1, heads, m, n)).astype(np.float32) for heads in (H, G, G))
    spent = dict.fromkeys(("scores K^T Q (GEMM)", "outputs V P (GEMM)", "exp"), 0.0)
    real = {name: getattr(np, name) for name in ("matmul", "exp")}
    counter = {"products": 0}

    timed = timer(spent)

    def matmul(a, b, *args, **kwargs):  # type: ignore[no-untyped-def]
        counter["products"] += 1  # scores and outputs alternate, a block at a time
        kind = "scores K^T Q (GEMM)" if counter["products"] % 2 else "outputs V P (GEMM)"
        return timed(kind, real["matmul"])(a, b, *args, **kwargs)

    start = time.perf_counter()
    np.matmul, np.exp = matmul, timed("exp", real["exp"])
    try:
        kernels.attend(Q, K, V, kernels.Attend(m**-0.5, causal=True))
    finally:
        for name, fn in real.items():
            setattr(np, name, fn)
    total = time.perf_counter() - start
    spent["the rest: max, sums, subtraction, masks, rescaling"] = total - sum(spent.values())
    return {"total": total, **spent}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds a length, up to 16k")
    parser.add_argument("--tinyllama", action="store_true", help="TinyLlama's blocks at n = 16k, 1 round, no profile")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    spec = TINYLLAMA if args.tinyllama else SPEC
    weights = init_weights(spec)
    fns = peers(weights, spec)
    results: dict = {"spec": spec.name, "lengths": {}}
    lengths = {n: 2 for n in LENGTHS if n <= 16384} if args.quick else LENGTHS
    lengths = {16384: 1} if args.tinyllama else lengths
    for n, rounds in lengths.items():
        X = np.random.default_rng(0).standard_normal((spec.d, n)).astype(np.float32)
        ys = {name: fn(X) for name, fn in fns.items()}  # (the warm-up round)
        agree = float(np.max(np.abs(ys["tfm"] - ys["PyTorch SDPA"])) / np.max(np.abs(ys["PyTorch SDPA"])))
        times: dict[str, list[float]] = {name: [] for name in fns}
        for _ in range(rounds):
            for name, fn in fns.items():
                time.sleep(PAUSE)
                start = time.perf_counter()
                fn(X)
                times[name].append(time.perf_counter() - start)
        ratios = [a / b for a, b in zip(times["tfm"], times["PyTorch SDPA"], strict=True)]
        row = {"times": times, "ratios": ratios, "agreement": agree, "tfm_extra_bytes": extra_memory(weights, X, spec)}
        results["lengths"][n] = row
        print(
            f"n = {n:6}: tfm {statistics.median(times['tfm']):7.3f} s, PyTorch SDPA "
            f"{statistics.median(times['PyTorch SDPA']):7.3f} s, tfm / PyTorch {statistics.median(ratios):.2f} "
            f"({min(ratios):.2f}..{max(ratios):.2f}), agree {agree:.1e}, tfm's extra memory "
            f"{row['tfm_extra_bytes'] / 2**20:.0f} MiB",
            flush=True,
        )
    if args.tinyllama:
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n")
        return
    results["profile_16k"] = profile(16384)
    total = results["profile_16k"]["total"]
    print("tfm's attention kernel at n = 16384 (one block's attention, one thread), by kind of work:")
    for kind, seconds in results["profile_16k"].items():
        if kind != "total":
            print(f"  {kind:42} {seconds:6.3f} s ({seconds / total:4.0%})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
