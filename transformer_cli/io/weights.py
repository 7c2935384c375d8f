"""Model weights: seeded initialisation, loading with full validation, and saving.

Weights are a flat dict from the public tensor names (`blocks.{i}.attention.W_Q`, ...) to arrays, exactly
as stored in a weights file, so a file and the in-memory model are the same thing.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from ..components.base import INTEGER, Tensor
from ..components.ngram import buffer_values
from ..components.tensors import all_tensors, iter_tensors
from ..errors import ArrayError, SpecError
from ..spec.definition import Spec
from ..spec.stacks import decoder
from ..spec.validate import spec_from_mapping
from ..text import shown
from . import safetensors_io
from .arrays import Header, first_nonfinite, open_npz, peek_npz
from .outputs import write_atomic

Weights = dict[str, np.ndarray]


def _init_std(spec: Spec, tensor: Tensor) -> float:
    """Standard deviation of a weight's entries; 0 means the tensor is initialised to a constant."""
    leaf = tensor.name.rsplit(".", 1)[-1]
    depth = 2 * spec.N  # residual sublayers: their outputs are scaled so the sum over depth stays O(1)
    stds = {
        "W_Q": spec.d**-0.5,
        "W_K": spec.d**-0.5,
        "W_V": spec.d**-0.5,
        "W_O": (spec.H * spec.value_size * depth) ** -0.5,
        "W_QE": spec.d**-0.5,  # a mixture of heads' experts (JetMoE's), as W_Q and W_O
        "W_OE": (spec.H * spec.m * depth) ** -0.5,
        "W_QA": spec.d**-0.5,  # latent attention's down projections, then the ups from the (normalised) latents
        "W_KVA": spec.d**-0.5,
        "W_QB": (spec.q_rank or 1) ** -0.5,
        "W_KVB": (spec.kv_rank or 1) ** -0.5,
        "W_gate": spec.d**-0.5,  # a shared expert's gate
        "W1": (2.0 / spec.d) ** 0.5,
        "W3": spec.d**-0.5,  # the gated feedforward's linear (up) projection
        "W2": (spec.r * depth) ** -0.5,
        "P": 0.5**0.5,
        "R": 1.0,  # DeBERTa's relative positions' table, normalised before use
        "E": 1.0,  # embedded columns of unit variance, like the standard normal inputs the checks use
        "T": 1.0,  # token types likewise
        "rel_bias": 1.0,  # relative position biases of order one next to scores of order one
        "W_in": (spec.embed_dim or 1) ** -0.5,  # a narrower embedding (d_e) projected up to d: columns of unit variance
        "W_out": spec.d**-0.5,  # and the last columns down to d_e for the head
        "W_t": spec.d**-0.5,  # the head's transform (ModernBERT-decoder's), a norm after it
        # the recurrent mixers' own: a convolution that mixes (zero, a mixer's output is zero whatever it reads),
        # decays and steps of order one, D x and the shared blocks' adapters' down projections (the ups zero, LoRA's)
        "kernel": spec.conv_kernel**-0.5,
        "A_log": 0.5,
        "dt_bias": 0.5,
        "D": 1.0,
        "W_down": spec.d**-0.5,
        # DeepSeek-V4's attention: its one key head, its grouped output, and an indexer's heads' weights
        "W_KV": spec.d**-0.5,
        "W_OA": (spec.H * spec.m // (spec.o_groups or 1)) ** -0.5,
        "W_OB": ((spec.o_groups or 1) * (spec.o_rank or 1) * depth) ** -0.5,
        "W_W": spec.d**-0.5,
    }
    if tensor.name == "head.W":
        return spec.d**-0.5  # logits of order one
    return stds.get(leaf, 0.0)


def iter_init(spec: Spec, seed: int = 0) -> Iterator[tuple[str, np.ndarray]]:
    """The seeded weights one tensor at a time, in file order: the same values as init_weights."""
    rng = np.random.default_rng(seed)
    for tensor in iter_tensors(spec):
        std = _init_std(spec, tensor)
        if tensor.name.endswith("router_hash"):  # (each token id's k distinct experts, at random)
            order = np.argsort(rng.random((tensor.shape[0], spec.E or 1)), axis=1)
            yield tensor.name, order[:, : tensor.shape[1]]
        elif tensor.name.endswith(INTEGER):  # (an n-gram table's numbers, as its spec makes them)
            block = decoder(spec).layer(int(tensor.name.split(".")[1]))
            yield tensor.name, buffer_values(spec, block, tensor.name).astype(np.int64)
        elif std > 0:
            yield tensor.name, rng.normal(0.0, std, size=tensor.shape)
        elif tensor.name.endswith("gamma") and not spec.norm_plus_one:  # (1 + gamma) starts at gamma = 0
            yield tensor.name, np.ones(tensor.shape)
        else:
            yield tensor.name, np.zeros(tensor.shape)


def seeded_source(seed: int) -> str:
    """Where seeded weights come from, as every command says it (beside a checkpoint's path)."""
    return f"seeded init (seed {seed})"


def init_weights(spec: Spec, seed: int = 0) -> Weights:
    """Deterministic float64 weights from `seed` (scheme in the README: fan-in scaled, residual outputs / sqrt(2N))."""
    return dict(iter_init(spec, seed))


def _listed(items: list[str], limit: int = 4) -> str:
    """The first few items (names from a file: escaped and cut), and how many more."""
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(shown(item) for item in items[:limit]) + more


def check_layout(layout: dict[str, Header], spec: Spec, source: str) -> None:
    """Raise an ArrayError listing every tensor that is missing, unexpected, misshapen or not floating point."""
    expected = {t.name: t.shape for t in all_tensors(spec)}
    problems = []
    missing = [name for name in expected if name not in layout]
    unexpected = [name for name in layout if name not in expected]
    if missing:
        problems.append(f"missing {_listed(missing)}")
    if unexpected:
        problems.append(f"unexpected {_listed(unexpected)}")
    present = [name for name in expected if name in layout]
    shapes = [f"{n} {layout[n].shape} (expected {expected[n]})" for n in present if layout[n].shape != expected[n]]
    if shapes:
        problems.append(f"wrong shape {_listed(shapes, 3)}")
    dtypes = [
        f"{n} {layout[n].dtype}"
        for n in present
        if not np.issubdtype(layout[n].dtype, np.floating) and not n.endswith(INTEGER)
    ]
    if dtypes:
        problems.append(f"not floating point {_listed(dtypes)}")
    if problems:
        raise ArrayError(f"{source}: weights do not fit spec '{spec.label}': " + "; ".join(problems))


def check_weights(weights: Weights, spec: Spec, source: str) -> None:
    """Check names, shapes and dtypes against `spec`, then that every value is finite."""
    check_layout({name: Header(w.shape, w.dtype) for name, w in weights.items()}, spec, source)
    nonfinite = [f"{n} at {first_nonfinite(w)}" for n, w in weights.items() if first_nonfinite(w) is not None]
    if nonfinite:
        raise ArrayError(f"{source}: NaN or inf in {_listed(nonfinite)}")


FORMATS = (".npz", ".safetensors")


def weights_format(path: Path) -> str:
    """'.npz' or '.safetensors', from the extension in any case (W.NPZ too); anything else is an error."""
    if path.suffix.lower() not in FORMATS:
        raise ArrayError(f"{path}: unknown weights format '{path.suffix}', expected a .npz or .safetensors file")
    return path.suffix.lower()


def load_weights(path: str | Path, spec: Spec) -> Weights:
    """Load weights (.npz without pickle, or .safetensors), checking the layout from the headers before any data.

    A .safetensors file written by tfm also holds its spec: it must describe the same model as the spec given
    (labels such as name and description may differ).
    """
    path = Path(path)
    if weights_format(path) == ".npz":
        check_layout(peek_npz(path), spec, str(path))
        weights = open_npz(path)
    else:
        layout, metadata = safetensors_io.peek(path)
        stored = _stored(metadata, path)
        if stored is not None and stored.model_keys() != spec.model_keys():
            differ = spec.differing_keys(stored)
            raise ArrayError(f"{path}: written for another spec ({', '.join(differ)} differ from '{spec.label}')")
        check_layout(layout, spec, str(path))
        weights = safetensors_io.load(path)
    check_weights(weights, spec, str(path))
    return weights


def _stored(metadata: dict[str, str], path: Path) -> Spec | None:
    stored = safetensors_io.stored_spec(metadata, path)
    return spec_from_mapping(stored, f"{path}: metadata 'tfm_spec'") if stored is not None else None


def spec_of_weights(path: str | Path, required: bool = False) -> Spec | None:
    """The spec stored in a .safetensors weights file by `tfm init`; None (or, if required, an error) if none."""
    path = Path(path)
    stored = _stored(safetensors_io.peek(path)[1], path) if weights_format(path) == ".safetensors" else None
    if stored is None and required:
        raise SpecError(
            f"{path}: carries no spec (no 'tfm_spec' in its metadata); name the spec file too: SPEC -w {path}"
        )
    return stored


# -- writing, one tensor at a time ------------------------------------------------------------------

ZIP_ENTRY_BYTES = 512  # what zipfile keeps per member until the archive is closed (measured: about 380)
MIN_ENTRY_BYTES = 60  # the shortest tensor entry tfm writes in a safetensors header is longer
NPY_CHUNK = 16 << 20  # NumPy writes an array into a zip member through a copy of at most this many bytes
BUFFERS = 1 << 20  # zipfile's, json's and the generator's small temporaries (measured: under 150 KiB)


def _write_npz(path: Path, arrays: Iterable[tuple[str, np.ndarray]], overwrite: bool = True) -> None:
    """An uncompressed .npz written member by member, exactly as np.savez writes it."""

    def write(handle) -> None:
        with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            for name, array in arrays:
                with archive.open(name + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)

    write_atomic(path, write, overwrite)


def write_weights(
    path: Path,
    layout: safetensors_io.Layout,
    arrays: Iterable[tuple[str, np.ndarray]],
    spec: Spec | None,
    overwrite: bool = True,
    metadata: dict[str, str] | None = None,
) -> None:
    """Write tensors as they come, as .npz or .safetensors (with the spec, and `metadata`, in its header)."""
    if weights_format(path) == ".npz":
        _write_npz(path, arrays, overwrite)
    else:
        stored = {"format": "tfm"} | ({"tfm_spec": json.dumps(spec.to_dict())} if spec else {}) | (metadata or {})
        safetensors_io.save(path, layout, arrays, stored, overwrite)


def save_weights(path: str | Path, weights: Weights, spec: Spec | None = None, overwrite: bool = True) -> None:
    """Write weights atomically as .npz or .safetensors (by the extension; the latter also stores the spec).

    Without `overwrite`, a file that appeared at `path` while writing is never replaced."""
    layout = lambda: ((name, Header(w.shape, w.dtype)) for name, w in weights.items())  # noqa: E731
    write_weights(Path(path), layout, weights.items(), spec, overwrite)
