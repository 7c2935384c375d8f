"""The `tfm` command line: thin wrappers that parse options, call the core, and render its results."""

from . import attention_command, bench_command, check_command, model_commands, spec_commands, verify_commands  # noqa: F401  (importing registers the commands)
from .app import app

__all__ = ["app"]
