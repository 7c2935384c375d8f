"""Stacks whose blocks differ per layer: attention_layers (sliding or full) and feedforward_layers (routed or
dense), checked against the plain reference model (tests/reference_model.py reads the per-layer lists itself),
a per-layer count from one-kind specs, and the scores each block computes; with controls where a block's kind
is dropped."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights, reference_error, rel, variant_specs
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_model import reference_forward

from transformer_cli import Spec, count_params, spec_from_mapping
from transformer_cli.analysis.flops import forward_flops
from transformer_cli.cli import app
from transformer_cli.components.base import Pairs
from transformer_cli.components.tensors import all_tensors
from transformer_cli.errors import SpecError
from transformer_cli.model.transformer import Transformer
from transformer_cli.spec.stacks import decoder

MIXED = Spec(
    N=5,
    H=2,
    G=1,
    m=4,
    d=8,
    r=6,
    mask="causal",
    norm="pre",
    positional="rope",
    window=2,
    attention_layers=("sliding", "sliding", "full"),
    E=3,
    k=2,
    feedforward="gated",
    ff_bias=False,
    feedforward_layers=("dense", "routed"),
)


def _layered(spec: Spec, attention: list[str], feedforward: list[str]) -> Spec:
    """A drawn spec made causal, with a window and experts, and per-layer kinds over at least 2 blocks."""
    N = max(spec.N, 2)
    spec = replace(spec, N=N, mask="causal", window=spec.window or 2, E=spec.E or 3, k=min(spec.k or 1, spec.E or 3))
    layers = {"attention_layers": attention[:N], "feedforward_layers": feedforward[:N]}
    return replace(spec, **{key: kinds for key, kinds in layers.items() if len(set(kinds)) > 1})


kinds = st.lists(st.sampled_from(["sliding", "full"]), min_size=2, max_size=2)
ff_kinds = st.lists(st.sampled_from(["routed", "dense"]), min_size=2, max_size=2)


@settings(max_examples=60, deadline=None)
@given(st.builds(_layered, variant_specs(), kinds, ff_kinds), st.integers(1, 2), st.integers(1, 9), st.integers(0, 99))
def test_a_stack_with_per_layer_kinds_runs_as_the_plain_reference(spec, b, n, seed):
    assert reference_error(spec, b, n, seed) < 1e-12


def test_each_blocks_kind_is_exercised():
    """The control: the same weights with every block sliding, or every block full, give other outputs."""
    w = random_weights(MIXED)
    X = np.random.default_rng(0).normal(size=(2, MIXED.d, 9))
    ours = Transformer(MIXED, w)(X)
    assert rel(ours, reference_forward(MIXED, w, X)) < 1e-12
    for other in (replace(MIXED, attention_layers=None), replace(MIXED, attention_layers=None, window=None)):
        assert rel(Transformer(other, w)(X), ours) > 1e-3


def test_a_pattern_repeats_over_the_blocks_and_is_kept_in_its_shortest_form():
    gemma3 = Spec(N=26, H=1, m=2, d=2, r=2, mask="causal", window=4, attention_layers=["sliding"] * 5 + ["full"])
    assert gemma3.attention_layers == ("sliding",) * 5 + ("full",)
    listed = Spec(N=4, H=1, m=2, d=2, r=2, mask="causal", window=4, attention_layers=["sliding", "full"] * 2)
    assert listed.attention_layers == ("sliding", "full")
    assert listed.to_dict()["attention_layers"] == ["sliding", "full"]
    one = Spec(N=3, H=1, m=2, d=2, r=2, mask="causal", window=4, attention_layers=["sliding"])
    assert one.attention_layers is None  # every block sliding: the window alone says it
    three = decoder(replace(listed, N=3))  # the pattern over 3 blocks
    assert [three.layer(i).window for i in range(3)] == [4, None, 4]


def test_a_dense_and_a_routed_block_count_as_their_own_kinds():
    """Per block, the count of a one-kind spec (all dense, all routed); in all, their sum over the layers."""
    count = count_params(MIXED)
    dense = count_params(replace(MIXED, E=None, k=None, feedforward_layers=None, N=1)).per_block
    routed = count_params(replace(MIXED, feedforward_layers=None, N=1)).per_block
    outside = count_params(replace(MIXED, feedforward_layers=None)).total - MIXED.N * routed
    assert [(s.scope, list(s.layers), s.per_block) for s in count.sections] == [
        ("dense block", [0, 2, 4], dense),
        ("routed block", [1, 3], routed),
    ]
    assert count.total == 3 * dense + 2 * routed + outside == sum(t.count for t in all_tensors(MIXED))
    assert count.total == count.closed_total and count.per_block is None
    assert count.active == count.total - 2 * (3 - 2) * 3 * 6 * 8  # 2 routed blocks, E - k experts of 3rd unused
    with pytest.raises(AssertionError):  # the control: counting every block as routed is wrong
        assert count.total == count_params(replace(MIXED, feedforward_layers=None)).total


def test_each_block_scores_the_pairs_its_own_window_allows():
    """Scores K^T Q: 2m per pair and head; sliding blocks see w(w+1)/2 + (n - w)w pairs, full ones n(n+1)/2."""
    b, n, w = 2, 9, MIXED.window
    sliding, full = Pairs(b, n, True, w).count, Pairs(b, n, True).count
    flops = forward_flops(MIXED, b, n, causal_pairs=True)
    assert flops["scores K^T Q"] == 2 * MIXED.m * MIXED.H * (4 * sliding + 1 * full)  # blocks 0,1,3,4 and 2
    assert flops["scores K^T Q"] != forward_flops(replace(MIXED, attention_layers=None), b, n, True)["scores K^T Q"]


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"attention_layers": ["full", "sliding"]}, "no attention_layers without window"),
        ({"window": 2, "attention_layers": ["full", "full"]}, "some sliding block (with every block full, drop window"),
        ({"window": 2, "attention_layers": ["sliding", "full", "full"]}, "at most N = 2 kinds (one per block)"),
        ({"window": 2, "attention_layers": ["slide"]}, "expected a list of sliding or full, one per block"),
        ({"window": 2, "attention_layers": "full"}, "expected a list of sliding or full"),
        ({"window": 2, "attention_layers": []}, "expected a list of sliding or full"),
        ({"feedforward_layers": ["dense"]}, "no feedforward_layers without E"),
        ({"E": 2, "k": 1, "feedforward_layers": ["dense", "dense"]}, "some routed block"),
        ({"window": 2, "attention_layers": ["full", "sliding"], "positional": "relative"}, "relative positions"),
    ],
)
def test_per_layer_kinds_that_cannot_be_are_one_line_naming_the_key(keys, message):
    with pytest.raises(SpecError, match="key '") as caught:
        spec_from_mapping({"N": 2, "H": 1, "m": 2, "d": 2, "r": 2, "mask": "causal"} | keys, "s.yaml")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_every_command_takes_a_stack_with_per_layer_kinds(runner, tmp_path):
    spec = tmp_path / "mixed.yaml"
    spec.write_text(
        "N: 5\nH: 2\nG: 1\nm: 4\nd: 8\nr: 6\nmask: causal\nnorm: pre\npositional: rope\nwindow: 2\n"
        "attention_layers: [sliding, sliding, full]\nE: 3\nk: 2\nfeedforward: gated\nff_bias: false\n"
        "feedforward_layers: [dense, routed]\n"
    )
    shown = runner.invoke(app, ["count", str(spec)])
    assert shown.exit_code == 0, shown.output
    assert "x 3 dense blocks" in shown.stdout and "routed blocks (i = 1, 3)" in shown.stdout
    data = json.loads(runner.invoke(app, ["count", str(spec), "--json"]).stdout)["specs"][0]
    assert [b["kind"] for b in data["blocks"]] == ["dense", "routed"] and data["per_block"] is None
    assert data["spec"]["attention_layers"] == ["sliding", "sliding", "full"]
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(8, 7)))
    ran = runner.invoke(app, ["run", str(spec), "--input", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npy")])
    assert ran.exit_code == 0, ran.output
    for command in (["verify", str(spec)], ["plan", str(spec)], ["verify-decoding", str(spec)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 0, (command, result.output)
