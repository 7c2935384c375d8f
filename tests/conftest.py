"""Shared fixtures: the reference cases, random weights with every entry non-zero, and a CLI runner."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from transformer_cli.params import all_tensors
from transformer_cli.spec import Spec

DATA = Path(__file__).parent / "data"
REFERENCE_CASES = ["seed-plain", "standard-pre-causal", "post-learned-odd-d"]
EXAMPLES = sorted((Path(__file__).parent.parent / "examples" / "configs").glob("*.yaml"))


def reference(case: str) -> dict:
    """A reference case computed by an independent implementation (copied from ../shared/reference)."""
    folder = DATA / case
    with np.load(folder / "weights.npz") as archive:
        weights = {k: archive[k] for k in archive.files}
    return {
        "folder": folder,
        "spec_path": folder / "spec.yaml",
        "weights": weights,
        "x": np.load(folder / "x.npy"),
        "y": np.load(folder / "y.npy"),
        "expected": json.loads((folder / "expected.json").read_text()),
    }


def random_weights(spec: Spec, seed: int = 0, scale: float = 0.3) -> dict[str, np.ndarray]:
    """Weights with every entry random and non-zero (unlike init's zero biases), so no term can hide."""
    rng = np.random.default_rng(seed)
    return {
        t.name: rng.normal(0.0, scale, t.shape) + (1.0 if t.name.endswith("gamma") else 0.0) for t in all_tensors(spec)
    }


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()
