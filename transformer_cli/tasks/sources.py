"""What a path on the command line names, whatever its format: a tfm spec or weights file, a Hugging Face folder,
a GGUF file; its spec, and the weights a model given by it runs.

The formats live below this module (io: tfm's .npz and .safetensors; hf: Hugging Face folders; gguf: GGUF
files); the commands,
the model's runner and the converter ask here, so no format module imports another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..gguf.header import read_header
from ..gguf.model import gguf_summary, gguf_weights, is_gguf, spec_from_gguf
from ..hf.checkpoint import has_checkpoint
from ..hf.config import read_config, spec_from_config
from ..hf.folder import folder_weights, summary
from ..io import weights as tfm_weights
from ..io.safetensors_io import peek
from ..io.weights import Weights, spec_of_weights
from ..spec.definition import DEFAULT_SPEC, Spec
from ..spec.load import load_spec


def load_weights(path: str | Path, spec: Spec) -> Weights:
    """The weights at `path` for `spec`, their layout checked before any tensor is read: a Hugging Face
    checkpoint folder or a GGUF file (tensors read as the model asks for them), or a tfm .npz or .safetensors
    file."""
    path = Path(path)
    if path.is_dir():
        return folder_weights(path, spec)  # type: ignore[return-value]
    if is_gguf(path):
        return gguf_weights(path, spec)  # type: ignore[return-value]
    return tfm_weights.load_weights(path, spec)


def read_lazily(path: str | Path) -> bool:
    """Whether the weights at `path` are read tensor by tensor as the model asks (a Hugging Face folder, a GGUF
    file): opening them reads their headers alone."""
    return Path(path).is_dir() or is_gguf(path)


def is_hugging_face(path: Path) -> bool:
    """A Hugging Face model: a folder (holding config.json), or a .json config (named config.json, or giving a
    model_type) rather than a tfm spec written as JSON (its keys N, H, m, d, r)."""
    if path.is_dir():
        return True
    if path.suffix.lower() != ".json":
        return False
    if path.name.lower() == "config.json" or not path.is_file():
        return True

    try:
        with path.open("rb") as handle:
            data = json.loads(handle.read(4 << 20))  # (configs are a few KB; a longer file is no spec either)
    except (OSError, ValueError):
        return True  # (its reader names what is wrong with it)
    tfm_keys = isinstance(data, dict) and "model_type" not in data and any(k in data for k in ("N", "H", "m", "d", "r"))
    return not tfm_keys


def model_kind(path: Path | None) -> tuple[str | None, str | None]:
    """What names the model's kind at `path`: (its Hugging Face model_type: a folder's, or that of the config tfm's
    weights file keeps; a GGUF file's general.architecture), each None where the path has none."""
    if path is not None and path.is_dir():
        return read_config(path).get("model_type"), None
    if path is not None and path.suffix.lower() == ".gguf":
        return None, str(read_header(path).metadata.get("general.architecture"))
    if path is not None and path.suffix.lower() == ".safetensors":
        kept = peek(path)[1].get("hf_config")
        return (json.loads(kept).get("model_type") if kept else None), None
    return None, None


def spec_at(path: Path | None, weights: Path | None = None) -> tuple[Spec, str, str | None]:
    """The spec at `path`, else the one stored in a .safetensors `weights` file, else the built-in default; with
    where it came from, and a note saying so when it was not `path` itself."""
    if path is None and weights is not None and weights.suffix.lower() == ".safetensors":
        stored = spec_of_weights(weights, required=True)  # never the default spec for a file made for another
        assert stored is not None  # (required: an error otherwise)
        return stored, f"{weights} metadata", f"using the spec stored in {weights} ({stored.summary()})"
    if path is None:
        return DEFAULT_SPEC, "built-in default", f"using the built-in default spec ({DEFAULT_SPEC.summary()})"
    if is_hugging_face(path):
        notes: list[str] = []
        spec = spec_from_config(path, notes)
        return spec, str(path), "\n".join(notes) or None
    if path.suffix.lower() == ".gguf":
        return spec_from_gguf(path), str(path), None
    return load_spec(path), str(path), None


def checkpoint_at(spec_path: Path | None, weights: Path | None) -> tuple[Path | None, str | None]:
    """The weights a model runs: `weights`, else the checkpoint in the Hugging Face folder or the GGUF file given
    as the spec, else None (seeded weights); with a note when a folder holds no checkpoint."""
    if weights is None and spec_path is not None and spec_path.suffix.lower() == ".gguf":
        return spec_path, None
    if weights is None and spec_path is not None and spec_path.is_dir():
        if has_checkpoint(spec_path):
            return spec_path, None
        return None, (
            f"{spec_path} holds no checkpoint (model.safetensors or its index): seeded random weights are used (--seed)"
        )
    return weights, None


@dataclass(frozen=True)
class CheckpointSummary:
    """`tfm count`'s checkpoint line, from the headers alone: a Hugging Face folder's tensors checked against its
    config (`kind` "folder": files, tensors, bytes, dtypes, parameters, skipped, a quantised one's scheme), or a
    GGUF file's against its metadata (`kind` "gguf": file_bytes, tensors, parameters, bits_per_weight, types,
    version). to_dict() is the checkpoint in `tfm count --json`."""

    kind: str  # "folder" or "gguf"
    facts: dict[str, Any]  # the figures, key by key as the JSON gives them

    @property
    def tensors(self) -> int:
        return int(self.facts["tensors"])

    @property
    def parameters(self) -> int:
        """The parameters the checkpoint holds (a tied head once; a quantised one's weights unpacked)."""
        return int(self.facts["parameters"])

    def to_dict(self) -> dict[str, Any]:
        return dict(self.facts)


def checkpoint_summary(path: Path | None, spec: Spec) -> CheckpointSummary | None:
    """A Hugging Face folder's checkpoint, checked against its config from the headers alone (no data read); a
    GGUF file's tensors, checked against its metadata, with their bits per weight by type; None for the rest."""
    if path is not None and is_gguf(path):
        return CheckpointSummary("gguf", gguf_summary(path, spec))
    if path is None or not path.is_dir():
        return None

    return CheckpointSummary("folder", summary(path, spec)) if has_checkpoint(path) else None
