"""The `tfm` command line: thin wrappers that parse options, call the core, and render its results.

Commands register themselves on the Typer app when their module is imported. `tfm NAME` imports only the
module of NAME (Typer builds every registered command on each call, so fewer is faster); `tfm --help`, an
unknown name, and `transformer_cli.cli.app` (the library's and the tests' entry) load them all.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Any

MODULES = {  # in the order `tfm --help` lists them
    "count": "model_commands", "init": "model_commands", "sample": "sample_command", "run": "model_commands",
    "schema": "spec_commands", "diff": "spec_commands", "attention": "attention_command",
    "verify": "verify_commands", "verify-equivariance": "verify_commands", "verify-causality": "verify_commands",
    "verify-decoding": "verify_commands", "verify-scaling": "verify_commands",
    "check": "check_command", "bench": "bench_command",
}  # fmt: skip


def load_commands(names: list[str] | None = None) -> Any:
    """Import the modules of the named commands (all of them for None) and return the Typer app."""
    for module in dict.fromkeys(MODULES[n] for n in names) if names else dict.fromkeys(MODULES.values()):
        import_module(f".{module}", __name__)
    return import_module(".common", __name__).app


def main() -> None:
    """The `tfm` console script: load the one command asked for, then run the app."""
    words = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
    name = words[0] if words else None
    load_commands([name] if name in MODULES else None)(prog_name="tfm")


def __getattr__(name: str) -> Any:
    if name == "app":
        return load_commands()
    raise AttributeError(f"module 'transformer_cli.cli' has no attribute '{name}'")
