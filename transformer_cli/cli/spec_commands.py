"""`tfm schema` and `tfm diff`: the spec format itself, and two specs side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import ExitCode
from .common import COST_DTYPE, DTypeOpt, JsonOpt, app, handled, load, out, print_json, spec_json


@app.command()
def schema(json_out: JsonOpt = False) -> None:
    """Print the JSON Schema of the spec format, for editor completion and validation (always JSON).

    Derived from the same declarations the loader validates with. Save it beside your specs and point
    the YAML language server at it with a first line `# yaml-language-server: $schema=spec.schema.json`.

    \b
    Example:
      tfm schema > spec.schema.json
    """
    from ..spec.schema import spec_schema

    print_json(spec_schema())


@app.command()
def diff(
    a: Annotated[Path, typer.Argument(help="The first spec: a YAML file, a Hugging Face model or a .gguf file.")],
    b: Annotated[Path, typer.Argument(help="The second spec, of the same kinds.")],
    seq_len: Annotated[int, typer.Option("--seq-len", "-n", min=1, help="Length n for FLOPs and memory.")] = 1024,
    batch: Annotated[int, typer.Option("--batch", "-b", min=1, help="Batch size for FLOPs and memory.")] = 1,
    dtype: DTypeOpt = COST_DTYPE,
    only_differences: Annotated[
        bool, typer.Option("--only-differences", "-d", help="Show only the rows that differ (labels aside).")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Compare two specs: keys, parameters by component, FLOPs and memory, with the differences marked.

    Exit 1 if the models differ in any key or figure (names and descriptions aside), 0 if they are the
    same model, like diff(1). Keys are compared by effect: `scale: none` and `scale: 1` are the same; a key
    neither model uses (rope_theta without rope) is not shown.

    \b
    Example:
      tfm diff examples/configs/attention-is-all-you-need-base.yaml examples/configs/gpt2-small.yaml -n 512
    """
    from ..analysis.diff import diff, models_differ
    from ..spec.load import check_length
    from . import render

    with handled(json_out):
        (spec_a, _), (spec_b, _) = load(a), load(b)
        for spec in (spec_a, spec_b):
            check_length(spec, seq_len, "--seq-len")
        rows = diff(spec_a, spec_b, batch, seq_len, dtype.value)
    code = ExitCode.VIOLATED if models_differ(rows) else ExitCode.OK
    if only_differences:
        rows = diff(spec_a, spec_b, batch, seq_len, dtype.value, only_differences=True)
    if json_out:
        print_json(
            {
                "a": spec_json(spec_a),
                "b": spec_json(spec_b),
                "batch": batch,
                "seq_len": seq_len,
                "dtype": dtype.value,
                "differ": bool(code),
                "exit_code": int(code),
                "rows": rows,
            }
        )
    else:
        out.print(render.diff_table(spec_a, spec_b, rows, batch, seq_len, dtype.value))
    raise typer.Exit(int(code))
