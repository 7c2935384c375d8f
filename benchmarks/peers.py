"""tfm beside every peer a user could pick, for prefill and for decoding, measured in one run (issue 15).

    pip install -e '.[bench]'     # PyTorch, JAX and ONNX Runtime (each optional: a missing one is skipped)
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/peers.py [--quick] [--json results.json]

Peers, on the same weights and input:
- PyTorch eager: the spec's model with F.linear and scaled_dot_product_attention (transformer_cli.tasks.bench);
- torch.compile of the same function (compilation left out of the times);
- JAX with jit: the model written in jax.numpy below, its softmax by hand (jax.nn.dot_product_attention computes
  the softmax in float32 even for float64 input);
- ONNX Runtime: PyTorch's model exported with torch.onnx.export, all graph optimisations, 2 intra-op threads;
- tfm's floor: the time of tfm's own matrix products alone, the same shapes and layouts replayed back to back.
At batch 1 a second table profiles tfm's pass: its time by kind of work (projections, attention's own products,
softmax, norms, ...) and the products' GFLOP/s, which is where the distance to the fastest peer lies.
Each peer's output is checked against tfm's first (1e-5 in float32, 1e-12 in float64, relative to max |output|);
then every peer runs once per round, rounds interleaved, so a noisy neighbour slows them alike, each call 0.2 s
after the last (another library's threads spin for a while after its call and slow whatever runs next).

The PyTorch peers (and ONNX's export of them) use SDPA's own grouped heads (enable_gqa) and rotary tables made once
per length, as a competent user writes them; JAX's float32 causal prefill is jax.nn.dot_product_attention with
is_causal. Besides the two small specs at n = 512, TinyLlama's blocks (d 2048, H 32, G 4, r 5632, 4 blocks) at
n = 512 and 2048, batch 1, float32 (longer contexts: benchmarks/long_context.py). Ratios are taken round by round
(tfm's time over the peer's in the same round) and given as median (lowest..highest).

Decoding: 256 columns one at a time after a 512-column prompt, with the KV cache: tfm's Decoder (prefill, then
steps), PyTorch eager with a cache allocated once and written in place, torch.compile of a step over a static
cache (the gpt-fast way), and JAX with a jitted step over a fixed-size cache; each built and compiled once, the
rounds interleaved, each round on a fresh cache. Only the steps are timed; the bytes a step reads (the weights and
the cache) over its time are set against this machine's copy bandwidth. Generation from token ids beside
transformers' generate is benchmarks/generate.py.

The BLAS: OPENBLAS_CORETYPE forces OpenBLAS's kernel (some machines set it; it is unset above for this command
only): the table names the kernel used and warns when it is below what the CPU runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from transformer_cli import init_weights
from transformer_cli.analysis.hardware import probe
from transformer_cli.tasks.bench import blas_info, gemm_gflops

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))  # the PyTorch model the tests check tfm against
from peer_decoders import jax_decoder, tfm_decoder, torch_compiled_decoder, torch_decoder  # noqa: E402
from peer_models import (  # noqa: E402
    DECODE_PEER,
    PROFILE,
    PROMPT,
    STEPS,
    TOLERANCE,
    floor_prefill,
    jax_prefill,
    onnx_prefill,
    profile_prefill,
    tfm_prefill,
    torch_prefill,
)
from run import BENCH_SPEC, LLAMA_SPEC, machine, median_seconds  # noqa: E402

# TinyLlama's blocks (d 2048, 32 heads of 64, 4 key/value heads, r 5632), 4 of them, without its embedding and
# head (V = 32000: the peers here take columns; the head is one product, the same for each)
TINYLLAMA_SPEC = replace(LLAMA_SPEC, N=4, H=32, G=4, m=64, d=2048, r=5632, name="tinyllama-blocks")
PAUSE = 0.2  # seconds between calls: the previous library's threads stop spinning on the other core


def interleaved(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """Seconds of each function over `rounds` rounds, one call of each per round, after one warm-up round. Each
    call starts PAUSE after the last: right after another library's call, its threads still spin on the second
    core (PyTorch's OpenMP, ONNX Runtime's pool, OpenBLAS's), which slowed the next call 1.2-1.4x here."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for round_ in range(rounds + 1):
        for name, fn in fns.items():
            time.sleep(PAUSE)
            start = time.perf_counter()
            fn()
            if round_:
                times[name].append(time.perf_counter() - start)
    return times


def _agree(y: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(y, np.float64) - reference)) / np.max(np.abs(reference)))


def prefill_case(spec, dtype: str, b: int, rounds: int, console: Console, n: int = PROMPT) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    weights = init_weights(spec)
    X = np.random.default_rng(0).standard_normal((b, spec.d, n)).astype(dtype)
    builders = {
        "tfm": lambda: tfm_prefill(spec, weights, dtype),
        "PyTorch eager": lambda: torch_prefill(spec, weights, dtype),
        "torch.compile": lambda: torch_prefill(spec, weights, dtype, compiled=True),
        "JAX jit": lambda: jax_prefill(spec, weights, dtype),
        "ONNX Runtime": lambda: onnx_prefill(spec, weights, dtype, X),
    }
    reference = np.asarray(tfm_prefill(spec, weights, dtype)(X), np.float64)
    peers, notes = {}, {}
    for name, build in builders.items():
        console.log(f"prefill {spec.name} n={n} b={b} {dtype}: {name}")
        try:
            fn = build()
        except Exception as exc:  # noqa: BLE001 - a peer that cannot build this model is reported, not fatal
            notes[name] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            continue
        if fn is None:
            notes[name] = "not installed (or this spec is not written for it)"
            continue
        error = _agree(fn(X), reference)
        if not error <= TOLERANCE[dtype]:
            notes[name] = f"disagrees: {error:.2g} > {TOLERANCE[dtype]:g}"
            continue
        peers[name] = (fn, error)
    floor = floor_prefill(spec, weights, dtype, X)
    times = interleaved(
        {name: (lambda f=f: f(X)) for name, (f, _) in peers.items()} | {"floor": lambda: floor(X)}, rounds
    )
    profile = profile_prefill(spec, weights, dtype, X, rounds) if b == 1 else None
    return {
        "spec": spec.name,
        "batch": b,
        "dtype": dtype,
        "n": n,
        "notes": notes,
        "profile": profile,
        "agreement": {name: error for name, (_, error) in peers.items()},
        "times": times,
    }


DECODERS = (
    ("tfm", tfm_decoder),
    (DECODE_PEER, torch_decoder),
    ("torch.compile (static cache)", torch_compiled_decoder),
    ("JAX jit", jax_decoder),
)


def decode_case(spec, dtype: str, b: int, rounds: int, console: Console, bandwidth: float) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Each decoder built (and compiled) once; then per round, peers interleaved: its cache reset, the prompt
    through it, and its STEPS steps timed."""
    weights = init_weights(spec)
    X = np.random.default_rng(0).standard_normal((b, spec.d, PROMPT + STEPS)).astype(dtype)
    out: dict[str, Any] = {
        "spec": spec.name,
        "batch": b,
        "dtype": dtype,
        "prompt": PROMPT,
        "steps": STEPS,
        "times": {},
        "notes": {},
        "agreement": {},
    }
    built = {}
    for name, build in DECODERS:
        console.log(f"decoding {spec.name} b={b} {dtype}: building {name}")
        try:
            made = build(spec, weights, dtype, b)
        except Exception as exc:  # noqa: BLE001 - a peer that cannot build this model is reported, not fatal
            out["notes"][name] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            continue
        if made is None:
            out["notes"][name] = "not installed (or this spec is not written for it)"
            continue
        built[name] = made
    outputs: dict[str, np.ndarray] = {}
    times: dict[str, list[float]] = {name: [] for name in built}
    for _ in range(rounds):
        for name, (prefill, step, reset) in built.items():
            reset()
            prefill(X[..., :PROMPT])
            time.sleep(PAUSE)
            start = time.perf_counter()
            steps = [step(X[..., t : t + 1]) for t in range(PROMPT, PROMPT + STEPS)]
            times[name].append(time.perf_counter() - start)
            outputs[name] = np.concatenate([np.asarray(s, np.float64) for s in steps], -1)  # (b, d, steps)
    reference = outputs.get("tfm")
    for name, y in outputs.items():
        out["agreement"][name] = error = _agree(y, reference) if reference is not None else float("nan")
        if not error <= TOLERANCE[dtype]:
            out["notes"][name] = f"disagrees: {error:.2g} > {TOLERANCE[dtype]:g}"
            continue
        out["times"][name] = times[name]
    from transformer_cli.analysis.decode import weights_read
    from transformer_cli.analysis.kv_cache import kv_cache_bytes

    size = {"float32": "float32", "float64": "float32"}[dtype]  # bytes per element below are float32's
    per_step = weights_read(spec, b, size) + kv_cache_bytes(spec, b, PROMPT + STEPS // 2, dtype)
    out["bytes_per_step"] = per_step
    out["copy_bandwidth"] = bandwidth
    return out


PREFILL_PEERS = ("PyTorch eager", "torch.compile", "JAX jit", "ONNX Runtime")
DECODE_COLUMNS = {"PyTorch eager": DECODE_PEER, "torch.compile": "torch.compile (static cache)", "JAX jit": "JAX jit"}


def per_round(ours: list[float], theirs: list[float]) -> str:
    """tfm's time over the peer's, round by round (the same round's calls): median (lowest..highest)."""
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f})"


def report(results: dict[str, Any], console: Console) -> None:
    blas = results["blas"]
    table = Table(
        title=f"tfm beside its peers on {results['machine']} (median ms; decoding: tokens/s)", title_justify="left"
    )
    for col in ("case", "tfm", *PREFILL_PEERS, "tfm's GEMMs", "tfm / fastest", "tfm / GEMMs"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for case in results["prefill"]:
        med = {k: statistics.median(v) * 1e3 for k, v in case["times"].items()}
        peers = {k: v for k, v in med.items() if k in PREFILL_PEERS}
        fastest = min(peers, key=peers.__getitem__, default=None)
        table.add_row(
            f"prefill {case['spec']} n={case['n']} b={case['batch']} {case['dtype']}",
            f"{med['tfm']:.1f}",
            *(f"{med[k]:.1f}" if k in med else "-" for k in PREFILL_PEERS),
            f"{med['floor']:.1f}",
            per_round(case["times"]["tfm"], case["times"][fastest]) if fastest else "-",
            per_round(case["times"]["tfm"], case["times"]["floor"]),
        )
    table.add_section()
    for case in results["decode"]:
        tps = {k: case["steps"] / statistics.median(v) for k, v in case["times"].items()}
        peers = [tps.get(DECODE_COLUMNS.get(k, "")) for k in PREFILL_PEERS]
        fastest = max((k for k in tps if k != "tfm"), key=tps.__getitem__, default=None)
        table.add_row(
            f"decode {case['spec']} b={case['batch']} {case['dtype']}",
            f"{tps['tfm']:.0f}",
            *(f"{x:.0f}" if x else "-" for x in peers),
            "",
            per_round(case["times"]["tfm"], case["times"][fastest]) if fastest else "-",
            "",
        )
    table.add_section()
    c = results["commands"]
    base = c["import_baseline_s"]
    for name, key in (("tfm --help", "help_s"), ("tfm count SPEC", "count_s")):
        table.add_row(f"start-up: {name} / the imports", f"{c[key] / base:.2f}x", *[""] * 7)
    notes = [
        f"NumPy's BLAS: {blas['library']} {blas['version']}, kernel {blas['kernel']}, {blas['threads']} threads; "
        f"GEMM peak float32 {results['gemm_gflops']['float32']:.0f}, float64 "
        f"{results['gemm_gflops']['float64']:.0f} GFLOP/s. Decoding: {STEPS} steps after a {PROMPT}-column "
        "prompt; PyTorch eager with its cache written in place, torch.compile a step over a static cache, JAX a "
        "jitted step on a fixed-size cache. tfm / fastest: tfm's time over the fastest peer's (by median), "
        "round by round: median (lowest..highest)."
    ]
    for case in results["decode"]:
        read = case["bytes_per_step"] * case["steps"] / statistics.median(case["times"]["tfm"]) / 1e9
        notes.append(
            f"decode {case['spec']}: tfm reads {read:.1f} GB/s (weights and cache), this machine copies "
            f"{case['copy_bandwidth'] / 1e9:.1f} GB/s"
        )
    notes.append(
        f"start-up: import typer, rich.table, yaml, numpy takes {base * 1e3:.0f} ms; tfm --help "
        f"{c['help_s'] * 1e3:.0f} ms, tfm count {c['count_s'] * 1e3:.0f} ms"
    )
    if blas["warning"]:
        notes.append(f"warning: {blas['warning']}")
    for case in results["prefill"] + results["decode"]:
        for name, note in case["notes"].items():
            notes.append(f"{case['spec']} b={case['batch']} {case['dtype']}: {name} {note}")
    table.caption = "\n".join(notes)
    table.caption_justify = "left"
    console.print(table)
    profiled = [case for case in results["prefill"] if case.get("profile")]
    if profiled:
        console.print(profile_table(profiled))


def profile_table(cases: list[dict[str, Any]]) -> Table:
    """Where tfm's prefill time goes at batch 1: ms a pass by kind of work, and the GEMMs' GFLOP/s."""
    table = Table(
        title="Where tfm's prefill time goes at b=1 (ms a pass, instrumented; GEMMs in GFLOP/s)", title_justify="left"
    )
    table.add_column("kind of work")
    for case in cases:
        table.add_column(f"{case['spec']} {case['dtype']}", justify="right")
    for kind in (*PROFILE, "other"):
        cells = []
        for case in cases:
            p = case["profile"]
            rate = f", {p['gflops'][kind]:.0f} GFLOP/s" if kind in p["gflops"] else ""
            cells.append(f"{p['ms'][kind]:.1f} ({p['ms'][kind] / p['total_ms']:.0%}{rate})")
        table.add_row(kind, *cells)
    table.add_section()
    table.add_row("the pass", *(f"{case['profile']['total_ms']:.1f}" for case in cases))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 7")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()
    console = Console(stderr=True)
    rounds = 3 if args.quick else 7
    here = probe()
    results: dict[str, Any] = {
        "machine": machine(),
        "blas": blas_info(),
        "gemm_gflops": {dtype: gemm_gflops(dtype) for dtype in ("float32", "float64")},
        "prefill": [
            prefill_case(spec, dtype, b, rounds, console)
            for spec in (BENCH_SPEC, LLAMA_SPEC)
            for dtype in ("float32", "float64")
            for b in (1, 8)
        ]
        + [prefill_case(TINYLLAMA_SPEC, "float32", 1, rounds, console, n) for n in (512, 2048)],
        "decode": [
            decode_case(spec, "float32", 1, rounds, console, here.bandwidth)
            for spec in (replace(BENCH_SPEC, mask="causal"), LLAMA_SPEC)
        ],
    }
    tfm = [sys.executable, "-m", "transformer_cli"]
    spec_file = str(Path(__file__).parent.parent / "examples" / "configs" / "gpt2-small.yaml")
    console.log("start-up")
    results["commands"] = median_seconds(
        {
            "import_baseline_s": [sys.executable, "-c", "import typer, rich.table, yaml, numpy"],
            "help_s": [*tfm, "--help"],
            "count_s": [*tfm, "count", spec_file],
        },
        3 * rounds,
    )
    report(results, Console())
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
