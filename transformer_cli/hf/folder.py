"""A Hugging Face folder as a whole: its checkpoint read against its own config.json."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..errors import ArrayError
from ..spec.definition import Spec
from .checkpoint import Checkpoint
from .config import load_config, read_config
from .weights import CheckpointWeights, check_fit, checkpoint_weights


def folder_weights(folder: Path, spec: Spec) -> CheckpointWeights:
    """The weights of a Hugging Face folder, for `spec`: the folder's config must describe the same model."""
    config, own = load_config(folder)
    if own.model_keys() != spec.model_keys():
        differ = spec.differing_keys(own)
        raise ArrayError(f"{folder}: its config.json is another model ({', '.join(differ)} differ from '{spec.label}')")
    return checkpoint_weights(folder, spec, config)


def summary(folder: Path, spec: Spec) -> dict[str, Any]:
    """What `tfm count FOLDER` says of the checkpoint, from its headers alone: files, tensors, bytes, dtypes,
    and the parameters the file holds (a tied head once), after checking that every tensor fits."""
    checkpoint = Checkpoint(folder)
    found = check_fit(checkpoint, spec, read_config(folder))
    entries = [checkpoint.tensors[name].entry for name in found.values()]
    return {
        "files": len({t.shard for t in checkpoint.tensors.values()}),
        "tensors": len(checkpoint.tensors),
        "bytes": checkpoint.nbytes(),
        "dtypes": sorted({e.code for e in entries}),
        "parameters": sum(math.prod(e.shape) for e in entries),
    }
