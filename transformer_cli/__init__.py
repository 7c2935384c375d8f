"""tfm: inspect and verify transformer specs (the library behind the `tfm` command)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tfm")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+source"

from .decoding import decode
from .errors import ArrayError, ExitCode, OutputError, SpecError, TfmError
from .model import Transformer, sinusoidal_positions, softmax_columns
from .params import ParamCount, all_tensors, count_params
from .runner import check_input, run_forward
from .spec import DEFAULT_SPEC, Spec, load_spec, spec_from_mapping
from .verify import (
    CheckResult,
    check_causality,
    check_counts,
    check_decoding,
    check_equivariance,
    check_scaling,
    check_softmax,
    make_setup,
    verify_all,
)
from .weights import check_weights, init_weights, load_weights, save_weights

__all__ = [
    "DEFAULT_SPEC",
    "ArrayError",
    "CheckResult",
    "ExitCode",
    "OutputError",
    "ParamCount",
    "Spec",
    "SpecError",
    "TfmError",
    "Transformer",
    "__version__",
    "all_tensors",
    "check_causality",
    "check_counts",
    "check_decoding",
    "check_equivariance",
    "check_input",
    "check_scaling",
    "check_softmax",
    "check_weights",
    "count_params",
    "decode",
    "init_weights",
    "load_spec",
    "load_weights",
    "make_setup",
    "run_forward",
    "save_weights",
    "sinusoidal_positions",
    "softmax_columns",
    "spec_from_mapping",
    "verify_all",
]
