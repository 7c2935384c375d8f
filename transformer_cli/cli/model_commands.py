"""`tfm count`, `tfm init` and `tfm run`. Each imports the core it needs when it runs, so start-up stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import TfmError
from .common import (
    COST_DTYPE,
    RUN_DTYPE,
    DType,
    ForceOpt,
    JsonOpt,
    MaxMemoryOpt,
    SeedOpt,
    SpecArg,
    TargetOpt,
    WeightsOpt,
    app,
    busy,
    check_npy_output,
    err,
    handled,
    is_hugging_face,
    load,
    out,
    print_json,
    progress_bar,
    spec_json,
    weights_of,
)


@app.command()
def count(
    specs: Annotated[
        Optional[list[Path]], typer.Argument(help="One or more YAML spec files; several are compared side by side.")
    ] = None,
    seq_len: Annotated[
        Optional[int], typer.Option("--seq-len", "-n", min=1, help="Also show FLOPs and memory at this length n.")
    ] = None,
    batch: Annotated[
        Optional[int],
        typer.Option("--batch", "-b", min=1, help="Batch size for FLOPs and memory (with -n) [default: 1]."),
    ] = None,
    dtype: Annotated[
        Optional[DType], typer.Option("--dtype", help="Dtype of the forward-peak figure (with -n) [default: float32].")
    ] = None,
    source_len: Annotated[
        Optional[int],
        typer.Option("--source-len", min=1, help="An encoder-decoder's source length (with -n) [default: n]."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Break the parameter count down by tensor and block, and check it against the closed form.

    The closed form per block is the seed's 4Hmd + 2rd + r + d, plus 3Hm + d for attention biases and 4d for
    layer norms; pre-norm adds 2d once, learned positions d * max_len. Nothing is allocated: any size counts
    instantly. With --seq-len: forward FLOPs by component (a multiply-add = 2 FLOPs; causal specs also
    with only the allowed pairs), and memory: weights in float64/32/16 and bfloat16, training with Adam,
    and the peak of a forward pass (the estimate run and verify refuse on).

    \b
    Example:
      tfm count examples/configs/gpt2-small.yaml examples/configs/seed-plain.yaml --seq-len 1024
    """
    from ..analysis.costs import costs
    from ..analysis.params import count_params
    from ..spec.definition import check_length
    from . import render

    with handled(json_out):
        if seq_len is None and (batch is not None or dtype is not None):
            raise TfmError(
                f"{'--batch' if batch is not None else '--dtype'} needs --seq-len: it sizes the FLOPs and memory at n"
            )
        loaded = [load(p) for p in specs] if specs else [load(None)]
        counts = [(count_params(spec), source) for spec, source in loaded]
        checkpoints = [_checkpoint(p, spec) for p, (spec, _) in zip(specs or [None], loaded, strict=True)]
        for spec, _ in loaded:
            if seq_len:
                check_length(spec, seq_len, "--seq-len")
        if source_len and not any(spec.N_enc for spec, _ in loaded):
            raise TfmError(
                f"--source-len {source_len}: no spec here is an encoder-decoder (N_enc), none reads a source"
            )
        dtype_ = (dtype or COST_DTYPE).value
        extra = [costs(c.spec, batch or 1, seq_len, dtype_, source_len) if seq_len else None for c, _ in counts]
    if json_out:
        print_json({"specs": [c.to_dict() | {"source": source} | ({"costs": e} if e else {})
                              | ({"checkpoint": k} if k else {})
                              for (c, source), e, k in zip(counts, extra, checkpoints, strict=True)]})  # fmt: skip
        return
    if len(counts) == 1:
        out.print(render.count_table(*counts[0]))
    else:
        out.print(render.comparison_table([c for c, _ in counts]))
    for (_, source), checkpoint in zip(counts, checkpoints, strict=True):
        if checkpoint:
            out.print(render.checkpoint_line(source, checkpoint))
    if seq_len:
        specs_ = [c.spec for c, _ in counts]
        out.print(render.flops_table(specs_, extra))
        out.print(render.memory_table(specs_, extra))


def _checkpoint(path: Path | None, spec) -> dict | None:  # type: ignore[no-untyped-def]
    """A Hugging Face folder's checkpoint, checked against its config from the headers alone (no data read)."""
    if path is None or not path.is_dir():
        return None
    from ..hf.checkpoint import has_checkpoint
    from ..hf.weights import summary

    return summary(path, spec) if has_checkpoint(path) else None


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
    from ..analysis.memory import check_memory
    from ..io.arrays import check_output_path
    from ..io.weights import init_memory, weights_format, write_init

    with handled(json_out):
        spec, _ = load(spec_path)
        check_output_path(output, [spec_path] if spec_path else [], force)
        if (
            spec_path is not None
            and is_hugging_face(spec_path)
            and output.suffix.lower() not in (".npz", ".safetensors")
        ):
            from ..hf.convert import init_folder, init_folder_memory

            check_memory(init_folder_memory(spec), max_memory, "writing these weights")
            with busy("initialising weights", json_out):
                tensors, parameters = init_folder(spec_path, output, spec, seed, overwrite=force)
        else:
            weights_format(output)
            check_memory(init_memory(spec, output), max_memory, "writing these weights")
            with busy("initialising weights", json_out):
                tensors, parameters = write_init(output, spec, seed, overwrite=force)
    data = spec_json(spec) | {"output": str(output), "seed": seed, "tensors": tensors, "parameters": parameters}
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
        Path, typer.Option("--input", "-i", help="Input .npy of shape (d, n) or (b, d, n), one column per token.")
    ] = ...,  # type: ignore[assignment]
    target: TargetOpt = None,
    weights: WeightsOpt = None,
    seed: SeedOpt = 0,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write the output (.npy, same layout as the input).")
    ] = None,
    dtype: Annotated[
        Optional[DType],
        typer.Option("--dtype", help="Compute dtype [default: float64; float32 for a Hugging Face checkpoint]."),
    ] = None,
    max_memory: MaxMemoryOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Run the forward pass on a saved input and show how the signal evolves through the blocks.

    \b
    Example:
      tfm run --input x.npy -o y.npy   (x.npy of shape (32, n) for the default spec)
    """
    from ..io.arrays import check_output_path, save_npy
    from ..model.runner import run_forward
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
            result = run_forward(spec, input_path, weights, seed, dtype.value, max_memory,
                                 lambda step: progress.advance(task, step), target)  # fmt: skip
        if output is not None:
            save_npy(output, result.output, overwrite=force)
    for note in result.notes:
        err.print(f"note: {shown(note)}", soft_wrap=True)
    data = result.to_dict() | {"output": str(output) if output else None}
    if json_out:
        print_json(data)
    else:
        out.print(render.run_table(result))
        if output is not None:
            out.print(f"wrote {shown(output)}", highlight=False)
