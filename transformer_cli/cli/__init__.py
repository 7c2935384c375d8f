"""The `tfm` command line: thin wrappers that parse options, call the core, and render its results.

Commands register themselves on the Typer app when their module is imported. `tfm NAME` imports only the
module of NAME (Typer builds every registered command on each call, so fewer is faster); `tfm --help`, an
unknown name, and `transformer_cli.cli.app` (the library's and the tests' entry) load them all.
"""

from __future__ import annotations

import os
import signal
import sys
from importlib import import_module
from typing import Any

from ..errors import ExitCode, Terminated

MODULES = {  # in the order `tfm --help` lists them
    "count": "model_commands", "init": "model_commands", "sample": "sample_command", "run": "model_commands",
    "schema": "spec_commands", "diff": "spec_commands", "spec": "hf_commands", "convert": "hf_commands",
    "attention": "attention_command",
    "verify": "verify_commands", "verify-equivariance": "verify_commands", "verify-causality": "verify_commands",
    "verify-decoding": "verify_commands", "verify-relative": "verify_commands", "verify-scaling": "verify_commands",
    "plan": "plan_command", "check": "check_command", "bench": "bench_command",
}  # fmt: skip


def load_commands(names: list[str] | None = None) -> Any:
    """Import the modules of the named commands (all of them for None) and return the Typer app."""
    for module in dict.fromkeys(MODULES[n] for n in names) if names else dict.fromkeys(MODULES.values()):
        import_module(f".{module}", __name__)
    return import_module(".common", __name__).app


def main() -> None:
    """The `tfm` console script (and `python -m transformer_cli`): load the one command asked for, then run it.

    Ctrl-C and SIGTERM take one path: an exception in the main thread, so every `finally` runs (a temp file
    is removed) and the command prints one line, exit 130 or 143. Before a command's own handling starts
    (imports take a few hundred ms) they end it quietly with the same codes; once it is over, a late signal
    simply kills the process, as it would have before Python started.
    """
    signal.signal(signal.SIGINT, _quit)  # first of all: while importing, nothing is written, so just leave
    signal.signal(signal.SIGTERM, _quit)  # (an exception raised inside the import machinery prints a traceback)
    try:
        words = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
        name = words[0] if words else None
        app = load_commands([name] if name in MODULES else None)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # from here: KeyboardInterrupt, cleaned up
        signal.signal(signal.SIGTERM, _terminate)  # SIGTERM then cleans up as Ctrl-C does
        app(prog_name="tfm")
    except KeyboardInterrupt:
        sys.exit(ExitCode.INTERRUPTED)
    except Terminated:
        sys.exit(ExitCode.TERMINATED)
    except Exception as exc:  # an interrupt inside an import can arrive wrapped (class creation's RuntimeError)
        cause = _signal_cause(exc)
        if cause is None:
            raise
        sys.exit(ExitCode.INTERRUPTED if isinstance(cause, KeyboardInterrupt) else ExitCode.TERMINATED)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _signal_cause(exc: BaseException) -> BaseException | None:
    """The KeyboardInterrupt or Terminated an exception was raised from or during, if any."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, (KeyboardInterrupt, Terminated)):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return None


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def _quit(signum: int, frame: object) -> None:
    """A signal during start-up: exit at once, quietly, with the usual code (nothing has been written yet)."""
    os._exit(ExitCode.INTERRUPTED if signum == signal.SIGINT else ExitCode.TERMINATED)


def __getattr__(name: str) -> Any:
    if name == "app":
        return load_commands()
    raise AttributeError(f"module 'transformer_cli.cli' has no attribute '{name}'")
