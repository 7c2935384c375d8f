"""tfm: inspect and verify transformer specs (the library behind the `tfm` command).

Names are imported on first use, so `import transformer_cli` (and every `tfm` command) loads only the
modules it needs: `tfm count` never imports the model.
"""

from importlib import import_module
from typing import Any

from .version import __version__

_EXPORTS = {
    "decode": "model.decoding",
    "ArrayError": "errors", "ExitCode": "errors", "OutputError": "errors", "SpecError": "errors", "TfmError": "errors",
    "Transformer": "model.transformer", "sinusoidal_positions": "kernels", "softmax_columns": "kernels",
    "ParamCount": "analysis.params", "all_tensors": "analysis.params", "count_params": "analysis.params",
    "check_input": "model.runner", "run_forward": "model.runner",
    "DEFAULT_SPEC": "spec", "Spec": "spec", "load_spec": "spec", "spec_from_mapping": "spec",
    "CheckResult": "verify", "check_causality": "verify", "check_counts": "verify", "check_decoding": "verify",
    "check_equivariance": "verify", "check_scaling": "verify", "check_softmax": "verify", "make_setup": "verify",
    "verify_all": "verify",
    "check_weights": "io.weights", "init_weights": "io.weights", "load_weights": "sources",
    "save_weights": "io.weights",
    "estimate_forward": "analysis.memory",
    "run_bench": "bench",
}  # fmt: skip

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'transformer_cli' has no attribute '{name}'")


def __dir__() -> list[str]:
    return __all__
