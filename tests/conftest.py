"""Shared fixtures: the reference cases, random weights with every entry non-zero, and a CLI runner."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st
from typer.testing import CliRunner

from transformer_cli.params import all_tensors
from transformer_cli.spec import Spec

DATA = Path(__file__).parent / "data"
REFERENCE_CASES = ["seed-plain", "standard-pre-causal", "post-learned-odd-d"]
EXAMPLES = sorted((Path(__file__).parent.parent / "examples" / "configs").glob("*.yaml"))


def variant_specs(m_min: int = 1, d_min: int = 1, max_len: int = 20) -> st.SearchStrategy[Spec]:
    """Small random specs over every variant key (learned positions get `max_len`)."""
    return st.builds(
        Spec,
        N=st.integers(1, 2), H=st.integers(1, 3), m=st.integers(m_min, 6), d=st.integers(d_min, 8),
        r=st.integers(1, 8), scale=st.sampled_from(["none", "sqrt", 0.7]), mask=st.sampled_from(["none", "causal"]),
        positional=st.sampled_from(["none", "sinusoidal", "learned"]), norm=st.sampled_from(["none", "pre", "post"]),
        attention_bias=st.booleans(), activation=st.sampled_from(["relu", "gelu", "silu"]),
        norm_type=st.sampled_from(["layernorm", "rmsnorm"]), feedforward=st.sampled_from(["plain", "gated"]),
        ff_bias=st.booleans(), G=st.sampled_from([None, 1]), V=st.sampled_from([None, None, 7]),
        tie_embeddings=st.booleans(), head_bias=st.booleans(), parallel=st.booleans(), shared_norm=st.booleans(),
    ).map(lambda s: replace(s, max_len=max_len) if s.positional == "learned" else s).map(
        lambda s: replace(s, parallel=False) if s.norm != "pre" else s  # parallel blocks are pre-norm
    )  # fmt: skip


def reference(case: str) -> dict:
    """A reference case in tests/data/, computed by an independent implementation."""
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
