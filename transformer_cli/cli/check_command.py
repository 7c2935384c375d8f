"""`tfm check`: many spec files, budgets and the verify suite, one table and one exit code (CI, pre-commit)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import EXIT_CODES, JsonOpt, app, err, handled, out, print_json, progress_bar


@app.command(epilog=EXIT_CODES)
def check(
    specs: Annotated[
        list[Path],
        typer.Argument(help="Spec files, Hugging Face folders, or folders searched for specs and config.json files."),
    ],
    exclude: Annotated[
        Optional[list[str]],
        typer.Option("--exclude", help="Skip what a folder's search finds matching this glob (repeatable)."),
    ] = None,
    max_params: Annotated[Optional[str], typer.Option("--max-params", help="Budget: parameters (125M, 1.5B).")] = None,
    max_memory: Annotated[
        Optional[str], typer.Option("--max-memory", help="Budget: a float32 forward pass's peak memory (4G).")
    ] = None,
    max_kv_cache: Annotated[
        Optional[str], typer.Option("--max-kv-cache", help="Budget: the bfloat16 KV cache of decoding at n (2G).")
    ] = None,
    max_serving_memory: Annotated[
        Optional[str],
        typer.Option("--max-serving-memory", help="Budget: serving at n, as tfm plan gives it (bfloat16, fused)."),
    ] = None,
    max_training_memory: Annotated[
        Optional[str],
        typer.Option("--max-training-memory", help="Budget: training at n, b = 1 (mixed-precision Adam, fused)."),
    ] = None,
    seq_len: Annotated[int, typer.Option("--seq-len", "-n", min=1, help="Length n for the memory budgets.")] = 512,
    verify_len: Annotated[int, typer.Option("--verify-len", min=1, help="Length n of the verify checks.")] = 8,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Run tfm verify on each spec.")] = True,
    json_out: JsonOpt = False,
) -> None:
    """Check many spec files at once: valid, within budgets, and every property as theory predicts.

    A folder is searched recursively, skipping hidden folders (.git, .github), for tfm specs (*.yaml and *.yml
    files with one of the keys N, H, m, d, r), Hugging Face config.json files (with a model_type) and GGUF files; the
    specs found, and every file skipped with the reason, are named on stderr. Exit 2 if any spec is invalid,
    else 1 if any breaks a budget or a property, else 3 if any check was inconclusive, else 0.

    \b
    Example:
      tfm check examples/configs --max-params 150M --max-memory 4G --seq-len 1024
    """
    from ..tasks.check import Budgets, check_specs, find_specs, overall
    from . import render

    with handled(json_out):
        budgets = Budgets.parse(max_params, max_memory, max_kv_cache, max_serving_memory, max_training_memory)
        found, skipped = find_specs(specs, tuple(exclude or ()))
        if any(p.is_dir() for p in specs):
            names = ", ".join(map(str, found))
            err.print(
                f"found {len(found)} spec{'s' * (len(found) != 1)}: {names}",
                soft_wrap=True,
                highlight=False,
                markup=False,
            )
        if skipped:
            said = ", ".join(f"{path} ({why})" for path, why in skipped)
            err.print(f"skipped {len(skipped)} files: {said}", soft_wrap=True, highlight=False, markup=False)
        with progress_bar(json_out) as progress:
            task = progress.add_task("checking", total=len(found))
            results = check_specs(
                found,
                budgets,
                seq_len,
                verify_len if verify else None,
                lambda path: progress.update(task, advance=1, description=path),
            )
    code = overall(results)
    if json_out:
        skips = [{"path": str(path), "reason": why} for path, why in skipped]
        print_json(
            {
                "exit_code": int(code),
                "found": [str(p) for p in found],
                "skipped": skips,
                "specs": [r.to_dict() for r in results],
            }
        )
    else:
        out.print(render.check_summary(results, seq_len))
    raise typer.Exit(int(code))
