"""`tfm run` as a library call: load and check an input array, run the forward pass, summarise the output."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.memory import check_memory, estimate_encoder_decoder
from ..analysis.modes import Mode, build, mode_for
from ..components.encoder import encoder_run_spec
from ..errors import ArrayError, NumericalError, Overflow, SpecError
from ..io.arrays import first_nonfinite, open_npy, peek_npy
from ..io.weights import Weights, init_weights, seeded_source
from ..options import count
from ..spec.definition import Spec
from ..spec.load import check_length
from ..spec.stacks import encoder
from .sources import load_weights, read_lazily


def token_ids(shape: tuple[int, ...], dtype: np.dtype, spec: Spec) -> bool:
    """Whether an input of this shape and dtype is token ids: integers (n,) or (b, n), for a spec with V."""
    return bool(spec.V) and dtype.kind in "iu" and len(shape) in (1, 2)


def sequences(shape: tuple[int, ...], dtype: np.dtype, spec: Spec) -> tuple[int, int]:
    """(b, n) of an input: token ids (n,) / (b, n), or columns (d, n) / (b, d, n)."""
    if token_ids(shape, dtype, spec):
        return (shape[0] if len(shape) == 2 else 1), shape[-1]
    return (shape[0] if len(shape) == 3 else 1), shape[-1]


def check_input_header(shape: tuple[int, ...], dtype: np.dtype, spec: Spec, source: str) -> list[str]:
    """Check an input's shape and dtype against the spec before its data is read; returns notes on casts."""
    if token_ids(shape, dtype, spec):
        if 0 in shape:
            raise ArrayError(f"{source}: shape {shape} is empty, expected at least one sequence of one token id")
        check_length(spec, shape[-1], source)
        return []
    d, rows = spec.input_width, "d_e" if spec.embed_project else "d"  # (ELECTRA's columns are the embedding's)
    ids_but_not_integers = spec.V and len(shape) in (1, 2) and dtype.kind not in "iu"
    if ids_but_not_integers and (len(shape) == 1 or shape[-2] != d):
        raise ArrayError(
            f"{source}: dtype {dtype}, expected integers for token ids (shape {shape}); real numbers "
            f"are columns ({rows}, n) or (b, {rows}, n) with {rows} = {d}"
        )
    if len(shape) not in (2, 3):
        if spec.V:
            raise ArrayError(
                f"{source}: shape {shape}, expected token ids (n,) or (b, n), or columns ({rows}, n) or "
                f"(b, {rows}, n) with {rows} = {d}"
            )
        raise ArrayError(f"{source}: shape {shape}, expected ({rows}, n) or (b, {rows}, n) with {rows} = {d}")
    if shape[-2] != d:
        raise ArrayError(f"{source}: shape {shape}, expected {rows} = {d} rows (axis -2), one column per token")
    n = shape[-1]
    if n == 0 or (len(shape) == 3 and shape[0] == 0):
        raise ArrayError(f"{source}: shape {shape} is empty, expected at least one sequence of one token")
    check_length(spec, n, source)
    if dtype.kind not in "biuf":  # by kind: timedelta64 is an integer subtype to NumPy, not a number here
        raise ArrayError(f"{source}: dtype {dtype}, expected real numbers (float or integer)")
    return [f"input dtype {dtype} cast to float64"] if dtype.kind != "f" else []


def check_input(x: np.ndarray, spec: Spec, source: str, dtype: str = "float64") -> tuple[np.ndarray, list[str]]:
    """Check an input array against the spec; returns it as float64 (token ids as int64) plus notes."""
    notes = check_input_header(x.shape, x.dtype, spec, source)
    if token_ids(x.shape, x.dtype, spec) and spec.V is not None:
        outside = np.argwhere((x < 0) | (x >= spec.V))
        if outside.size:
            at = tuple(int(i) for i in outside[0])
            raise ArrayError(f"{source}: token id {x[at]} at index {at}, expected 0 .. {spec.V - 1} (V = {spec.V})")
        padded = np.argwhere(x == spec.pad_id) if spec.pad_id is not None else np.empty((0,))
        if padded.size:  # RoBERTa's positions skip padding, which tfm's learned positions do not model
            at = tuple(int(i) for i in padded[0])
            raise ArrayError(
                f"{source}: token id {spec.pad_id} at index {at} is the padding token (pad_id): tfm "
                "runs unpadded sequences; give each sequence without its padding"
            )
        return x.astype(np.int64), notes
    x = np.asarray(x, dtype=np.float64)
    bad = first_nonfinite(x)
    if bad is not None:
        raise ArrayError(f"{source}: {x[bad]} at index {bad}, expected finite numbers")
    bad = first_nonfinite(x.astype(dtype))
    if bad is not None:
        raise ArrayError(f"{source}: {x[bad]:.3g} at index {bad} does not fit in {dtype}; use --dtype float64")
    return x, notes


@dataclass
class RunResult:
    """A forward pass and what `tfm run` reports about it."""

    spec: Spec
    input_shape: tuple[int, ...]
    dtype: str
    weights_source: str
    output: np.ndarray
    block_rms: list[float]  # RMS after positions, then after each block
    notes: list[str] = field(default_factory=list)
    mode: Mode | None = None  # how the weights were held (one stack), and why

    def stats(self) -> dict[str, Any]:
        y = np.asarray(self.output, dtype=np.float64)
        finite = bool(np.all(np.isfinite(y)))
        values = y[np.isfinite(y)] if not finite else y

        def pick(f: Callable[[np.ndarray[Any, Any]], Any]) -> float | None:
            return float(f(values)) if values.size else None

        return {"mean": pick(np.mean), "std": pick(np.std), "min": pick(np.min), "max": pick(np.max), "finite": finite}

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.spec.label,
            "spec": self.spec.to_dict(),
            "input_shape": list(self.input_shape),
            "output_shape": list(self.output.shape),
            "dtype": self.dtype,
            "weights": self.weights_source,
            "output_stats": self.stats(),
            "activation_rms": {"input_plus_positions": self.block_rms[0]}
            | {f"after_block_{i + 1}": v for i, v in enumerate(self.block_rms[1:])},
            "notes": self.notes,
            "weights_mode": self.mode.to_dict() if self.mode is not None else None,
        }


def random_input(spec: Spec, n: int, b: int | None = None, seed: int = 0) -> np.ndarray:
    """A random input for `spec`: standard normal columns (d, n) or (b, d, n); with a vocabulary, uniform token
    ids (n,) or (b, n). n, b and the seed are checked as `tfm sample` checks them; n beyond max_len is refused."""
    check_length(spec, count(n, "seq-len"), "--seq-len")
    b, seed = None if b is None else count(b, "batch"), count(seed, "seed", 0)
    rng = np.random.default_rng(seed)
    if spec.V:
        return rng.integers(0, spec.V, size=(n,) if b is None else (b, n), dtype=np.int64)
    d = spec.input_width
    return rng.standard_normal((d, n) if b is None else (b, d, n))


def get_weights(spec: Spec, weights_path: Path | None, seed: int) -> tuple[Weights, str]:
    """Weights from a file, or seeded ones; with a description of where they came from."""
    if weights_path is not None:
        return load_weights(weights_path, spec), str(weights_path)
    return init_weights(spec, seed), seeded_source(seed)


def lazy_weights(spec: Spec, weights_path: Path | None) -> Weights | None:
    """The weights of a file read tensor by tensor as the pass asks (a Hugging Face folder, a GGUF file: its headers
    alone read here), whose mode is chosen from their stored bytes (analysis/modes.py); else None: seeded weights and
    tfm's own files are made or read once the memory check has passed."""
    return load_weights(weights_path, spec) if weights_path is not None and read_lazily(weights_path) else None


def run_forward(
    spec: Spec,
    input_path: Path | np.ndarray,
    weights_path: Path | None = None,
    seed: int = 0,
    dtype: str = "float64",
    max_memory: str | None = None,
    on_block: Callable[[float], None] | None = None,
    target_path: Path | np.ndarray | None = None,
    weights: Weights | None = None,
) -> RunResult:
    """Check and load an input (a .npy path, or an array), run Transformer on it, and record the activation RMS
    after each block; `weights` already loaded, else read from weights_path (or seeded).

    The input's header and the memory estimate are checked before any data is read or weight built.
    """
    two_stacks = encoder(spec) is not None
    if two_stacks and target_path is None:
        raise SpecError(f"{spec.label}: an encoder-decoder reads a source and a target: --input SRC --target TGT")
    if target_path is not None and not two_stacks:
        raise SpecError(f"--target: {spec.label} has no encoder (N_enc); --target is for encoder-decoders")
    source_spec = spec  # what the input is checked against: an encoder-decoder's source has its own vocabulary
    if target_path is not None:
        source_spec = encoder_run_spec(spec)
    header = _header(input_path)
    check_input_header(header.shape, header.dtype, source_spec, _named(input_path, "input"))
    b, n = sequences(header.shape, header.dtype, source_spec)
    if weights is None:
        weights = lazy_weights(spec, weights_path)
    mode = None
    if target_path is None:
        mode = mode_for(spec, weights, b, n, dtype, max_memory, "this forward pass", once=True)
    else:
        target_header = _header(target_path)
        check_input_header(target_header.shape, target_header.dtype, spec, _named(target_path, "target"))
        check_memory(
            estimate_encoder_decoder(spec, b, n, target_header.shape[-1], dtype), max_memory, "this forward pass"
        )
    x, notes = check_input(_array(input_path), source_spec, _named(input_path, "input"), dtype)
    if weights is None:
        weights, source = get_weights(spec, weights_path, seed)
    else:
        source = str(weights_path) if weights_path is not None else seeded_source(seed)
    trace: list[float] = []
    try:
        if target_path is not None:
            from ..model.encoder_decoder import EncoderDecoder

            t, target_notes = check_input(_array(target_path), spec, _named(target_path, "target"), dtype)
            model = EncoderDecoder(spec, weights, np.dtype(dtype))
            y = model.forward(x, t, trace=trace, on_block=on_block)
            notes += target_notes
        else:
            assert mode is not None
            y = build(spec, weights, dtype, mode).forward(x, trace=trace, on_block=on_block)
    except Overflow as error:  # found inside the pass, which does not know the input's name
        raise Overflow(f"{_named(input_path, 'input')}: {error}") from None
    bad = first_nonfinite(y)
    if bad is not None:
        hint = "; try --dtype float64" if dtype != "float64" else ""
        where = _named(input_path, "input")
        raise NumericalError(f"{where}: the output has {y[bad]} at index {bad}: {dtype} cannot hold it{hint}")
    return RunResult(spec, x.shape, dtype, source, y, trace, notes, mode)


def _header(x: Path | np.ndarray) -> Any:
    """An input's shape and dtype, from a .npy's header before its data is read, or from the array."""
    return peek_npy(x) if isinstance(x, (str, Path)) else np.asarray(x)


def _array(x: Path | np.ndarray) -> np.ndarray:
    return open_npy(x) if isinstance(x, (str, Path)) else np.asarray(x)


def _named(x: Path | np.ndarray, what: str) -> str:
    """How a message names an input: its file, or `what` (the input, the target) for an array."""
    return str(x) if isinstance(x, (str, Path)) else what
