"""The Typer app and what every command shares: options, error handling, spec loading, JSON output.

No maths here. Every user error arrives as a TfmError and leaves as one line on stderr and an exit code.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import numpy as np
import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

try:
    from typer import _click as click  # typer 0.28 carries its own click
    from typer._click.utils import make_default_short_help
except ImportError:  # pragma: no cover - older typer uses click itself
    import click  # type: ignore[no-redef]
    from click.utils import make_default_short_help  # type: ignore[no-redef]

from ..errors import ExitCode, OutputError, Terminated, TfmError
from ..spec.definition import Spec
from ..version import __version__

EXIT_CODES = (
    "Exit codes: 0 ok / the property holds as expected; 1 the property is violated; "
    "2 bad input or usage; 3 inconclusive (a control failed or the check was vacuous); 130 interrupted (Ctrl-C); "
    "143 terminated (SIGTERM)."
)


class TfmGroup(TyperGroup):
    """The `tfm` group: a usage error (unknown option, bad or missing value) leaves like any other bad input,
    as one line on stderr, exit 2, and under --json as the error object on stdout."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The commands' list; when no command's module is loaded (`tfm --help`), from their summaries, exactly
        as click would list the commands themselves."""
        if self.commands:
            return super().format_commands(ctx, formatter)
        from . import SUMMARIES

        limit = formatter.width - 6 - max(map(len, SUMMARIES))
        with formatter.section("Commands"):
            formatter.write_dl([(name, make_default_short_help(text, limit)) for name, text in SUMMARIES.items()])

    def main(self, args: Sequence[str] | None = None, *pos: Any, standalone_mode: bool = True, **extra: Any) -> Any:
        words = list(sys.argv[1:] if args is None else args)
        try:
            code = super().main(words, *pos, standalone_mode=False, **extra)  # type: ignore[misc]  # click's signature
        except click.exceptions.NoArgsIsHelpError as exc:  # bare `tfm`: the help, as click shows it
            exc.show()
            code = exc.exit_code
        except click.ClickException as exc:
            ctx = getattr(exc, "ctx", None)  # a usage error's command, where click has one
            hint = f" (see {ctx.command_path} --help)" if ctx else ""
            code = _report(exc.format_message().rstrip(".") + hint, exc.exit_code, "--json" in words)
        except typer.Abort:
            code = _report("aborted", ExitCode.INTERRUPTED, "--json" in words)
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    cls=TfmGroup,
    name="tfm",
    help="Inspect and verify transformer specs: parameter counts, NumPy forward passes, and the seeds' properties.",
    epilog=EXIT_CODES,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
# NO_COLOR (no-color.org: set and not empty) means plain text: no colour, bold or italic, no progress bars.
# Rich's own no_color drops colours only, so styles go with color_system=None.
PLAIN = bool(os.environ.get("NO_COLOR"))
out = Console(highlight=False, emoji=False, markup=False, color_system=None if PLAIN else "auto")  # data, as is
# messages carry user text: never markup
err = Console(stderr=True, highlight=False, emoji=False, markup=False, color_system=None if PLAIN else "auto")
MAX_MESSAGE = 2000  # characters of an error line (the supported model types fit); the core cuts long values, this
# catches whatever it missed


class DType(str, Enum):
    float64 = "float64"
    float32 = "float32"


COST_DTYPE = DType.float32  # cost and memory figures: what models are deployed in (count, diff, bench, check)
RUN_DTYPE = DType.float64  # forward passes and checks: exact enough to judge a property (run, verify, attention)


class Expect(str, Enum):
    holds = "holds"
    breaks = "breaks"
    theory = "theory"


SpecArg = Annotated[
    Optional[Path],
    typer.Argument(
        help="YAML spec file, a Hugging Face model (a folder with config.json, or the config.json), or a .gguf file; "
        "the built-in default spec (N=2, H=4, m=8, d=32, r=64) if omitted."
    ),
]
StreamOpt = Annotated[
    Optional[Path], typer.Option("--input", "-i", help="The token ids .npy, one stream: (n,) or (1, n).")
]
TextOpt = Annotated[
    Optional[Path], typer.Option("--text", help="A text file, through the (base) model's tokenizer.json.")
]
StreamPromptOpt = Annotated[
    Optional[str], typer.Option("--prompt", help="The tokens as text given here, through the (base) model's tokenizer.")
]
CtxOpt = Annotated[
    Optional[int],
    typer.Option("--ctx", "-c", help="Chunks of this many tokens, each run alone, each scoring its second half."),
]
WeightsOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--weights",
        "-w",
        help="Weights: .npz or .safetensors from `tfm init`, or a Hugging Face checkpoint folder; "
        "the checkpoint of a Hugging Face folder given as SPEC, else seeded weights, if omitted.",
    ),
]
TargetOpt = Annotated[
    Optional[Path], typer.Option("--target", "-t", help="An encoder-decoder's target .npy (--input: the source).")
]
SeedOpt = Annotated[int, typer.Option("--seed", "-s", min=0, help="Seed for weights and random inputs (0 or more).")]
DTypeOpt = Annotated[DType, typer.Option("--dtype", help="Compute dtype.")]
RunDTypeOpt = Annotated[  # run and generate: a forward pass on a user's input
    Optional[DType],
    typer.Option("--dtype", help="Compute dtype [default: float64; float32 for a Hugging Face checkpoint]."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout, nothing else.")]
SeqLenOpt = Annotated[
    Optional[int], typer.Option("--seq-len", "-n", help="Sequence length n of the random inputs [default: 16].")
]
TolOpt = Annotated[
    Optional[float],
    typer.Option(
        "--tol",
        help="Relative tolerance [default: max(10 eps sqrt(n) N, 4 x the rounding noise measured on the inputs)].",
    ),
]
ExpectOpt = Annotated[
    Expect,
    typer.Option(
        "--expect",
        help="What exit code 0 means: the property holds, breaks, or what theory predicts for the spec (default).",
    ),
]
MaxMemoryOpt = Annotated[
    Optional[str],
    typer.Option(
        "--max-memory",
        help="Refuse work estimated above this size, with its unit (512M, 2G) [default: available memory].",
    ),
]
ForceOpt = Annotated[
    bool, typer.Option("--force", "-f", help="Replace an existing output (a folder: only the files tfm writes).")
]


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
def handled(json_out: bool = False, holds: str | None = None) -> Iterator[None]:
    """Turn a TfmError into one line on stderr (and a JSON object on stdout under --json) and its exit code.

    `holds` says what a command that runs no forward pass holds in memory, for the message if it runs out
    (otherwise it advises a smaller batch or sequence).

    NumPy's floating-point warnings are silenced here: a NaN or inf that matters is reported as a result
    (an error naming where it is, or a failed check), not as a Python warning on stderr.
    """
    try:
        with np.errstate(all="ignore"):
            yield
    except TfmError as exc:
        _fail(str(exc), exc.exit_code, json_out)
    except MemoryError:  # also one raised in a worker thread: the pool re-raises it here
        from ..analysis.memory import out_of_memory

        _fail(out_of_memory(holds), ExitCode.BAD_INPUT, json_out)
    except KeyboardInterrupt:
        _fail("interrupted", ExitCode.INTERRUPTED, json_out)
    except Terminated:
        _fail("terminated", ExitCode.TERMINATED, json_out)


def _fail(message: str, code: ExitCode, json_out: bool) -> None:
    raise typer.Exit(_report(message, code, json_out)) from None


def _report(message: str, code: int, json_out: bool) -> int:
    """Say what went wrong: one line on stderr, and the error object on stdout under --json."""
    from ..text import escaped as shown

    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    if json_out:
        import json

        print(json.dumps({"error": message, "exit_code": int(code)}))
    err.print(Text.assemble(("error:", "bold red"), " ", shown(message)), soft_wrap=True)
    return int(code)


@contextmanager
def busy(description: str, json_out: bool) -> Iterator[None]:
    """A pulsing progress bar on stderr while something runs; only on a terminal, never under --json."""
    with progress_bar(json_out) as progress:
        progress.add_task(description, total=None)
        yield


def progress_bar(json_out: bool) -> Any:
    """A transient Rich progress bar on stderr: only on a terminal, never under --json or NO_COLOR."""
    from rich.progress import Progress

    return Progress(console=err, transient=True, disable=json_out or PLAIN or not err.is_terminal)


def load(path: Path | None, weights: Path | None = None) -> tuple[Spec, str]:
    """The spec at `path`, else the one stored in a .safetensors `weights` file, else the built-in default
    (models.spec_at, as the library reads it). Where it came from is returned, and said on stderr unless it was a
    file named on the command line."""
    from ..tasks.sources import spec_at
    from ..text import escaped as shown

    spec, source, note = spec_at(path, weights)
    for line in [] if note is None else note.split("\n"):  # (one line each: a config.json's notes are several)
        err.print(shown(line), soft_wrap=True)
    return spec, source


def is_hugging_face(path: Path) -> bool:
    """A Hugging Face model: a folder (holding config.json) or a .json config, rather than a YAML spec."""
    from ..tasks.sources import is_hugging_face as named

    return named(path)


def weights_of(spec_path: Path | None, weights: Path | None) -> Path | None:
    """The weights a command runs: --weights, else the checkpoint in the Hugging Face folder given as the spec, or
    the GGUF file given as the spec, else None (seeded weights); models.checkpoint_at, as the library finds them."""
    from ..tasks.sources import checkpoint_at
    from ..text import escaped as shown

    found, note = checkpoint_at(spec_path, weights)
    if note is not None:
        err.print(f"note: {shown(note)}", soft_wrap=True, highlight=False)
    return found


def say_mode(mode: Any) -> None:
    """On stderr, how the weights of a lazily read file are held and why, when not all resident (analysis/modes.py's
    Mode, or None)."""
    from ..text import escaped

    if mode is not None and mode.said:
        err.print(f"note: {escaped(mode.note())}", soft_wrap=True, highlight=False)


def check_npy_output(path: Path | None) -> None:
    """An array output is named .npy (any case): tfm writes NumPy's .npy format, and the name should say so."""
    if path is not None and path.suffix.lower() != ".npy":
        raise OutputError(f"{path}: expected a .npy output path (tfm writes NumPy's .npy format)")


def spec_json(spec: Spec) -> dict[str, Any]:
    """How every command's JSON names its spec: `name` the label, `spec` the mapping that defines the model."""
    return {"name": spec.label, "spec": spec.to_dict()}


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
    import json  # (here: most commands print no JSON, and start-up counts)

    print(json.dumps(_plain(data), indent=2, allow_nan=False))
