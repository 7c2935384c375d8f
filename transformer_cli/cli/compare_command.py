"""`tfm compare A B`: is B still model A? llama-perplexity's figures for B against A, and thresholds for CI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import (
    RUN_DTYPE,
    CtxOpt,
    DType,
    JsonOpt,
    MaxMemoryOpt,
    RunDTypeOpt,
    StreamOpt,
    StreamPromptOpt,
    TextOpt,
    app,
    err,
    handled,
    out,
    print_json,
    say_mode,
)

ModelArg = Annotated[
    Path, typer.Argument(help="A Hugging Face folder, a GGUF file, tfm's .safetensors weights, or a spec.")
]


@app.command()
def compare(
    a: ModelArg,
    b: ModelArg,
    input_path: StreamOpt = None,
    text: TextOpt = None,
    prompt: StreamPromptOpt = None,
    ctx: CtxOpt = None,
    max_kld: Annotated[
        Optional[float], typer.Option("--max-kld", help="Exit 1 when the mean KL divergence is above this.")
    ] = None,
    min_same_top_p: Annotated[
        Optional[float],
        typer.Option("--min-same-top-p", help="Exit 1 when fewer positions than this share their top token."),
    ] = None,
    max_nmse: Annotated[
        Optional[float], typer.Option("--max-nmse", help="Exit 1 when the logits' NMSE is above this.")
    ] = None,
    block_tol: Annotated[
        float,
        typer.Option("--block-tol", help="The relative error of a block's residual stream that counts as parting."),
    ] = 1e-3,
    a_weights: Annotated[
        Optional[Path], typer.Option("--a-weights", help="A's weights (.npz or .safetensors) when A is a spec.")
    ] = None,
    b_weights: Annotated[
        Optional[Path], typer.Option("--b-weights", help="B's weights (.npz or .safetensors) when B is a spec.")
    ] = None,
    dtype: RunDTypeOpt = None,
    max_memory: MaxMemoryOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Compare model B with model A (the base) over a stream of tokens, as llama-perplexity --kl-divergence does.

    Gives the KL divergence KL(P_A || P_B) at each scored position (mean with its error, max, percentiles, min),
    delta p of the next token, the fraction of positions whose top token agrees, each model's perplexity and
    their ratio, the logits' NMSE with llama.cpp's model-conversion verdict, and for models with the same blocks
    each block's relative error and the first block where B parts from A (--block-tol). A runs first and only its
    logits and block outputs are kept, so the two models are never in memory together. --max-kld,
    --min-same-top-p and --max-nmse make the exit code 1 when B breaks them (0 otherwise).

    \b
    Examples:
      tfm compare ./llama-folder llama-q8_0.gguf --input ids.npy --max-kld 0.01
      tfm compare ./llama-folder llama-q4_0.gguf --input ids.npy --ctx 512 --json
      tfm compare spec.yaml spec.yaml --a-weights before.npz --b-weights after.npz --input ids.npy
    """
    from ..api.models import load
    from ..tasks.comparison import Thresholds
    from ..tasks.perplexity import token_input
    from ..text import escaped as shown

    with handled(json_out):
        ids, where = token_input(a, input_path, text, prompt)
        base = load(a, a_weights)
        dtype = dtype or (DType.float32 if base.lazy else RUN_DTYPE)
        thresholds = Thresholds(max_kld, min_same_top_p, max_nmse)
        result = base.compare(load(b, b_weights), ids, ctx, dtype.value, max_memory, thresholds, block_tol)
    for mode in result.modes:
        say_mode(mode)
    if result.blocks_note:
        err.print(f"note: {result.blocks_note}", highlight=False)
    data = {"a": str(a), "b": str(b), "input": where, "dtype": dtype.value} | result.to_dict()
    if json_out:
        print_json(data)
        raise typer.Exit(result.exit_code)
    out.print(_table(data), highlight=False)
    for line in result.broken.values():
        err.print(f"broken: {shown(line)}", highlight=False)
    raise typer.Exit(result.exit_code)


def _table(data: dict) -> object:
    from rich.table import Table

    kld, dp, ppl, logits = data["kld"], data["delta_p"], data["ppl"], data["logits"]
    table = Table(title=f"B against A: {data['positions']} positions ({data['scored']})", title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("mean KLD", f"{kld['mean']:.6f} ± {kld['mean_err']:.6f}"),
        ("max / p99 / median KLD", f"{kld['max']:.6f} / {kld['p99']:.6f} / {kld['median']:.6f}"),
        ("RMS delta p", f"{100 * dp['rms']:.3f} ± {100 * dp['rms_err']:.3f} %"),
        ("same top p", f"{100 * data['same_top_p']:.3f} ± {100 * data['same_top_p_err']:.3f} %"),
        ("PPL(A), PPL(B)", f"{ppl['a']:.4f}, {ppl['b']:.4f}"),
        ("ln(PPL(B)/PPL(A))", f"{ppl['ln_ratio_mean']:.6f} ± {ppl['ln_ratio_mean_err']:.6f}"),
        ("logits: max |B - A|", f"{logits['max_abs_diff']:.4g}"),
        ("logits: NMSE", f"{logits['nmse']:.3g} ({logits['verdict']})" if logits["nmse"] is not None else "-"),
    ]
    if data["blocks"] is not None:
        first = data["first_divergent_block"]
        worst = max(data["blocks"], key=lambda row: row.get("residual", 0.0))
        rows.append(("first block parting", f"{first if first is not None else 'none'} (> {data['block_tol']:g})"))
        rows.append(("largest block error", f"{worst.get('residual', 0.0):.3g} (block {worst['block']})"))
    marks = {"mean KLD": "max_kld", "same top p": "min_same_top_p", "logits: NMSE": "max_nmse"}
    for name, value in rows:
        key = marks.get(name)
        if key is not None and key in data["broken"]:
            value += f"  BROKEN (limit {data['thresholds'][key]:g})"
        elif key is not None and data["thresholds"][key] is not None:
            value += f"  ok (limit {data['thresholds'][key]:g})"
        table.add_row(name, value)
    return table
