"""tfm: inspect and verify transformer specs (the library behind the `tfm` command).

`tfm.load(path)` opens whatever a command takes (a YAML spec, a Hugging Face folder, tfm's weights, a GGUF file)
as a Model, whose methods are the commands; the functions below them are exported too (docs/library.md).

Names are imported on first use, so `import transformer_cli` (and every `tfm` command) loads only the
modules it needs: `tfm count` never imports the model.
"""

from importlib import import_module
from typing import Any

from .registry import fill_with
from .version import __version__

_EXPORTS = {
    # a model, from any path a command takes
    "load": "api.models",
    "Model": "api.models",
    "load_spec": "api.models",
    "load_weights": "tasks.sources",
    "CheckpointSummary": "tasks.sources",
    "DEFAULT_SPEC": "spec",
    "Spec": "spec",
    "spec_from_mapping": "spec",
    "spec_schema": "spec.schema",
    # counting, costs, plans, comparisons
    "ParamCount": "analysis.params",
    "all_tensors": "components.tensors",
    "count_params": "analysis.params",
    "Costs": "analysis.costs",
    "costs": "analysis.costs",
    "estimate_forward": "analysis.memory",
    "Plan": "analysis.plan",
    "plan": "analysis.plan",
    "Adapters": "analysis.lora",
    "adapters": "analysis.lora",
    "Split": "analysis.parallel",
    "diff": "analysis.diff",
    "compare": "api.models",
    "perplexity": "api.models",
    "Comparison": "tasks.comparison",
    "Thresholds": "tasks.comparison",
    "PerplexityResult": "tasks.perplexity",
    # running, decoding, generating
    "Transformer": "model.transformer",
    "EncoderDecoder": "model.encoder_decoder",
    "sinusoidal_positions": "kernels",
    "softmax_columns": "kernels",
    "RunResult": "tasks.runner",
    "check_input": "tasks.runner",
    "random_input": "tasks.runner",
    "run_forward": "tasks.runner",
    "Decoder": "model.decoding",
    "decode": "model.decoding",
    "Generation": "model.generate",
    "Sampling": "model.generate",
    "generate": "model.generate",
    # the seeds' properties, and many specs in CI
    "CheckResult": "verify",
    "check_causality": "verify",
    "check_counts": "verify",
    "check_decoding": "verify",
    "check_equivariance": "verify",
    "check_scaling": "verify",
    "check_softmax": "verify",
    "make_setup": "verify",
    "verify_all": "verify",
    "Verification": "verify",
    "Budgets": "tasks.check",
    "SpecCheck": "tasks.check",
    "check_specs": "tasks.check",
    # weights written and converted
    "check_weights": "io.weights",
    "init_weights": "io.weights",
    "save_weights": "io.weights",
    "Written": "api.writing",
    "convert": "api.writing",
    "init": "api.writing",
    "run_bench": "tasks.bench",
    # errors and exit codes
    "ArrayError": "errors",
    "ExitCode": "errors",
    "OptionError": "errors",
    "OutputError": "errors",
    "SpecError": "errors",
    "TfmError": "errors",
}

__all__ = ["__version__", *_EXPORTS]


def _register_components() -> None:
    """Import the components, whose modules register the kinds the spec's choices name (spec/choices.py): run the
    first time a spec's choices are read, so a command that checks no spec (`tfm --help`) does without them."""
    from . import components  # noqa: F401


fill_with(_register_components)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'transformer_cli' has no attribute '{name}'")


def __dir__() -> list[str]:
    return __all__
