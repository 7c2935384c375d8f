"""tfm: inspect and verify transformer specs (the library behind the `tfm` command).

Names are imported on first use, so `import transformer_cli` (and every `tfm` command) loads only the
modules it needs: `tfm count` never imports the model.
"""

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "decode": "decoding",
    "ArrayError": "errors", "ExitCode": "errors", "OutputError": "errors", "SpecError": "errors", "TfmError": "errors",
    "Transformer": "model", "sinusoidal_positions": "layers", "softmax_columns": "layers",
    "ParamCount": "params", "all_tensors": "params", "count_params": "params",
    "check_input": "runner", "run_forward": "runner",
    "DEFAULT_SPEC": "spec", "Spec": "spec", "load_spec": "spec", "spec_from_mapping": "spec",
    "CheckResult": "verify", "check_causality": "verify", "check_counts": "verify", "check_decoding": "verify",
    "check_equivariance": "verify", "check_scaling": "verify", "check_softmax": "verify", "make_setup": "verify",
    "verify_all": "verify",
    "check_weights": "weights", "init_weights": "weights", "load_weights": "weights", "save_weights": "weights",
    "estimate_forward": "memory",
    "run_bench": "bench",
}  # fmt: skip

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'transformer_cli' has no attribute '{name}'")


def __dir__() -> list[str]:
    return __all__
