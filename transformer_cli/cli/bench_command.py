"""`tfm bench`: time the forward pass, beside NumPy's own GEMM peak."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import TfmError
from .common import (
    COST_DTYPE,
    DTypeOpt,
    JsonOpt,
    MaxMemoryOpt,
    SeedOpt,
    SpecArg,
    WeightsOpt,
    app,
    handled,
    load,
    out,
    print_json,
    progress_bar,
    say_mode,
    spec_json,
    weights_of,
)


@app.command()
def bench(
    spec_path: SpecArg = None,
    seq_len: Annotated[int, typer.Option("--seq-len", "-n", min=1, help="Tokens per sequence.")] = 512,
    batch: Annotated[int, typer.Option("--batch", "-b", min=1, help="Sequences per forward pass.")] = 1,
    dtype: DTypeOpt = COST_DTYPE,
    repeat: Annotated[int, typer.Option("--repeat", "-k", min=1, help="Timed forward passes after a warm-up.")] = 5,
    weights: WeightsOpt = None,
    seed: SeedOpt = 0,
    torch: Annotated[bool, typer.Option("--torch/--no-torch", hidden=True)] = False,  # before PyTorch left the package
    max_memory: MaxMemoryOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Time the forward pass: median and spread, tokens/s, GFLOP/s and peak memory.

    GFLOP/s counts the matrix products (a multiply-add is 2 FLOPs), set against NumPy's own GEMM throughput
    measured in the same run. tfm never imports PyTorch: benchmarks/peers.py times tfm beside PyTorch eager,
    torch.compile, JAX and ONNX Runtime on the same weights.

    \b
    In the tfm checkout:
      pip install -e '.[bench]' && python benchmarks/peers.py

    \b
    Example:
      tfm bench examples/configs/attention-is-all-you-need-base.yaml --seq-len 512 --batch 8 --dtype float32
    """
    from ..analysis.modes import mode_for
    from ..spec.load import check_length
    from ..tasks.bench import run_bench
    from ..tasks.runner import get_weights, lazy_weights
    from . import render

    with handled(json_out):
        if torch:
            raise TfmError(
                "--torch: tfm bench no longer runs PyTorch (tfm never imports it); python benchmarks/peers.py in the "
                "tfm checkout times tfm beside PyTorch, torch.compile, JAX and ONNX Runtime"
            )
        spec, _ = load(spec_path, weights)
        weights = weights_of(spec_path, weights)
        check_length(spec, seq_len, "--seq-len")
        lazy = lazy_weights(spec, weights)  # a checkpoint: held as the memory allows, as `tfm run` holds it
        mode = mode_for(spec, lazy, batch, seq_len, dtype.value, max_memory, "this benchmark")
        say_mode(mode)
        w = lazy if lazy is not None else get_weights(spec, weights, seed)[0]
        with progress_bar(json_out) as progress:
            task = progress.add_task("benchmarking", total=repeat + 2)
            result = run_bench(
                spec,
                w,
                batch,
                seq_len,
                dtype.value,
                repeat,
                lambda what: progress.update(task, advance=1, description=what),
                mode=mode,
            )
    data = result.to_dict() | spec_json(spec)
    if json_out:
        print_json(data)
    else:
        out.print(render.bench_table(data))
