"""block_groups (ALBERT's shared layers): N blocks in G runs of consecutive blocks, each run one stored block's
weights. Against transformers: hf_models_dense's albert variants (one group; 5 blocks in 2 groups); here the pass
against the same model with every block's weights copied out, the keys' checks, and the modes that make blocks
just in time."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import SpecError, spec_from_mapping
from transformer_cli.analysis.params import count_params
from transformer_cli.model.transformer import Transformer

BASE = dict(N=5, H=2, m=4, d=8, r=16, V=11, mask="causal", positional="learned", max_len=12, norm="pre")
IDS = np.random.default_rng(2).integers(0, 11, size=(2, 7))


def _copied_out(spec, w):
    """The same model as N blocks of their own: block i holds the weights block i runs."""
    out = {k: v for k, v in w.items() if not k.startswith("blocks.")}
    for i in range(spec.N):
        prefix = f"blocks.{spec.weights_of(i)}."
        out |= {f"blocks.{i}." + k.removeprefix(prefix): v for k, v in w.items() if k.startswith(prefix)}
    return out


def test_the_runs_are_albert_s_int_i_over_n_over_g():
    spec = spec_from_mapping(BASE | {"block_groups": 2}, "s")
    assert [spec.weights_of(i) for i in range(5)] == [0, 0, 0, 1, 1]  # (int(i / 2.5))
    assert [replace(spec, block_groups=3).weights_of(i) for i in range(5)] == [0, 0, 1, 1, 2]


@pytest.mark.parametrize("keep", [None, 1])
def test_the_pass_is_the_copied_out_models_and_holds_g_blocks(keep):
    shared = spec_from_mapping(BASE | {"block_groups": 2}, "s")
    plain = spec_from_mapping(BASE, "s")
    w = random_weights(shared, 4)
    assert sum(1 for k in w if k.endswith("attention.W_Q")) == 2
    assert count_params(plain).total - count_params(shared).total == 3 * count_params(plain).per_block
    ours = Transformer(shared, w, keep_blocks=keep).forward(IDS)
    assert np.allclose(ours, Transformer(plain, _copied_out(shared, w)).forward(IDS), rtol=0, atol=1e-12)
    other = random_weights(plain, 4)  # (the control: blocks of their own weights give another model)
    assert not np.allclose(ours, Transformer(plain, other).forward(IDS), rtol=0, atol=1e-3)


@pytest.mark.parametrize(
    "keys, words",
    [
        ({"block_groups": 6}, "'block_groups'.*at most N = 5"),
        ({"block_groups": 2, "window": 3, "attention_layers": ["sliding", "full"]}, "blocks alike"),
    ],
)
def test_more_groups_than_blocks_or_blocks_of_kinds_is_one_line_naming_the_key(keys, words):
    with pytest.raises(SpecError, match=words):
        spec_from_mapping(BASE | keys, "s.yaml")


def test_count_says_the_stored_blocks_are_shared(tmp_path, runner):
    from transformer_cli.cli import app

    (tmp_path / "s.yaml").write_text("\n".join(f"{k}: {v}" for k, v in (BASE | {"block_groups": 2}).items()))
    result = runner.invoke(app, ["count", str(tmp_path / "s.yaml")], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "x 2 blocks" in result.output and "shared by 5 blocks" in result.output
