"""The Typer app and what every command shares: options, error handling, spec loading, JSON output.

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
from rich.text import Text

from .. import __version__
from ..errors import ExitCode, Terminated, TfmError
from ..spec import DEFAULT_SPEC, Spec, load_spec

EXIT_CODES = (
    "Exit codes: 0 ok / the property holds as expected; 1 the property is violated; "
    "2 bad input or usage; 3 inconclusive (a control failed or the check was vacuous); 130 interrupted (Ctrl-C); "
    "143 terminated (SIGTERM)."
)

app = typer.Typer(
    name="tfm",
    help="Inspect and verify transformer specs: parameter counts, NumPy forward passes, and the seeds' properties.",
    epilog=EXIT_CODES,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, emoji=False, markup=False)  # data: shown as is, and faster to render
err = Console(stderr=True, highlight=False, emoji=False, markup=False)  # messages carry user text: never markup
MAX_MESSAGE = 1000  # characters of an error line; the core cuts long values, this catches whatever it missed


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
    Optional[Path],
    typer.Option("--weights", "-w", help="Weights (.npz or .safetensors) from `tfm init`; seeded weights if omitted."),
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
MaxMemoryOpt = Annotated[
    Optional[str],
    typer.Option("--max-memory", help="Refuse work estimated above this size (512M, 2G) [default: available memory]."),
]
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
    """Turn a TfmError into one line on stderr (and a JSON object on stdout under --json) and its exit code.

    NumPy's floating-point warnings are silenced here: a NaN or inf that matters is reported as a result
    (an error naming where it is, or a failed check), not as a Python warning on stderr.
    """
    try:
        with np.errstate(all="ignore"):
            yield
    except TfmError as exc:
        _fail(str(exc), exc.exit_code, json_out)
    except MemoryError:
        _fail("ran out of memory; lower --max-memory, the batch or the sequence length", ExitCode.BAD_INPUT, json_out)
    except KeyboardInterrupt:
        _fail("interrupted", ExitCode.INTERRUPTED, json_out)
    except Terminated:
        _fail("terminated", ExitCode.TERMINATED, json_out)


def _fail(message: str, code: ExitCode, json_out: bool) -> None:
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    if json_out:
        print(json.dumps({"error": message, "exit_code": int(code)}))
    from ..render import shown

    err.print(Text.assemble(("error:", "bold red"), " ", shown(message)), soft_wrap=True)
    raise typer.Exit(int(code)) from None


@contextmanager
def busy(description: str, json_out: bool) -> Iterator[None]:
    """A pulsing progress bar on stderr while something runs; only on a terminal, never under --json."""
    from rich.progress import Progress

    with Progress(console=err, transient=True, disable=json_out or not err.is_terminal) as progress:
        progress.add_task(description, total=None)
        yield


def load(path: Path | None, weights: Path | None = None) -> tuple[Spec, str]:
    """The spec at `path`, else the one stored in a .safetensors `weights` file, else the built-in default.

    Where it came from is returned, and said on stderr unless it was a file named on the command line.
    """
    if path is None and weights is not None and weights.suffix == ".safetensors":
        from ..render import shown
        from ..weights import spec_of_weights

        stored = spec_of_weights(weights)
        if stored is not None:
            err.print(f"using the spec stored in {shown(weights)} ({shown(stored.summary())})", soft_wrap=True)
            return stored, f"{weights} metadata"
    if path is None:
        err.print(f"using the built-in default spec ({DEFAULT_SPEC.summary()})", soft_wrap=True)
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


def print_json(data: Any) -> None:
    print(json.dumps(_plain(data), indent=2, allow_nan=False))
