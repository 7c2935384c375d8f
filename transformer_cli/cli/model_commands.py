"""`tfm init` and `tfm run`. Each imports the core it needs when it runs, so start-up stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import (
    RUN_DTYPE,
    DType,
    ForceOpt,
    JsonOpt,
    MaxMemoryOpt,
    RunDTypeOpt,
    SeedOpt,
    SpecArg,
    TargetOpt,
    WeightsOpt,
    app,
    busy,
    check_npy_output,
    err,
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
def init(
    spec_path: SpecArg = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the weights (.npz or .safetensors).")
    ] = Path("weights.npz"),
    seed: SeedOpt = 0,
    max_memory: MaxMemoryOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Write seeded float64 weights for a spec: .npz, or .safetensors with the spec in its metadata (README).

    For a Hugging Face config, an output without those extensions is a Hugging Face folder (config.json and
    model.safetensors in float32) that tfm and transformers load.

    \b
    Examples:
      tfm init examples/configs/tiny-causal.yaml --seed 1 -o weights.npz
      tfm init examples/hf/tiny-llama -o tiny-llama
    """
    from ..api.writing import init as write

    with handled(json_out):
        load(spec_path)  # (said on stderr: where the spec came from, unless named)
        with busy("initialising weights", json_out):
            written = write(spec_path, output, seed, force, max_memory)
    spec = written.spec
    data = spec_json(spec) | written.to_dict()  # (what tfm.init returns)
    if json_out:
        print_json(data)
    else:
        from ..text import escaped as shown

        msg = f"wrote {data['tensors']} tensors, {data['parameters']:,} parameters (seed {seed}) to {shown(output)}"
        out.print(msg, highlight=False)


@app.command()
def run(
    spec_path: SpecArg = None,
    input_path: Annotated[
        Path,
        typer.Option(
            "--input",
            "-i",
            help="Input .npy: integer token ids (n,) or (b, n) for a model with a "
            "vocabulary, or columns (d, n) or (b, d, n), one column per token.",
        ),
    ] = ...,  # type: ignore[assignment]
    target: TargetOpt = None,
    weights: WeightsOpt = None,
    seed: SeedOpt = 0,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            help="Write the output .npy: columns (d, n) or (b, d, n); with a head, the logits (V, n) or (b, V, n).",
        ),
    ] = None,
    dtype: RunDTypeOpt = None,
    max_memory: MaxMemoryOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Run the forward pass on a saved input and show how the signal evolves through the blocks.

    A model with a vocabulary (a Hugging Face folder) takes integer token ids (make some with tfm sample) and
    gives the logits, one column of V per token; the seed's stack takes and gives columns (d, n).

    \b
    Examples:
      tfm run --input x.npy -o y.npy   (x.npy of shape (32, n) for the default spec)
      tfm run ./tiny-llama --input ids.npy -o logits.npy
    """
    from ..io.arrays import save_npy
    from ..io.outputs import check_output_path
    from ..tasks.runner import run_forward
    from ..text import escaped as shown
    from . import render

    with handled(json_out):
        spec, _ = load(spec_path, weights)
        weights = weights_of(spec_path, weights)
        dtype = dtype or (DType.float32 if weights is not None and weights.is_dir() else RUN_DTYPE)
        check_npy_output(output)
        if output is not None:
            check_output_path(output, [p for p in (spec_path, input_path, weights, target) if p], force)
        with progress_bar(json_out) as progress:
            task = progress.add_task("forward pass", total=1.0)
            result = run_forward(
                spec,
                input_path,
                weights,
                seed,
                dtype.value,
                max_memory,
                lambda step: progress.advance(task, step),
                target,
            )
        if output is not None:
            save_npy(output, result.output, overwrite=force)
    say_mode(result.mode)
    for note in result.notes:
        err.print(f"note: {shown(note)}", soft_wrap=True)
    data = result.to_dict() | {"output": str(output) if output else None}
    if json_out:
        print_json(data)
    else:
        out.print(render.run_table(result))
        if output is not None:
            out.print(f"wrote {shown(output)}", highlight=False)
