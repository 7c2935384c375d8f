"""The `tfm` command line: thin wrappers that parse options, call the core, and render its results.

Commands register themselves on the Typer app when their module is imported. `tfm NAME` imports only the
module of NAME (Typer builds every registered command on each call, so fewer is faster); `tfm --help` imports
none (it lists the commands from SUMMARIES); an unknown name and `transformer_cli.cli.app` (the library's and
the tests' entry) load them all.
"""

from __future__ import annotations

import _thread
import gc
import os
import signal
import sys
import time
from importlib import import_module
from typing import Any

from ..errors import ExitCode, Terminated

MODULES = {  # in the order `tfm --help` lists them
    "count": "count_command",
    "init": "model_commands",
    "sample": "sample_command",
    "run": "model_commands",
    "generate": "generate_command",
    "perplexity": "perplexity_command",
    "compare": "compare_command",
    "schema": "spec_commands",
    "diff": "spec_commands",
    "spec": "hf_commands",
    "convert": "hf_commands",
    "attention": "attention_command",
    "verify": "verify_commands",
    "verify-equivariance": "verify_commands",
    "verify-causality": "verify_commands",
    "verify-decoding": "verify_commands",
    "verify-relative": "verify_commands",
    "verify-scaling": "verify_commands",
    "plan": "plan_command",
    "check": "check_command",
    "bench": "bench_command",
}

SUMMARIES = {  # each command's first paragraph, in the order of `tfm --help`; a test holds them to the commands
    "count": "Break the parameter count down by tensor and block, and check it against the closed form.",
    "init": "Write seeded float64 weights for a spec: .npz, or .safetensors with the spec in its metadata (README).",
    "run": "Run the forward pass on a saved input and show how the signal evolves through the blocks.",
    "sample": (
        "Write a random input for a spec: standard normal float64 columns (d, n) or (b, d, n); for a spec "
        "with a vocabulary V, uniform token ids (n,) or (b, n) in 0 .. V-1."
    ),
    "generate": (
        "Generate tokens after prompts: greedy by default, or sampled (--temperature, --top-k, --top-p, --seed)."
    ),
    "perplexity": "Measure the perplexity over a stream of tokens, with its uncertainty, as llama-perplexity does.",
    "compare": (
        "Compare model B with model A (the base) over a stream of tokens, as llama-perplexity --kl-divergence does."
    ),
    "schema": "Print the JSON Schema of the spec format, for editor completion and validation (always JSON).",
    "diff": "Compare two specs: keys, parameters by component, FLOPs and memory, with the differences marked.",
    "spec": "Print the tfm spec a Hugging Face config.json maps to, as YAML (save it to keep or edit the spec).",
    "convert": "Convert weights between a Hugging Face folder (config.json and safetensors) and tfm's weights file.",
    "attention": "Show a block's attention weights as a heatmap: row k is a key, column q a query, columns sum to 1.",
    "verify-equivariance": "Check Transformer(XP) = Transformer(X)P (seed property a) on random inputs.",
    "verify-causality": "Check that output column t depends only on columns <= t, and that it does depend on them.",
    "verify-decoding": (
        "Check that decoding one column at a time with a key/value cache equals the parallel forward pass."
    ),
    "verify-relative": "Check that shifting every position by the same amount leaves the output unchanged.",
    "verify-scaling": (
        "Check the variance of the scores the model computes: m * scale^2 for unit-variance queries and keys."
    ),
    "verify": "Run every check against what theory predicts for the spec: one table, one exit code (for CI).",
    "plan": (
        "Plan serving and training: memory (weights, KV cache, the prefill's peak; model states, activations) "
        "and time (prefill and decoding on named hardware), at batch b and context n."
    ),
    "check": "Check many spec files at once: valid, within budgets, and every property as theory predicts.",
    "bench": "Time the forward pass: median and spread, tokens/s, GFLOP/s and peak memory.",
}


def load_commands(names: list[str] | None = None) -> Any:
    """Import the modules of the named commands (all of them for None, none for []) and return the Typer app."""
    for module in dict.fromkeys(MODULES[n] for n in names) if names is not None else dict.fromkeys(MODULES.values()):
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
    unraisablehook, sys.unraisablehook = sys.unraisablehook, _unraisable
    try:
        words = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
        name = words[0] if words else None
        # no command: the group's help (listed from SUMMARIES) or --version, which need no command's module
        app = load_commands([name] if name in MODULES else [] if name is None else None)
        # The modules just imported live until the process ends: freezing them spares the collector walking
        # them again, during the command and in the full collection at exit (docs/performance.md: start-up).
        gc.freeze()
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
        sys.unraisablehook = unraisablehook


def _unraisable(unraisable: Any) -> None:
    """An interrupt that landed in a callback Python cannot raise from (a weakref's, as importlib's module locks
    have): Python would print "Exception ignored" with a traceback and carry on. Deliver it again instead, from
    another thread once this hook has returned (delivered now, it would land in the hook), so it ends the command
    as any Ctrl-C does; should it land in such a callback again, it comes back here."""
    if isinstance(unraisable.exc_value, (KeyboardInterrupt, Terminated)):
        signum = signal.SIGINT if isinstance(unraisable.exc_value, KeyboardInterrupt) else signal.SIGTERM
        _thread.start_new_thread(_deliver, (signum,))
    else:
        sys.__unraisablehook__(unraisable)


def _deliver(signum: signal.Signals) -> None:
    time.sleep(0.01)  # the main thread leaves the hook first
    _thread.interrupt_main(signum)


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
