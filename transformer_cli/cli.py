"""The `tfm` command line: parse options, call one core function, render its result.

No maths here. Every user error arrives as a TfmError and leaves as one line on stderr and an exit code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape

from . import __version__, render
from .arrays import check_output_path, save_npy
from .errors import ExitCode, TfmError
from .params import count_params
from .runner import get_weights, run_forward
from .spec import DEFAULT_SPEC, Spec, load_spec
from .verify import (
    check_causality,
    check_decoding,
    check_equivariance,
    check_scaling,
    make_setup,
    overall_exit,
    verify_all,
)
from .weights import init_weights, save_weights

EXIT_CODES = (
    "Exit codes: 0 ok / the property holds as expected; 1 the property is violated; "
    "2 bad input or usage; 3 inconclusive (a control failed or the check was vacuous); 130 interrupted."
)

app = typer.Typer(
    name="tfm",
    help="Inspect and verify transformer specs: parameter counts, NumPy forward passes, and the seeds' properties.",
    epilog=EXIT_CODES,
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)


class DType(str, Enum):
    float64 = "float64"
    float32 = "float32"


class Expect(str, Enum):
    holds = "holds"
    breaks = "breaks"
    theory = "theory"


SpecArg = Annotated[
    Optional[Path],
    typer.Argument(help="YAML spec file; the built-in default spec (N=2, H=4, m=8, d=32, r=64) if omitted."),
]
WeightsOpt = Annotated[
    Optional[Path], typer.Option("--weights", "-w", help="Weights .npz from `tfm init`; seeded weights if omitted.")
]
SeedOpt = Annotated[int, typer.Option("--seed", "-s", help="Seed for weights and random inputs.")]
DTypeOpt = Annotated[DType, typer.Option("--dtype", help="Compute dtype.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout, nothing else.")]
SeqLenOpt = Annotated[
    Optional[int], typer.Option("--seq-len", "-n", help="Sequence length n of the random inputs [default: 16].")
]
TolOpt = Annotated[
    Optional[float], typer.Option("--tol", help="Relative tolerance [default: 10 * eps(dtype) * sqrt(n) * N].")
]
ExpectOpt = Annotated[
    Expect,
    typer.Option(
        "--expect", help="What exit code 0 means: the property holds, breaks, or what theory predicts for the spec."
    ),
]
TrialsOpt = Annotated[
    int, typer.Option("--trials", "-k", min=0, help="Random derangements besides the fixed permutations.")
]
SamplesOpt = Annotated[int, typer.Option("--samples", min=100, help="Query/key pairs drawn.")]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", help="Overwrite an existing output file.")]


def _version(value: bool) -> None:
    if value:
        out.print(f"tfm {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Inspect and verify transformer specs."""


@contextmanager
def handled(json_out: bool = False) -> Iterator[None]:
    """Turn a TfmError into one line on stderr (and a JSON object on stdout under --json) and its exit code."""
    try:
        yield
    except TfmError as exc:
        if json_out:
            print(json.dumps({"error": str(exc), "exit_code": int(exc.exit_code)}))
        err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(int(exc.exit_code)) from None
    except KeyboardInterrupt:
        err.print("interrupted", soft_wrap=True)
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None


def _load(path: Path | None) -> tuple[Spec, str]:
    if path is None:
        err.print(
            f"using the built-in default spec ({render.spec_line(DEFAULT_SPEC)})", soft_wrap=True, highlight=False
        )
        return DEFAULT_SPEC, "built-in default"
    return load_spec(path), str(path)


def _plain(value: Any) -> Any:
    """JSON-safe: NaN and inf as strings, numpy scalars as Python numbers."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _print_json(data: Any) -> None:
    print(json.dumps(_plain(data), indent=2, allow_nan=False))


@app.command()
def count(
    specs: Annotated[
        Optional[list[Path]], typer.Argument(help="One or more YAML spec files; several are compared side by side.")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Break the parameter count down by tensor and block, and check it against the closed form.

    The closed form per block is the seed's 4Hmd + 2rd + r + d, plus 3Hm + d for attention biases and 4d for
    layer norms; pre-norm adds 2d once, learned positions d * max_len. Nothing is allocated: any size counts instantly.

    Example: tfm count examples/configs/gpt2-small.yaml examples/configs/seed-plain.yaml
    """
    with handled(json_out):
        loaded = [_load(p) for p in specs] if specs else [_load(None)]
        counts = [(count_params(spec), source) for spec, source in loaded]
    if json_out:
        data = [c.to_dict() | {"source": source} for c, source in counts]
        _print_json(data[0] if len(data) == 1 else data)
    elif len(counts) == 1:
        out.print(render.count_table(*counts[0]))
    else:
        out.print(render.comparison_table([c for c, _ in counts]))


@app.command()
def init(
    spec_path: SpecArg = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the weights (.npz).")] = Path(
        "weights.npz"
    ),
    seed: SeedOpt = 0,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Write seeded float64 weights for a spec, under the tensor names of the weights format (README).

    Example: tfm init examples/configs/tiny-causal.yaml --seed 1 -o weights.npz
    """
    with handled(json_out):
        spec, _ = _load(spec_path)
        check_output_path(output, [spec_path] if spec_path else [], force)
        weights = init_weights(spec, seed)
        save_weights(output, weights)
    data = {"spec": spec.label, "output": str(output), "seed": seed, "tensors": len(weights),
            "parameters": sum(int(w.size) for w in weights.values())}  # fmt: skip
    if json_out:
        _print_json(data)
    else:
        out.print(
            f"wrote {data['tensors']} tensors, {data['parameters']:,} parameters (seed {seed}) to {output}",
            highlight=False,
        )


@app.command()
def run(
    spec_path: SpecArg = None,
    input_path: Annotated[
        Path, typer.Option("--input", "-i", help="Input .npy of shape (d, n) or (b, d, n), one column per token.")
    ] = ...,  # type: ignore[assignment]
    weights: WeightsOpt = None,
    seed: SeedOpt = 0,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write the output (.npy, same layout as the input).")
    ] = None,
    dtype: DTypeOpt = DType.float64,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Run the forward pass on a saved input and show how the signal evolves through the blocks.

    Example: tfm run --input x.npy -o y.npy   (x.npy of shape (32, n) for the default spec)
    """
    with handled(json_out):
        spec, _ = _load(spec_path)
        if output is not None:
            check_output_path(output, [p for p in (spec_path, input_path, weights) if p], force)
        result = run_forward(spec, input_path, weights, seed, dtype.value)
        if output is not None:
            save_npy(output, result.output)
    for note in result.notes:
        err.print(f"note: {escape(note)}", soft_wrap=True)
    data = result.to_dict() | {"output": str(output) if output else None}
    if json_out:
        _print_json(data)
    else:
        out.print(render.run_table(result))
        if output is not None:
            out.print(f"wrote {output}", highlight=False)


def _check(name: str, spec_path: Path | None, weights: Path | None, seed: int, dtype: DType,
           seq_len: int | None, tol: float | None, expect: Expect, json_out: bool, **options: Any) -> None:  # fmt: skip
    """Shared body of the verify-* commands: build the setup, run one check, show it, exit with its code."""
    checks = {"equivariance": check_equivariance, "causality": check_causality,
              "decoding": check_decoding, "scaling": check_scaling}  # fmt: skip
    with handled(json_out):
        spec, source = _load(spec_path)
        w, w_source = get_weights(spec, weights, seed)
        setup = make_setup(spec, w, seed, dtype.value, seq_len, tol)
        result = checks[name](setup, expect=expect.value, **options)
    if json_out:
        _print_json(
            result.to_dict() | {"spec": spec.label, "source": source, "weights": w_source, "dtype": dtype.value}
        )
    else:
        out.print(render.check_table(result))
        out.print(render.summary_table(result))
    raise typer.Exit(int(result.exit_code))


@app.command("verify-equivariance", epilog=EXIT_CODES)
def verify_equivariance(
    spec_path: SpecArg = None, weights: WeightsOpt = None, trials: TrialsOpt = 8,
    seq_len: SeqLenOpt = None, seed: SeedOpt = 0, dtype: DTypeOpt = DType.float64, tol: TolOpt = None,
    expect: ExpectOpt = Expect.holds, json_out: JsonOpt = False,
) -> None:  # fmt: skip
    """Check Transformer(XP) = Transformer(X)P (seed property a) on random inputs.

    Tries the identity (error must be exactly 0), an adjacent swap, the reversal, a cyclic shift and random
    derangements; error = max|T(XP) - T(X)P| / max|T(X)|. A control adds a position-dependent term to the
    same model and must break the property by 1000 x tol, or the verdict is INCONCLUSIVE.

    Example: tfm verify-equivariance examples/configs/seed-plain.yaml --trials 20 --dtype float32
    """
    _check("equivariance", spec_path, weights, seed, dtype, seq_len, tol, expect, json_out, trials=trials)


@app.command("verify-causality", epilog=EXIT_CODES)
def verify_causality(
    spec_path: SpecArg = None, weights: WeightsOpt = None, seq_len: SeqLenOpt = None, seed: SeedOpt = 0,
    dtype: DTypeOpt = DType.float64, tol: TolOpt = None, expect: ExpectOpt = Expect.holds, json_out: JsonOpt = False,
) -> None:  # fmt: skip
    """Check that output column t depends only on columns <= t, and that it does depend on them.

    For each t, changing the columns after t must leave columns 0..t unchanged; changing column 0 must
    move every output column (else INCONCLUSIVE). A spec without the causal mask shows where it leaks.

    Example: tfm verify-causality examples/configs/tiny-causal.yaml
    """
    _check("causality", spec_path, weights, seed, dtype, seq_len, tol, expect, json_out)


@app.command("verify-decoding", epilog=EXIT_CODES)
def verify_decoding(
    spec_path: SpecArg = None, weights: WeightsOpt = None, seq_len: SeqLenOpt = None, seed: SeedOpt = 0,
    dtype: DTypeOpt = DType.float64, tol: TolOpt = None, expect: ExpectOpt = Expect.holds, json_out: JsonOpt = False,
) -> None:  # fmt: skip
    """Check that decoding one column at a time with a key/value cache equals the parallel forward pass.

    Holds for causal specs (seed 001). Controls: a decoder whose cache misses one step, and one that
    encodes positions off by one, must both be caught.

    Example: tfm verify-decoding examples/configs/tiny-causal.yaml --seq-len 32
    """
    _check("decoding", spec_path, weights, seed, dtype, seq_len, tol, expect, json_out)


@app.command("verify-scaling", epilog=EXIT_CODES)
def verify_scaling(
    spec_path: SpecArg = None, samples: SamplesOpt = 20000,
    seed: SeedOpt = 0, dtype: DTypeOpt = DType.float64, expect: ExpectOpt = Expect.holds, json_out: JsonOpt = False,
) -> None:  # fmt: skip
    """Check that scores of unit-variance queries and keys have variance m unscaled and 1 with sqrt scaling.

    The band is 4 standard errors of the sample variance, sqrt((2m^2 + 6m) / samples) times scale^2.

    Example: tfm verify-scaling examples/configs/attention-is-all-you-need-base.yaml
    """
    _check("scaling", spec_path, None, seed, dtype, None, None, expect, json_out, samples=samples)


@app.command(epilog=EXIT_CODES)
def verify(
    spec_path: SpecArg = None, weights: WeightsOpt = None, seq_len: SeqLenOpt = None, seed: SeedOpt = 0,
    dtype: DTypeOpt = DType.float64, tol: TolOpt = None, json_out: JsonOpt = False,
) -> None:  # fmt: skip
    """Run every check against what theory predicts for the spec: one table, one exit code (for CI).

    Checks: parameter count = closed form = stored arrays; softmax columns sum to 1; equivariance (holds
    iff no positions and no mask); causality and KV-cache decoding (hold iff causal); score scaling.

    Example: tfm verify examples/configs/gpt2-small.yaml --seq-len 8
    """
    with handled(json_out):
        spec, source = _load(spec_path)
        w, w_source = get_weights(spec, weights, seed)
        results = verify_all(spec, w, seed, dtype.value, seq_len, tol)
    code = overall_exit(results)
    if json_out:
        _print_json({"spec": spec.label, "source": source, "weights": w_source, "dtype": dtype.value,
                     "exit_code": int(code), "checks": [r.to_dict() for r in results]})  # fmt: skip
    else:
        out.print(render.verify_table(spec, results))
    raise typer.Exit(int(code))
