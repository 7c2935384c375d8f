"""What a path on the command line names, whatever its format: a tfm weights file or a Hugging Face folder.

The formats live below this module (io: tfm's .npz and .safetensors; hf: Hugging Face folders; gguf: GGUF
files); the commands,
the model's runner and the converter ask here, so no format module imports another.
"""

from __future__ import annotations

from pathlib import Path

from .gguf.model import gguf_weights, is_gguf
from .hf.folder import folder_weights
from .io import weights as tfm_weights
from .io.weights import Weights
from .spec.definition import Spec


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
