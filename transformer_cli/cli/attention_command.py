"""`tfm attention`: one block's attention weights as a terminal heatmap, and all heads saved to .npy."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import (
    RUN_DTYPE,
    DTypeOpt,
    ForceOpt,
    JsonOpt,
    MaxMemoryOpt,
    SeedOpt,
    SpecArg,
    TargetOpt,
    WeightsOpt,
    app,
    check_npy_output,
    handled,
    load,
    out,
    print_json,
    say_mode,
    spec_json,
    weights_of,
)


class AttentionKind(str, Enum):
    self = "self"
    cross = "cross"
    encoder = "encoder"


@app.command()
def attention(
    spec_path: SpecArg = None,
    input_path: Annotated[Path, typer.Option("--input", "-i", help="Input .npy, (d, n) or (b, d, n).")] = ...,  # type: ignore[assignment]
    block: Annotated[int, typer.Option("--block", min=0, help="Block index i, 0 .. N-1.")] = 0,
    head: Annotated[Optional[int], typer.Option("--head", min=0, help="Head h; all heads if omitted.")] = None,
    sequence: Annotated[int, typer.Option("--sequence", min=0, help="Which sequence of a batch.")] = 0,
    target: TargetOpt = None,
    kind: Annotated[
        Optional[AttentionKind],
        typer.Option("--kind", help="An encoder-decoder's attention: the decoder's self or cross, or the encoder's."),
    ] = None,
    weights: WeightsOpt = None,
    seed: SeedOpt = 0,
    dtype: DTypeOpt = RUN_DTYPE,
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", help="Save every head's weights, shape (H, n, n), axes [h, k, q]."),
    ] = None,
    force: ForceOpt = False,
    max_memory: MaxMemoryOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Show a block's attention weights as a heatmap: row k is a key, column q a query, columns sum to 1.

    A[h, k, q] is the weight query column q gives key column k in head h (the seed's Softmax is taken
    over each column). Long sequences are averaged into blocks to fit the terminal.

    \b
    Example:
      tfm attention examples/configs/tiny-causal.yaml --input x.npy --block 1 --head 0 -o attn.npy
    """
    from ..io.arrays import save_npy
    from ..io.outputs import check_output_path
    from ..tasks.attention_maps import attention_maps
    from ..text import escaped as shown
    from .heatmap import heatmap

    with handled(json_out):
        spec, _ = load(spec_path, weights)
        weights = weights_of(spec_path, weights)
        check_npy_output(output)
        if output is not None:
            check_output_path(output, [p for p in (spec_path, input_path, weights) if p], force)
        modes: list = []  # how the weights were held (one stack), said as soon as chosen

        def heard(mode) -> None:
            modes.append(mode)
            say_mode(mode)

        A = attention_maps(
            spec,
            input_path,
            weights,
            seed,
            dtype.value,
            block,
            head,
            sequence,
            json_out,
            target,
            (kind or AttentionKind.self).value,
            on_mode=heard,
            max_memory=max_memory,
        )
        if output is not None:
            save_npy(output, A, overwrite=force)
    heads = [head] if head is not None else list(range(A.shape[0]))
    if json_out:
        print_json(
            spec_json(spec)
            | {
                "block": block,
                "sequence": sequence,
                "shape": list(A.shape),
                "axes": ["head", "key", "query"],
                "output": str(output) if output else None,
                "weights": {str(h): A[h].tolist() for h in heads},
                "weights_mode": modes[0].to_dict() if modes else None,
            }
        )
        return
    for h in heads:
        out.print(heatmap(A[h], f"block {block}, head {h} of {shown(spec.label)}", out.width))
