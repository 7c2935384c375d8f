"""Blocks prepared just in time from every kind of file tfm reads lazily (issue 42's seam): a Hugging Face folder in
float32 and in bfloat16 and GGUF files of q8_0 and q4_0 blocks give the pass that prepares every block up front, bit
for bit, while each block's tensors are read from the file only when the pass reaches the block."""

from __future__ import annotations

import json

import numpy as np
import pytest

import transformer_cli as tfm
from transformer_cli.model.transformer import Transformer
from transformer_cli.tasks.sources import load_weights, spec_at

CONFIG = dict(
    model_type="llama",
    vocab_size=97,
    hidden_size=32,
    intermediate_size=40,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    rms_norm_eps=1e-5,
)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("jit")
    (root / "config.json").write_text(json.dumps(CONFIG))
    tfm.init(root / "config.json", root / "hf", seed=3)
    tfm.convert(root / "hf", root / "hf-bf16", dtype="bfloat16")
    for kind in ("q8_0", "q4_0"):
        tfm.convert(root / "hf", root / f"m-{kind}.gguf", gguf_type=kind)
    return root


class Reads:
    """The weights mapping a file gives, counting the blocks whose tensors were read."""

    def __init__(self, weights):
        self.weights, self.blocks = weights, []

    def __getitem__(self, name):
        if name.startswith("blocks."):
            self.blocks.append(int(name.split(".")[1]))
        return self.weights[name]

    def __contains__(self, name):
        return name in self.weights


@pytest.mark.parametrize("name", ["hf", "hf-bf16", "m-q8_0.gguf", "m-q4_0.gguf"])
def test_a_file_read_block_by_block_gives_the_prepared_pass(files, name):
    path = files / name
    spec, _, _ = spec_at(path)
    ids = np.random.default_rng(3).integers(0, CONFIG["vocab_size"], size=(2, 9))
    prepared = Transformer(spec, load_weights(path, spec), np.float32).forward(ids)
    weights = Reads(load_weights(path, spec))
    model = Transformer(spec, weights, np.float32, keep_blocks=1)
    assert weights.blocks == []  # nothing of a block read before the pass reaches it
    assert np.array_equal(model.forward(ids), prepared)
    assert sorted(set(weights.blocks)) == [0, 1, 2] and len(model.weights.kept) == 1
    other = Transformer(spec, load_weights(files / "hf", spec), np.float32).forward(ids)
    assert name == "hf" or not np.array_equal(other, prepared)  # the control: the formats' weights differ
