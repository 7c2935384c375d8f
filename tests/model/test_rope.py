"""Rotary positions (RoPE): the Llama 3.1 frequencies, relative scores, FLOPs, decoding and the theory."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, Transformer, count_params, make_setup
from transformer_cli.analysis.flops import forward_flops
from transformer_cli.cli import app
from transformer_cli.errors import ExitCode
from transformer_cli.model import transformer as model_module
from transformer_cli.spec.rope_scaling import llama3_frequencies, rope_frequencies
from transformer_cli.verify import breaking_features, check_decoding, check_equivariance

ROPE = Spec(N=2, H=2, m=8, d=12, r=16, scale="sqrt", mask="causal", positional="rope", norm="pre")


def test_llama3_scaling_on_known_values():
    """factor 8, L = 8192, low 1, high 4: wavelengths over 8192 are divided by 8, under 2048 kept, between mixed."""
    wavelengths = np.array([10000.0, 8192.0, 4096.0, 2048.0, 1000.0])
    f = 2 * math.pi / wavelengths
    scaled = llama3_frequencies(f, factor=8, low=1, high=4, original=8192)
    # 4096: s = (8192/4096 - 1) / (4 - 1) = 1/3, so (2/3) f / 8 + (1/3) f = (5/12) f; at 8192 s = 0, at 2048 s = 1
    expected = [f[0] / 8, f[1] / 8, f[2] * 5 / 12, f[3], f[4]]
    np.testing.assert_allclose(scaled, expected, rtol=1e-15)


def test_rope_frequencies_are_theta_to_the_minus_2j_over_rot():
    np.testing.assert_allclose(rope_frequencies(8, 10000.0), [1.0, 0.1, 0.01, 0.001], rtol=1e-15)


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_rotated_scores_depend_on_relative_positions_only(pairing):
    """K^T Q after turning Q and K from positions start..: the same for every start (rotations are orthogonal)."""
    spec = Spec(N=1, H=2, m=6, d=4, r=4, positional="rope", rope_pairing=pairing, rope_fraction=2 / 3)
    model = Transformer(spec, random_weights(spec))
    rng = np.random.default_rng(0)
    Q, K = rng.normal(size=(2, 1, 2, 6, 5))

    def scores(start):
        q, k = Q.copy(), K.copy()
        model.rotate(q, k, start)
        return q.swapaxes(-1, -2) @ k, q, k

    at0, q0, _ = scores(0)
    at7, _, _ = scores(7)
    np.testing.assert_allclose(at7, at0, rtol=1e-12, atol=1e-12)
    assert not np.allclose(q0[..., 1:], Q[..., 1:])  # it did turn something
    np.testing.assert_array_equal(q0[..., 4:, :], Q[..., 4:, :])  # rot = int(6 * 2/3) = 4: dims 4, 5 pass through


def test_rope_has_no_parameters_and_its_own_flops_row():
    spec = Spec(N=2, H=4, m=8, d=16, r=8, positional="rope", rope_fraction=0.25)  # rot = 2
    assert count_params(spec).total == count_params(Spec(N=2, H=4, m=8, d=16, r=8)).total
    flops = forward_flops(spec, 3, 5)
    assert flops["rotary positions"] == 2 * 3 * 2 * 4 * 2 * 3 * 5  # N, 3 per entry, Q and K, H, rot, b, n
    assert "rotary positions" not in forward_flops(Spec(N=2, H=4, m=8, d=16, r=8), 3, 5)


@pytest.mark.parametrize("G", [None, 1])
def test_rope_flops_equal_a_direct_count(monkeypatch, G):
    """3 FLOPs per rotated entry, counted as the model turns Q (H heads) and K (G heads), V never."""
    spec = Spec(N=2, H=3, G=G, m=8, d=10, r=8, positional="rope", rope_fraction=0.5, mask="causal")
    done = []
    real = model_module.kernels.rotate_

    def counted(X, cos, sin, pairing):
        done.append(3 * 2 * cos.shape[0] * math.prod(X.shape[:-2]) * X.shape[-1])
        return real(X, cos, sin, pairing)

    monkeypatch.setattr(model_module.kernels, "rotate_", counted)
    Transformer(spec, random_weights(spec), workers=1)(np.random.default_rng(0).normal(size=(2, 10, 7)))
    assert len(done) == 2 * spec.N and sum(done) == forward_flops(spec, 2, 7)["rotary positions"]


@pytest.mark.parametrize(
    "spec",
    [
        ROPE,
        Spec(
            N=2,
            H=3,
            m=6,
            d=10,
            r=8,
            mask="causal",
            positional="rope",
            rope_pairing="interleaved",
            rope_fraction=0.5,
            attention_bias=True,
        ),
        Spec(
            N=1,
            H=2,
            m=8,
            d=12,
            r=8,
            mask="causal",
            positional="rope",
            norm="post",
            rope_scaling="llama3",
            rope_original_max_len=16,
            rope_theta=3.0,
        ),
    ],
)
def test_decoding_equals_the_parallel_pass_and_catches_a_wrong_position(spec):
    """Keys are cached already turned; a query turned one position too far is caught (shifting query and keys
    alike would not be: rotary scores depend on t - s only)."""
    result = check_decoding(make_setup(spec, random_weights(spec), 0, "float64", 12, None))
    assert result.exit_code == ExitCode.OK, result.observation
    controls = result.summary["controls"]
    assert set(controls) == {"stale cache (step 0 not stored)", "wrong position (t + 1)"}
    assert all(v >= 1000 * result.summary["tolerance"] for v in controls.values())


def test_rope_breaks_equivariance_as_predicted():
    spec = Spec(N=1, H=2, m=4, d=8, r=8, positional="rope")
    assert breaking_features(spec) == ["rotary positions"]
    result = check_equivariance(make_setup(spec, random_weights(spec), 0, "float64", 8, None), expect="theory")
    assert result.predicted is False and result.observed is False and result.exit_code == ExitCode.OK


def test_count_runs_a_rope_spec_from_yaml(runner, tmp_path):
    path = tmp_path / "rope.yaml"
    path.write_text("N: 2\nH: 4\nm: 8\nd: 32\nr: 64\npositional: rope\nrope_fraction: 0.25\nmask: causal\n")
    result = runner.invoke(app, ["count", str(path), "--seq-len", "16", "--json"])
    assert result.exit_code == 0, result.output
    assert '"rotary positions": ' + str(2 * 3 * 2 * 4 * 2 * 16) in result.stdout


def test_every_rope_scaling_is_one_registry_entry():
    """The spec's rope_scaling choices are the registry's names, and each entry's flag says whether a pass's length
    changes its frequencies: checked against the frequencies of a short and a long pass (past L = 16)."""
    from dataclasses import fields

    from transformer_cli.spec.rope_scaling import ROPE_SCALINGS

    choices = next(f for f in fields(Spec) if f.name == "rope_scaling").metadata["choices"]
    assert choices == tuple(ROPE_SCALINGS)
    for name, scaling in ROPE_SCALINGS.items():
        spec = Spec(
            N=1,
            H=1,
            m=8,
            d=8,
            r=8,
            positional="rope",
            rope_scaling=name,
            rope_factor=4.0,
            rope_original_max_len=16,
            rope_short_factor=(1.0,) * 4,
            rope_long_factor=(2.0,) * 4,
        )
        short, long = scaling.frequencies(spec, 8), scaling.frequencies(spec, 64)
        assert short.shape == (4,) and (not np.array_equal(short, long)) == scaling.length_dependent, name
        unit = name in ("none", "linear", "llama3", "dynamic")
        assert (scaling.attention_factor(spec) == 1.0) == unit, name
