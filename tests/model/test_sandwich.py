"""The sandwich layout (Gemma 2 and 3): X + N1o(Attn(N1(X))), then + N2o(FF(N2(.))), a final norm after the last
block; against the plain reference model (tests/reference_model.py), with the control that the outputs' norms
matter. PyTorch's pass, the memory figures and decoding are checked with the other layouts (test_bench.py,
test_memory.py, test_training_memory.py, test_kv_cache.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights, reference_error, rel, variant_specs
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_model import reference_forward

from transformer_cli import Spec, count_params, spec_from_mapping
from transformer_cli.cli import app
from transformer_cli.errors import SpecError
from transformer_cli.model.transformer import Transformer

GEMMA2 = Spec(
    N=2,
    H=2,
    G=1,
    m=6,
    d=8,
    r=10,
    V=13,
    scale="sqrt",
    mask="causal",
    positional="rope",
    norm="sandwich",
    norm_type="rmsnorm",
    norm_plus_one=True,
    feedforward="gated",
    activation="gelu",
    ff_bias=False,
)


@settings(max_examples=40, deadline=None)
@given(
    variant_specs().map(lambda s: replace(s, norm="sandwich", parallel=False, shared_norm=False)),
    st.integers(1, 2),
    st.integers(1, 9),
    st.integers(0, 99),
)
def test_the_sandwich_layout_runs_as_the_plain_reference(spec, b, n, seed):
    assert reference_error(spec, b, n, seed) < 1e-12


def test_the_norms_of_the_outputs_are_applied():
    """The control: the same weights read as pre-norm (the outputs' norms left out) give another output."""
    w = random_weights(GEMMA2)
    ids = np.random.default_rng(0).integers(0, GEMMA2.V, size=(2, 9))
    ours = Transformer(GEMMA2, w)(ids)
    assert rel(ours, reference_forward(GEMMA2, w, ids)) < 1e-12
    pre = replace(GEMMA2, norm="pre")
    assert rel(Transformer(pre, {k: v for k, v in w.items() if "_out." not in k})(ids), ours) > 1e-3


def test_a_sandwich_block_has_four_norms():
    pre, sandwich = count_params(replace(GEMMA2, norm="pre")), count_params(GEMMA2)
    assert sandwich.per_block == pre.per_block + 2 * GEMMA2.d  # two more gains (d,) of RMSNorm
    assert sandwich.total == sandwich.closed_total and "4d" in [t.formula for t in sandwich.terms]
    names = [t.name for t in sandwich.block if "norm" in t.name]
    assert names == [
        "blocks.0.norm1.gamma",
        "blocks.0.norm2.gamma",
        "blocks.0.norm1_out.gamma",
        "blocks.0.norm2_out.gamma",
    ]
    assert "final_norm.gamma" in [t.name for t in sandwich.model]


def test_sandwich_is_one_line_where_it_cannot_be():
    base = {"N": 1, "H": 1, "m": 2, "d": 2, "r": 2, "norm": "sandwich"}
    with pytest.raises(SpecError, match="key 'norm': got 'output', expected pre, post, sandwich or none in an encoder"):
        spec_from_mapping(base | {"N_enc": 1, "mask": "causal", "norm": "output"}, "s.yaml")  # (sandwich: T5Gemma's)
    with pytest.raises(SpecError, match="key 'parallel'"):
        spec_from_mapping(base | {"parallel": True}, "s.yaml")


def test_every_command_takes_a_sandwich(runner, tmp_path):
    spec = tmp_path / "gemma2.yaml"
    spec.write_text(
        "\n".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in GEMMA2.to_dict().items()) + "\n"
    )
    np.save(tmp_path / "ids.npy", np.arange(7) % GEMMA2.V)
    for command in (
        ["count", str(spec)],
        ["verify", str(spec)],
        ["plan", str(spec)],
        ["run", str(spec), "-i", str(tmp_path / "ids.npy"), "-o", str(tmp_path / "y.npy")],
    ):
        result = runner.invoke(app, command)
        assert result.exit_code == 0, (command, result.output)
