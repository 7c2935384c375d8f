"""Shared fixtures: the reference cases, random weights with every entry non-zero, and a CLI runner; and the
`slow` marker: the few long cases (subprocess runs, the README's examples, the fuzzers) run in CI (CI=true) or
with TFM_SLOW=1, and are skipped in a developer's `python -m pytest`."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st
from typer.testing import CliRunner

from transformer_cli.components.tensors import all_tensors
from transformer_cli.spec.definition import Spec

DATA = Path(__file__).parent / "data"
REFERENCE_CASES = ["seed-plain", "standard-pre-causal", "post-learned-odd-d"]
EXAMPLES = sorted((Path(__file__).parent.parent / "examples" / "configs").glob("*.yaml"))


def variant_specs(m_min: int = 1, d_min: int = 1, max_len: int = 20, rope: bool = True) -> st.SearchStrategy[Spec]:
    """Small random specs over every variant key (learned positions get `max_len`; rope an even rotated part).

    rope=False draws exactly the specs drawn before rope existed (the same strategy, so derandomized tests keep
    their examples).
    """
    rope_keys = (
        dict(
            rope_theta=st.sampled_from([10000.0, 3.0]),
            rope_fraction=st.sampled_from([1.0, 0.5]),
            rope_pairing=st.sampled_from(["half", "interleaved"]),
            rope_scaling=st.sampled_from(["none", "llama3"]),
            rope_original_max_len=st.sampled_from([8192, 16]),
        )
        if rope
        else {}
    )
    return (
        st.builds(
            Spec,
            N=st.integers(1, 2),
            H=st.integers(1, 3),
            m=st.integers(m_min, 6),
            d=st.integers(d_min, 8),
            r=st.integers(1, 8),
            scale=st.sampled_from(["none", "sqrt", 0.7]),
            mask=st.sampled_from(["none", "causal"]),
            positional=st.sampled_from(["none", "sinusoidal", "learned"] + ["rope"] * rope),
            norm=st.sampled_from(["none", "pre", "post"]),
            attention_bias=st.booleans(),
            activation=st.sampled_from(["relu", "gelu", "gelu_exact", "silu"]),
            norm_type=st.sampled_from(["layernorm", "rmsnorm"]),
            feedforward=st.sampled_from(["plain", "gated"]),
            ff_bias=st.booleans(),
            G=st.sampled_from([None, 1]),
            V=st.sampled_from([None, None, 7]),
            tie_embeddings=st.booleans(),
            head_bias=st.booleans(),
            parallel=st.booleans(),
            shared_norm=st.booleans(),
            **rope_keys,
            window=st.sampled_from([None, None, 2, 3]),  # 1: attention acts on each column alone (tested apart)
            out_bias=st.sampled_from([None, False]),
            norm_plus_one=st.booleans(),
            E=st.sampled_from([None, None, None, 3]),
            k=st.sampled_from([1, 2]),
            type_vocab=st.sampled_from([None, 2]),
            embed_norm=st.booleans(),
            head=st.sampled_from([True, True, False]),
            qk_norm=st.booleans(),
            norm_bias=st.sampled_from([True, True, False]),
        )
        .map(lambda s: _positions_fitted(s, max_len))
        .map(
            lambda s: replace(s, parallel=False) if s.norm != "pre" else s  # parallel blocks are pre-norm
        )
        .map(lambda s: replace(s, window=None) if s.mask != "causal" else s)
        .map(
            lambda s: s if s.E else replace(s, k=None)  # k goes with E
        )
        .map(
            lambda s: s if s.V else replace(s, type_vocab=None, embed_norm=False, head=True)  # these go with V
        )
        .map(lambda s: s if s.head else replace(s, tie_embeddings=False, head_bias=False))
        .map(lambda s: replace(s, norm_plus_one=s.norm_plus_one and s.norm_type == "rmsnorm"))
    )


ROPE_KEYS = ("rope_theta", "rope_fraction", "rope_pairing", "rope_scaling", "rope_original_max_len")


def _positions_fitted(spec: Spec, max_len: int) -> Spec:
    """Learned positions get max_len; rope an even rotated part of at least 2 dims; other specs the rope defaults."""
    if spec.positional == "learned":
        spec = replace(spec, max_len=max_len)
    if spec.positional != "rope":
        return replace(spec, **{k: getattr(Spec(N=1, H=1, m=1, d=1, r=1), k) for k in ROPE_KEYS})
    if spec.rotated_dims < 2 or spec.rotated_dims % 2:
        spec = replace(spec, m=max(2, spec.m + spec.m % 2), rope_fraction=1.0)  # m + 1 when odd, at most 6
    return spec


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


def rel(a: np.ndarray, b: np.ndarray) -> float:
    """The largest difference relative to b's largest entry (or a's largest entry where b is all zeros)."""
    scale = np.max(np.abs(b))
    return float(np.max(np.abs(a - b)) / scale) if scale else float(np.max(np.abs(a)))


def reference_error(spec: Spec, b: int, n: int, seed: int) -> float:
    """tfm's pass against the plain reference model (tests/reference_model.py) on random weights and inputs."""
    from reference_model import reference_forward

    from transformer_cli.model.transformer import Transformer

    w = random_weights(spec, seed)
    X = np.random.default_rng(seed).normal(size=(b, spec.d, n))
    return rel(Transformer(spec, w)(X), reference_forward(spec, w, X))


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def matmul_count(monkeypatch, run) -> int:  # type: ignore[no-untyped-def]
    """The multiply-adds of every np.matmul that run() makes."""
    done, real = [0], np.matmul

    def counted(a, b, *args, **kwargs):
        out = real(a, b, *args, **kwargs)
        done[0] += out.size * np.shape(a)[-1]
        return out

    with monkeypatch.context() as patched:
        patched.setattr(np, "matmul", counted)
        run()
    return done[0]


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs mounted in tmp_path (root only; skipped elsewhere): a disk that fills up."""
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long case; run in CI (CI=true) or with TFM_SLOW=1, else skipped")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("CI") == "true" or os.environ.get("TFM_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: CI runs it; TFM_SLOW=1 python -m pytest runs it here")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def invoke(runner, *args):
    """`tfm ARGS` through Typer's runner (arguments as text): never a traceback, never an exception but the exit."""
    from transformer_cli.cli import app

    result = runner.invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result


def one_line_error(result, code=2):
    """Exit `code`, and the whole stderr one line starting with 'error:' (notes on the spec used aside)."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip() and "using the built-in" not in line]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]
