"""The one loop over the blocks (Transformer.run): its taps, its stop block, the provider it asks each block's
weights of, and that the forward pass, decoding and the attention maps all go through it."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, Transformer
from transformer_cli.components.attention import KVCache
from transformer_cli.model import transformer as model_module
from transformer_cli.model.decoding import Decoder, decode
from transformer_cli.model.encoder_decoder import EncoderDecoder
from transformer_cli.model.weights import prepare_block
from transformer_cli.tasks.attention_maps import block_weights, decoder_block_weights

SPECS = {
    "pre": Spec(N=3, H=2, m=4, d=8, r=12, norm="pre", mask="causal", positional="rope"),
    "none": Spec(N=3, H=2, m=4, d=8, r=12, norm="none", mask="causal", positional="sinusoidal"),
    "parallel": Spec(N=3, H=2, m=4, d=8, r=12, norm="pre", parallel=True, mask="causal", positional="rope"),
    "scaled": Spec(N=3, H=2, m=4, d=8, r=12, norm="pre", mask="causal", positional="rope", residual_scale=0.5),
    "experts": Spec(
        N=3, H=2, m=4, d=8, r=12, norm="pre", mask="causal", E=4, k=2, feedforward="gated", activation="silu"
    ),
    "post": Spec(N=3, H=2, m=4, d=8, r=12, norm="post", mask="causal", positional="learned", max_len=16),
    "window": Spec(N=3, H=2, m=4, d=8, r=12, norm="pre", mask="causal", positional="rope", window=3),
}


def _model(name: str) -> Transformer:
    spec = SPECS[name]
    return Transformer(spec, random_weights(spec, 1), workers=1)


def _heard(model: Transformer, X: np.ndarray, **options) -> tuple[dict, np.ndarray]:
    """Every tap of a forward pass (copies, by (block, name)) and its output."""
    found: dict = {}
    out = model.forward(X, taps=lambda i, name, Z: found.__setitem__((i, name), Z.copy()), **options)
    return found, out


def _columns(model: Transformer, X: np.ndarray) -> np.ndarray:
    return model.columns(X)[0]  # (d, b, n), a new array


@pytest.mark.parametrize("name", sorted(SPECS))
def test_each_blocks_tapped_output_is_the_pass_stopped_at_that_block(name):
    model = _model(name)
    X = np.random.default_rng(0).normal(size=(2, model.spec.d, 7))
    found, out = _heard(model, X)
    for i in range(model.spec.N):
        stopped = model.run(_columns(model, X), last=i)
        assert np.array_equal(stopped, found[i, "block"])
        assert np.array_equal(model.forward(X, last=i), stopped.transpose(1, 0, 2))  # forward's own stop
        if i + 1 < model.spec.N:  # the control: the next block's output is another
            assert not np.allclose(stopped, found[i + 1, "block"])
    assert np.array_equal(model.finish(found[model.spec.N - 1, "block"]).transpose(1, 0, 2), out)  # then the head


@pytest.mark.parametrize("name", ["pre", "none", "scaled", "experts", "window"])
def test_the_sublayer_taps_add_up_to_each_block_as_the_residual_stream_says(name):
    """x + attention(.) + feedforward(.) in the order the block adds them, to the bit."""
    model = _model(name)
    found, _ = _heard(model, np.random.default_rng(1).normal(size=(2, model.spec.d, 6)))
    before = found[-1, "input"]
    for i in range(model.spec.N):
        attention, feedforward = found[i, "attention"], found[i, "feedforward"]
        assert np.array_equal(found[i, "block"], feedforward + (attention + before))
        assert not np.allclose(found[i, "block"], attention + before)  # the control: the feedforward adds something
        before = found[i, "block"]


def test_the_parallel_layout_adds_both_sublayers_to_the_blocks_input():
    model = _model("parallel")
    found, _ = _heard(model, np.random.default_rng(2).normal(size=(1, model.spec.d, 5)))
    before = found[-1, "input"]
    for i in range(model.spec.N):
        assert np.array_equal(found[i, "block"], before + (found[i, "feedforward"] + found[i, "attention"]))
        before = found[i, "block"]


def test_a_decoder_blocks_cross_attention_is_tapped_between_its_attention_and_its_feedforward():
    spec = Spec(N=2, H=2, m=4, d=8, r=12, N_enc=2, norm="pre", mask="causal")
    pair = EncoderDecoder(spec, random_weights(spec, 3), workers=1)
    rng = np.random.default_rng(3)
    source, target = rng.normal(size=(1, 8, 5)), rng.normal(size=(1, 8, 4))
    found: list = []
    pair.forward(source, target, taps=lambda i, name, Z: found.append((i, name, Z.copy())))
    assert [(i, name) for i, name, _ in found] == [(-1, "input")] + [
        (i, name) for i in range(2) for name in ("attention", "cross", "feedforward", "block")
    ]
    heard = {(i, name): Z for i, name, Z in found}
    stream = heard[-1, "input"]
    for name in ("attention", "cross", "feedforward"):  # each sublayer's output added to the stream, in order
        stream = heard[0, name] + stream
    assert np.array_equal(heard[0, "block"], stream)


class Asked:
    """A provider that prepares each block when the pass asks for it (as one reading a checkpoint would), and
    remembers which blocks were asked."""

    def __init__(self, model: Transformer, weights: dict):
        self.model, self.weights, self.asked = model, weights, []

    def block(self, i: int):
        self.asked.append(i)
        m = self.model
        return prepare_block(m.spec, self.weights, m.dtype, i, m.layers[i], m.block_norms[i], m.reads_memory)


def test_a_provider_asked_per_block_gives_the_same_output_and_the_stop_block_asks_no_further():
    spec = SPECS["experts"]
    weights = random_weights(spec, 4)
    prepared = Transformer(spec, weights, workers=1)
    lazy = Transformer(spec, weights, workers=1)
    lazy.weights = provider = Asked(lazy, weights)
    X = np.random.default_rng(4).normal(size=(2, spec.d, 6))
    assert np.array_equal(lazy.forward(X), prepared.forward(X))
    assert provider.asked == [0, 1, 2]
    provider.asked.clear()
    lazy.run(_columns(lazy, X), last=1)
    assert provider.asked == [0, 1]  # block 2 never asked for, never run


def test_the_attention_maps_run_the_blocks_up_to_the_one_shown_only():
    model = _model("pre")
    model.weights = provider = Asked(model, random_weights(model.spec, 1))
    x = np.random.default_rng(5).normal(size=(model.spec.d, 6))
    A = block_weights(model, x, 1)
    assert provider.asked == [0, 1] and A.shape == (2, 6, 6)
    assert np.allclose(A.sum(axis=1), 1.0)  # each query's weights over the keys


class Shifted(Transformer):
    """A model whose blocks each add a column vector to their output (one a norm cannot take away: its entries
    differ): the decoder and the maps see it only if they run the model's blocks through its one loop."""

    def block(self, i, Z, *args, **options):
        return super().block(i, Z, *args, **options) + np.linspace(-1.0, 1.0, Z.shape[0])[:, None, None]


def test_decoding_and_the_maps_go_through_the_models_one_loop():
    spec = SPECS["pre"]
    weights = random_weights(spec, 6)
    plain, shifted = Transformer(spec, weights, workers=1), Shifted(spec, weights, workers=1)
    X = np.random.default_rng(6).normal(size=(2, spec.d, 6))
    assert np.allclose(decode(shifted, X, prompt=2), shifted.forward(X), rtol=0, atol=1e-12)  # decoding = the pass
    assert not np.allclose(decode(shifted, X), decode(plain, X))  # the control: the change is seen
    x = X[0]
    assert np.array_equal(block_weights(shifted, x, 0), block_weights(plain, x, 0))  # block 0's input: unchanged
    assert not np.allclose(block_weights(shifted, x, 1), block_weights(plain, x, 1))  # block 1 reads block 0's


def test_an_encoder_decoders_maps_go_through_the_decoders_loop():
    spec = Spec(N=2, H=2, m=4, d=8, r=12, N_enc=2, norm="pre", mask="causal")
    weights = random_weights(spec, 7)
    pair, shifted = EncoderDecoder(spec, weights, workers=1), EncoderDecoder(spec, weights, workers=1)
    shifted.decoder.__class__ = Shifted
    rng = np.random.default_rng(7)
    source, target = rng.normal(size=(8, 5)), rng.normal(size=(8, 4))
    for kind in ("self", "cross"):
        same = decoder_block_weights(shifted, source, target, 0, kind)
        assert np.array_equal(same, decoder_block_weights(pair, source, target, 0, kind))
        assert not np.allclose(
            decoder_block_weights(shifted, source, target, 1, kind),
            decoder_block_weights(pair, source, target, 1, kind),
        )


def test_each_blocks_cache_is_its_attentions_and_a_window_keeps_its_own_width():
    spec = Spec(
        N=4,
        H=2,
        m=4,
        d=8,
        r=12,
        norm="pre",
        mask="causal",
        positional="rope",
        window=3,
        attention_layers=("sliding", "full"),
    )
    model = Transformer(spec, random_weights(spec, 8), workers=1)
    decoder = Decoder(model, 2, 10)
    assert all(isinstance(cache, KVCache) for cache in decoder.caches)
    assert [cache.K.shape[-1] for cache in decoder.caches] == [3, 10, 3, 10]  # sliding blocks: a ring of w
    X = np.random.default_rng(8).normal(size=(2, spec.d, 10))
    assert np.allclose(decode(model, X, prompt=4), model.forward(X), rtol=0, atol=1e-12)


class Counted(dict):
    """A weights mapping that counts each block's tensors read (as a checkpoint decoding on access would)."""

    def __init__(self, weights: dict):
        super().__init__(weights)
        self.read: list[int] = []

    def __getitem__(self, name: str):
        if name.startswith("blocks."):
            self.read.append(int(name.split(".")[1]))
        return super().__getitem__(name)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_blocks_prepared_just_in_time_give_the_prepared_pass_bit_for_bit(name, monkeypatch):
    """One block kept or all, in one thread or two asking at once (the batch split however small)."""
    monkeypatch.setattr(model_module, "PARALLEL_MIN_SIZE", 0)
    spec = SPECS[name]
    weights = random_weights(spec, 5)
    X = np.random.default_rng(5).normal(size=(2, spec.d, 7))
    expected = Transformer(spec, weights, workers=1).forward(X)
    for keep, workers in ((1, 1), (1, 2), (spec.N, 2)):
        model = Transformer(spec, weights, workers=workers, keep_blocks=keep)
        assert np.array_equal(model.forward(X), expected), (keep, workers)
        assert len(model.weights.kept) == keep


def test_a_block_just_in_time_reads_its_tensors_when_the_pass_reaches_it_and_keeps_blocks_for_the_next_pass():
    spec = SPECS["pre"]
    weights = Counted(random_weights(spec, 6))
    model = Transformer(spec, weights, workers=1, keep_blocks=2)
    assert weights.read == [] and model.weights.prepared == 0  # nothing of the blocks read at build
    X = np.random.default_rng(6).normal(size=(1, spec.d, 5))
    model.forward(X)
    # block 2 came when 0 and 1 were kept: 1, used just before, was dropped (0 is the next pass's first)
    assert sorted(set(weights.read)) == [0, 1, 2] and list(model.weights.kept) == [0, 2]
    weights.read.clear()
    model.run(_columns(model, X), last=0)  # block 0 kept: nothing read; blocks 1 and 2 never asked
    assert weights.read == [] and model.weights.prepared == 3
    model.forward(X)  # a whole pass again: only block 1 read (least recently used first would read all three)
    assert set(weights.read) == {1} and model.weights.prepared == 4
    prepared = Counted(random_weights(spec, 6))
    Transformer(spec, prepared, workers=1)
    assert sorted(set(prepared.read)) == [0, 1, 2]  # the control: prepared up front, every block read at build
