"""`tfm count`: parameters by tensor and block against the closed form; FLOPs and memory at n. A module of its own,
so `tfm count` builds no other command (start-up)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import TfmError
from .common import COST_DTYPE, DType, JsonOpt, app, handled, load, out, print_json


@app.command()
def count(
    specs: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="One or more specs: YAML files, Hugging Face models or .gguf files; several are compared side by side."
        ),
    ] = None,
    seq_len: Annotated[
        Optional[int], typer.Option("--seq-len", "-n", help="Also show FLOPs and memory at this length n.")
    ] = None,
    batch: Annotated[
        Optional[int],
        typer.Option("--batch", "-b", help="Batch size for FLOPs and memory (with -n) [default: 1]."),
    ] = None,
    dtype: Annotated[
        Optional[DType],
        typer.Option(
            "--dtype",
            help="Dtype of tfm's own NumPy pass for the forward-peak figure (with -n); tfm plan "
            "gives serving in bfloat16 and others [default: float32].",
        ),
    ] = None,
    source_len: Annotated[
        Optional[int],
        typer.Option("--source-len", help="An encoder-decoder's source length (with -n) [default: n]."),
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
    from ..analysis.params import count_params
    from ..spec.load import check_length
    from ..spec.stacks import encoder
    from ..tasks.sources import checkpoint_summary
    from . import render, render_costs

    with handled(json_out, "tfm count holds the name and shape of each tensor (the checkpoint's, from its headers)"):
        if seq_len is None and (batch is not None or dtype is not None):
            raise TfmError(
                f"{'--batch' if batch is not None else '--dtype'} needs --seq-len: it sizes the FLOPs and memory at n"
            )
        loaded = [load(p) for p in specs] if specs else [load(None)]
        counts = [(count_params(spec), source) for spec, source in loaded]
        paths: list[Path | None] = list(specs) if specs else [None]
        checkpoints = [checkpoint_summary(p, spec) for p, (spec, _) in zip(paths, loaded, strict=True)]
        for spec, _ in loaded:
            if seq_len is not None:
                check_length(spec, seq_len, "--seq-len")
        if source_len is not None and not any(encoder(spec) for spec, _ in loaded):
            raise TfmError(
                f"--source-len {source_len}: no spec here is an encoder-decoder (N_enc), none reads a source"
            )
        dtype_ = (dtype or COST_DTYPE).value
        if seq_len is not None:  # (costs checks n, b and the source's length as the library's Model.costs does)
            from ..analysis.costs import costs  # (only here: FLOPs and memory import the costs' every module)
        extra = [
            costs(c.spec, 1 if batch is None else batch, seq_len, dtype_, source_len) if seq_len is not None else None
            for c, _ in counts
        ]
    if json_out:
        print_json(
            {
                "specs": [
                    c.to_dict()
                    | {"source": source}
                    | ({"costs": e.to_dict()} if e else {})
                    | ({"checkpoint": k.to_dict()} if k else {})
                    for (c, source), e, k in zip(counts, extra, checkpoints, strict=True)
                ]
            }
        )
        return
    if len(counts) == 1:
        out.print(render.count_table(*counts[0]))
    else:
        out.print(render.comparison_table([c for c, _ in counts]))
    for (_, source), checkpoint in zip(counts, checkpoints, strict=True):
        if checkpoint:
            out.print(render.checkpoint_line(source, checkpoint))
    if seq_len is not None:
        specs_, found = [c.spec for c, _ in counts], [e for e in extra if e is not None]
        out.print(render_costs.flops_table(specs_, found))
        out.print(render_costs.memory_table(specs_, found))
