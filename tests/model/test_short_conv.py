"""LFM2's short convolution as a block's mixer (components/short_conv.py): its forward piece against PyTorch's own
depthwise Conv1d, its decoding state against the parallel pass, and the seed's properties it keeps or breaks, each
with a case where the property must break."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
import yaml
from conftest import random_weights

from transformer_cli import Spec, Transformer, count_params, make_setup
from transformer_cli.analysis.kv_cache import kv_cache_bytes, state_bytes
from transformer_cli.cli import app
from transformer_cli.components import attends, reach
from transformer_cli.components.short_conv import ShortConv
from transformer_cli.errors import ExitCode, SpecError
from transformer_cli.model.decoding import Decoder, decode
from transformer_cli.spec.validate import spec_from_mapping
from transformer_cli.verify import check_causality, check_decoding, check_equivariance

torch = pytest.importorskip("torch", reason="PyTorch's Conv1d is the reference")

HYBRID = Spec(
    N=4, H=4, m=8, d=32, r=48, V=61, G=2, mask="causal", scale="sqrt", positional="rope", norm="pre",
    norm_type="rmsnorm", feedforward="gated", activation="silu", qk_norm=True,
    mixer_layers=("short_conv", "short_conv", "standard", "short_conv"), conv_kernel=3,
)  # fmt: skip
CONV_ONLY = Spec(N=2, H=1, m=1, d=12, r=16, norm="pre", norm_type="rmsnorm", attention="short_conv", conv_kernel=4)


def setup_for(spec):
    return make_setup(spec, random_weights(spec), 0, "float64", None, None)


def test_the_convolution_is_pytorchs_depthwise_conv1d_padded_on_the_left():
    spec = replace(CONV_ONLY, conv_bias=True)
    weights = {name.removeprefix("blocks.0."): w for name, w in random_weights(spec, 3).items()}
    w = ShortConv(spec).prepare(lambda name: weights[name])
    X = np.random.default_rng(1).normal(size=(spec.d, 2, 9))  # (d, b, n)
    ours = ShortConv(spec).mix(None, 0, w, X)
    d, L = spec.d, spec.conv_kernel
    x = torch.tensor(X.transpose(1, 2, 0))  # (b, n, d)
    B, C, u = torch.nn.functional.linear(
        x, torch.tensor(weights["conv.W_in"]), torch.tensor(weights["conv.b_in"])
    ).chunk(3, dim=-1)
    conv = torch.nn.Conv1d(d, d, L, groups=d, padding=L - 1).double()
    conv.weight.data, conv.bias.data = torch.tensor(weights["conv.kernel"]), torch.tensor(weights["conv.b_kernel"])
    mixed = conv((B * u).transpose(1, 2))[..., : X.shape[-1]].transpose(1, 2)
    theirs = torch.nn.functional.linear(
        C * mixed, torch.tensor(weights["conv.W_out"]), torch.tensor(weights["conv.b_out"])
    )
    np.testing.assert_allclose(ours, theirs.detach().numpy().transpose(2, 0, 1), rtol=0, atol=1e-13)
    flipped = {**weights, "conv.kernel": weights["conv.kernel"][..., ::-1].copy()}  # the taps the other way round
    other = ShortConv(spec).mix(None, 0, ShortConv(spec).prepare(lambda name: flipped[name]), X)
    assert np.abs(other - ours).max() > 1e-2


def test_counts_name_every_tensor_and_the_closed_form_agrees():
    count = count_params(replace(CONV_ONLY, conv_bias=True))
    d, L = CONV_ONLY.d, CONV_ONLY.conv_kernel
    per_block = 4 * d * d + L * d + 5 * d + 2 * CONV_ONLY.r * d + CONV_ONLY.r + d + 2 * d  # plain FF, 2 RMSNorm
    assert count.total == 2 * per_block + d  # (the final norm)


@pytest.mark.parametrize("prompt", [0, 1, 2, 7])
def test_decoding_step_by_step_equals_the_parallel_pass(prompt):
    model = Transformer(HYBRID, random_weights(HYBRID, 5))
    ids = np.random.default_rng(2).integers(0, HYBRID.V, size=(2, 11))
    full = model(ids)
    assert np.abs(decode(model, ids, prompt=prompt) - full).max() < 1e-12
    stale = decode(model, ids, prompt=prompt, stale_at=prompt + 1)  # a step's column not kept: the next ones differ
    assert np.abs(stale - full)[..., prompt + 2 :].max() > 1e-3


def test_a_decoders_state_is_fixed_and_its_bytes_are_the_plans():
    model = Transformer(HYBRID, random_weights(HYBRID))
    for n in (3, 40):
        decoder = Decoder(model, 2, n)
        held = sum(a.nbytes for c in decoder.caches for a in vars(c).values() if isinstance(a, np.ndarray))
        assert held == kv_cache_bytes(HYBRID, 2, n, "float64")
    assert state_bytes(HYBRID, 2, "float64") == 2 * 3 * HYBRID.d * HYBRID.conv_kernel * 8  # 3 conv blocks
    as_attention = replace(HYBRID, mixer_layers=None)
    assert kv_cache_bytes(as_attention, 2, 40, "float64") != kv_cache_bytes(HYBRID, 2, 40, "float64")


def test_the_convolution_is_causal_and_tells_positions_apart_unless_its_kernel_is_one():
    for spec in (CONV_ONLY, HYBRID):
        assert check_causality(setup_for(spec)).exit_code == ExitCode.OK
        assert check_decoding(setup_for(spec)).exit_code == ExitCode.OK
        assert check_equivariance(setup_for(spec)).exit_code == ExitCode.VIOLATED  # (theory says it breaks)
        assert check_equivariance(setup_for(spec), expect="theory").exit_code == ExitCode.OK
    pointwise = replace(CONV_ONLY, conv_kernel=1)  # each column alone: equivariant, as the plain block
    assert check_equivariance(setup_for(pointwise)).exit_code == ExitCode.OK
    assert reach(CONV_ONLY) == 2 * 3 and reach(HYBRID) is None  # (an attention block reads every column)


def test_attention_maps_are_of_the_blocks_that_attend(tmp_path, runner):
    assert [attends(HYBRID, i) for i in range(HYBRID.N)] == [False, False, True, False]
    assert not attends(CONV_ONLY, 0)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(HYBRID.to_dict()))
    np.save(tmp_path / "ids.npy", np.arange(6))
    ok = runner.invoke(app, ["attention", str(tmp_path / "spec.yaml"), "-i", str(tmp_path / "ids.npy"), "--block", "2"])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(
        app, ["attention", str(tmp_path / "spec.yaml"), "-i", str(tmp_path / "ids.npy"), "--block", "1"]
    )
    assert bad.exit_code != 0 and "block 1 mixes its columns by short_conv, not attention" in bad.output


def test_a_mixer_that_is_not_registered_is_refused_in_one_line():
    with pytest.raises(SpecError, match="mixer_layers"):
        spec_from_mapping({"N": 2, "H": 1, "m": 1, "d": 4, "r": 4, "mixer_layers": ["conv", "standard"]}, "x.yaml")


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        (
            {"conv_kernel": 4},
            "key 'conv_kernel': got 4, expected no conv_kernel without a short_conv or mamba2 or attention_mamba2 or "
            "mamba2_memory or mamba or deltanet or kda block",
        ),
        ({"mixer_layers": ["short_conv"] * 3}, "expected at most N = 2 kinds (one per block)"),
        ({"attention": "short_conv", "N_enc": 2}, "expected one stack of blocks of their own with a recurrent mixer"),
        ({"mixer_layers": ["short_conv", "standard"], "block_groups": 1}, "key 'mixer_layers'"),
    ],
)
def test_the_mixers_keys_are_checked_in_one_line(changed, said):
    with pytest.raises(SpecError, match=re.escape(said)):
        spec_from_mapping({"N": 2, "H": 1, "m": 1, "d": 4, "r": 4} | changed, "x.yaml")
