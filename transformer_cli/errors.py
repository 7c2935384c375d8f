"""One error type for everything a user can get wrong, and the exit codes the CLI maps to."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes of every `tfm` command (documented in the README and in `tfm --help`)."""

    OK = 0  # success, or the checked property holds
    VIOLATED = 1  # a checked property does not hold
    BAD_INPUT = 2  # bad spec, array, weights file, option or output path
    INCONCLUSIVE = 3  # a check could not tell (its control failed, or it was vacuous)
    INTERRUPTED = 130  # Ctrl-C
    TERMINATED = 143  # SIGTERM (kill, a service manager): cleaned up as for Ctrl-C


def clipped(text: object, limit: int = 200) -> str:
    """`text` for a one-line message: cut to `limit` characters (a 10 KB header must not make a 10 KB line)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Terminated(BaseException):
    """SIGTERM, raised in the main thread by the CLI's handler so that cleanup runs as for Ctrl-C."""


class TfmError(Exception):
    """A problem with the user's input: the CLI prints it on one line and exits with `exit_code`."""

    exit_code = ExitCode.BAD_INPUT


class SpecError(TfmError):
    """A spec file that cannot be read or does not describe a valid model."""


class ArrayError(TfmError):
    """An input array or weights file that is unreadable or does not fit the spec."""


class OutputError(TfmError):
    """An output path that cannot be written."""


class NumericalError(TfmError):
    """A result the chosen dtype cannot represent (NaN or inf): nothing is written."""


class OptionError(TfmError):
    """An option out of its range or of the wrong kind, or a library call's unknown keyword: the command line and
    the library say the same line (options.py)."""


class Overflow(NumericalError):
    """An activation the dtype cannot hold, found where it would vanish silently (a norm dividing by inf)."""


def overflow(dtype: object, where: str) -> Overflow:
    """The one-line error for activations that overflow `dtype` at `where` (float32: try float64)."""
    hint = "; try --dtype float64" if str(dtype) != "float64" else ""
    return Overflow(
        f"the activations overflow {dtype}: {where} is inf, which would turn the columns to 0: "
        f"{dtype} cannot hold them{hint}"
    )
