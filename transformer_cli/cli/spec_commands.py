"""`tfm schema` and `tfm diff`: the spec format itself, and two specs side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import DType, DTypeOpt, JsonOpt, app, handled, load, out, print_json


@app.command()
def schema(json_out: JsonOpt = False) -> None:
    """Print the JSON Schema of the spec format, for editor completion and validation (always JSON).

    Derived from the same declarations the loader validates with. Save it beside your specs and point
    the YAML language server at it with a first line `# yaml-language-server: $schema=spec.schema.json`.

    \b
    Example:
      tfm schema > spec.schema.json
    """
    from ..schema import spec_schema

    print_json(spec_schema())


@app.command()
def diff(
    a: Annotated[Path, typer.Argument(help="The first spec.")],
    b: Annotated[Path, typer.Argument(help="The second spec.")],
    seq_len: Annotated[int, typer.Option("--seq-len", "-n", min=1, help="Length n for FLOPs and memory.")] = 1024,
    batch: Annotated[int, typer.Option("--batch", min=1, help="Batch size for FLOPs and memory.")] = 1,
    dtype: DTypeOpt = DType.float32,
    json_out: JsonOpt = False,
) -> None:
    """Compare two specs: keys, parameters by component, FLOPs and memory, with the differences marked.

    \b
    Example:
      tfm diff examples/configs/attention-is-all-you-need-base.yaml examples/configs/gpt2-small.yaml -n 512
    """
    from .. import render
    from ..compare import compare

    with handled(json_out):
        (spec_a, _), (spec_b, _) = load(a), load(b)
        rows = compare(spec_a, spec_b, batch, seq_len, dtype.value)
    if json_out:
        print_json({"a": spec_a.label, "b": spec_b.label, "batch": batch, "seq_len": seq_len, "dtype": dtype.value,
                    "rows": rows})  # fmt: skip
    else:
        out.print(render.diff_table(spec_a, spec_b, rows, batch, seq_len, dtype.value))
