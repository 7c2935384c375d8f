"""Run every performance target of tfm and print one table: tfm beside PyTorch (tests/torch_reference.py), measured
in the same run.

    python benchmarks/run.py            # all targets (about 3 minutes on 2 cores)
    python benchmarks/run.py --quick    # fewer repeats
    python benchmarks/run.py --json results.json

PyTorch is optional: pip install -e '.[bench]' (a CPU build of torch 2.13.0).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from transformer_cli import Spec, init_weights
from transformer_cli.analysis.memory import human
from transformer_cli.tasks.bench import run_bench

sys.path.insert(
    0, str(Path(__file__).resolve().parent.parent / "tests")
)  # the PyTorch model the tests check tfm against

BENCH_SPEC = Spec(N=6, H=8, m=64, d=512, r=2048, scale="sqrt", name="bench")
LONG_SPEC = Spec(N=2, H=4, m=64, d=256, r=1024, name="long")
LLAMA_SPEC = Spec(
    N=4,
    H=8,
    G=2,
    m=64,
    d=512,
    r=1408,
    scale="sqrt",
    mask="causal",
    positional="rope",
    norm="pre",
    norm_type="rmsnorm",
    feedforward="gated",
    activation="silu",
    ff_bias=False,
    name="llama-style",
)
ROOT = Path(__file__).resolve().parent.parent

MEMORY_SCRIPT = """
import sys, numpy as np
from transformer_cli import Spec, Transformer, init_weights
from transformer_cli import kernels
mask, chunk_bytes, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if chunk_bytes >= 1 << 40:  # one chunk: also without the causal cap on queries per chunk
    kernels.CAUSAL_CHUNK = 1 << 40
spec = Spec(N=2, H=4, m=64, d=256, r=1024, mask=mask)
X = np.random.default_rng(0).standard_normal((256, 16384)).astype(np.float32)
Y = Transformer(spec, init_weights(spec), np.float32, chunk_bytes=chunk_bytes)(X)
np.save(out, Y)
# VmHWM: this process image's peak resident memory (ru_maxrss would include the parent's, inherited at fork)
print(next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:")))
"""


def _pytorch(spec: Spec, weights: dict, dtype: str):  # type: ignore[no-untyped-def]
    """("PyTorch", its forward of (b, d, n) arrays) from tests/torch_reference.py, or None without PyTorch."""
    try:
        from torch_reference import torch_forward
    except ImportError:
        return None
    return "PyTorch", torch_forward(spec, weights[spec.name], dtype)


def throughput(repeat: int, console: Console) -> list[dict]:
    """Target 1: the bench spec at n = 512, batch 1 and 8, float32 and float64, beside PyTorch; then a
    LLaMA-style spec (GQA, RoPE, SwiGLU, RMSNorm) at batch 1 and 8 in float32."""
    rows = []
    cases = [(BENCH_SPEC, dtype, b) for dtype in ("float32", "float64") for b in (1, 8)]
    cases += [(LLAMA_SPEC, "float32", b) for b in (1, 8)]
    weights = {spec.name: init_weights(spec) for spec in (BENCH_SPEC, LLAMA_SPEC)}
    for spec, dtype, b in cases:
        console.log(f"throughput: {spec.name}, batch {b}, {dtype}")
        rows.append(
            run_bench(spec, weights[spec.name], b, 512, dtype, repeat, peer=_pytorch(spec, weights, dtype)).to_dict()
        )
    return rows


def long_sequences(console: Console, tmp: Path) -> list[dict]:
    """Target 2: n = 16384 in float32, chunked (default) and as one chunk, peak RSS of a fresh process each."""
    rows = []
    for mask in ("none", "causal"):
        outputs = {}
        for label, chunk_bytes in (("chunked (64 MiB)", 64 << 20), ("one chunk", 1 << 40)):
            console.log(f"memory: n = 16384, mask {mask}, {label}")
            out = tmp / f"y-{mask}-{chunk_bytes}.npy"
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", MEMORY_SCRIPT, mask, str(chunk_bytes), str(out)],
                capture_output=True,
                text=True,
                check=True,
            )
            seconds = time.perf_counter() - start
            outputs[label] = np.load(out)
            rows.append({"mask": mask, "path": label, "peak_rss_bytes": int(done.stdout.strip()), "seconds": seconds})
        a, b = outputs.values()
        rows[-1]["max_rel_diff"] = rows[-2]["max_rel_diff"] = float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
    return rows


def median_seconds(commands: dict[str, list[str]], k: int) -> dict[str, float]:
    """Median wall time of each command over k rounds after one warm-up, interleaved so noise hits them alike.

    Bytecode caching is on, as in a normal install (a sandbox that sets PYTHONDONTWRITEBYTECODE would make
    every run recompile tfm's modules, which no user's machine does).
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(k + 1):
        for name, cmd in commands.items():
            start = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
            if round_ == 0:
                continue
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def commands(k: int, console: Console) -> dict:
    """Targets 3 and 4: the checks' wall time, and start-up against importing tfm's own dependencies."""
    console.log("checks and start-up")
    tfm = [sys.executable, "-m", "transformer_cli"]
    spec = str(ROOT / "examples" / "configs" / "gpt2-small.yaml")
    return median_seconds(
        {
            "import_baseline_s": [sys.executable, "-c", "import typer, rich.table, yaml, numpy"],
            "help_s": [*tfm, "--help"],
            "count_s": [*tfm, "count", spec],
            "verify_equivariance_s": [*tfm, "verify-equivariance"],
            "verify_s": [*tfm, "verify"],
        },
        k,
    )


def report(results: dict, console: Console) -> None:
    table = Table(title=f"tfm benchmarks on {results['machine']}", title_justify="left")
    for col in ("target", "tfm", "PyTorch", "tfm / PyTorch", "GFLOP/s", "of GEMM peak", "peak memory"):
        table.add_column(col, justify="left" if col == "target" else "right")
    for r in results["throughput"]:
        torch = r.get("peer")
        table.add_row(
            f"{r['spec']}: batch {r['batch']}, n = {r['seq_len']}, {r['dtype']}",
            f"{r['tfm']['median_s'] * 1e3:.0f} ms",
            f"{torch['median_s'] * 1e3:.0f} ms" if torch else "-",
            f"{r['ratio_tfm_over_peer']:.2f}" if torch else "-",
            f"{r['tfm']['gflops']:.0f}",
            f"{r['tfm']['fraction_of_gemm_peak']:.2f}",
            human(r["tfm"]["peak_bytes"]),
        )
    table.add_section()
    for r in results["long"]:
        table.add_row(
            f"n = 16384 float32, mask {r['mask']}, {r['path']}",
            f"{r['seconds']:.1f} s (process)",
            "",
            "",
            "",
            "",
            f"{human(r['peak_rss_bytes'])} RSS",
        )
    table.add_section()
    c = results["commands"]
    table.add_row(
        "tfm verify-equivariance (default spec)", f"{c['verify_equivariance_s'] * 1e3:.0f} ms", "", "", "", "", ""
    )
    table.add_row("tfm verify (default spec)", f"{c['verify_s'] * 1e3:.0f} ms", "", "", "", "", "")
    base = c["import_baseline_s"]
    table.add_row(
        "tfm --help / import typer, rich.table, yaml, numpy", f"{c['help_s'] / base:.2f}x", "", "", "", "", ""
    )
    table.add_row("tfm count SPEC / the same imports", f"{c['count_s'] / base:.2f}x", "", "", "", "", "")
    diffs = {r["mask"]: r["max_rel_diff"] for r in results["long"]}
    table.caption = (
        f"GEMM peak (NumPy, 2048^3): float32 {results['throughput'][0]['gemm_gflops']:.0f}, float64 "
        f"{results['throughput'][2]['gemm_gflops']:.0f} GFLOP/s. Chunked vs one chunk at n = 16384: max "
        f"rel diff {diffs['none']:.1e} (no mask), {diffs['causal']:.1e} (causal)."
    )
    console.print(table)


def machine() -> str:
    """This machine in one line, for a table's title."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, NumPy {np.__version__}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 7")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()
    console = Console(stderr=True)
    repeat = 3 if args.quick else 7
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"tfm-bench-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    results = {
        "machine": machine(),
        "throughput": throughput(repeat, console),
        "long": long_sequences(console, tmp),
        "commands": commands(3 * repeat, console),
    }
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()
    report(results, Console())
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
