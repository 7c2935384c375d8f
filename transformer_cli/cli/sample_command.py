"""`tfm sample`: a seeded random input of the spec's shape, so `tfm run` and `tfm attention` have one to read."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import (
    ForceOpt,
    JsonOpt,
    MaxMemoryOpt,
    SeedOpt,
    SpecArg,
    app,
    check_npy_output,
    handled,
    load,
    out,
    print_json,
    spec_json,
)


@app.command()
def sample(
    spec_path: SpecArg = None,
    seq_len: Annotated[int, typer.Option("--seq-len", "-n", help="Tokens n: columns of the input.")] = 16,
    batch: Annotated[
        Optional[int],
        typer.Option(
            "--batch",
            "-b",
            help="Write b sequences on a leading axis: (b, d, n), or token ids (b, n); without -b one: (d, n) or (n,).",
        ),
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the input (.npy).")] = Path("x.npy"),
    seed: SeedOpt = 0,
    max_memory: MaxMemoryOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Write a random input for a spec: standard normal float64 columns (d, n) or (b, d, n); for a spec with a
    vocabulary V, uniform token ids (n,) or (b, n) in 0 .. V-1.

    Refuses n beyond max_len (learned positions) and an input the forward pass could not hold, as run does.

    \b
    Example:
      tfm sample examples/configs/tiny-causal.yaml -n 12 --seed 1 -o x16.npy
    """
    from ..analysis.memory import check_memory, estimate_pass
    from ..io.arrays import save_npy
    from ..io.outputs import check_output_path
    from ..options import count
    from ..tasks.runner import random_input

    with handled(json_out):
        spec, _ = load(spec_path)
        check_npy_output(output)
        check_output_path(output, [spec_path] if spec_path else [], force)
        count(seq_len, "seq-len")  # (before the estimate: random_input checks them as the library's sample does)
        b = 1 if batch is None else count(batch, "batch")  # an encoder-decoder's source or target: at most as long
        check_memory(estimate_pass(spec, b, seq_len), max_memory, "a forward pass over this input")
        x = random_input(spec, seq_len, batch, seed)
        save_npy(output, x)
    data = spec_json(spec) | {"output": str(output), "shape": list(x.shape), "seed": seed}
    if json_out:
        print_json(data)
    else:
        kind = f"token ids in 0 .. {spec.V - 1}" if spec.V else "standard normal"
        out.print(f"wrote {output}: shape {tuple(x.shape)}, {kind} (seed {seed})", highlight=False)
