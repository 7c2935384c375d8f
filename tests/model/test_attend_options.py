"""kernels.attend takes its options as one object (kernels.Attend): each layer's attention makes its own once (its
scale, mask, window and soft cap) and a call adds only what is its own (the block's sinks, the positions' bias, a
decoding step seeing every cached key)."""

from __future__ import annotations

import numpy as np
from conftest import random_weights

from transformer_cli import Spec, Transformer, kernels
from transformer_cli.model.decoding import decode

SPEC = Spec(
    N=2,
    H=2,
    m=4,
    d=8,
    r=16,
    mask="causal",
    scale="sqrt",
    window=3,
    attention_layers=("sliding", "full"),
    attn_softcap=20.0,
    attn_sinks=True,
)


def _calls(monkeypatch, run) -> list[kernels.Attend]:
    seen: list[kernels.Attend] = []
    real = kernels.attend
    monkeypatch.setattr(kernels, "attend", lambda Q, K, V, how, **kw: seen.append(how) or real(Q, K, V, how, **kw))
    run()
    monkeypatch.undo()
    return seen


def _shown(how: kernels.Attend) -> tuple:
    return (how.scale, how.causal, how.window, how.softcap, how.sinks is not None, how.chunk_bytes)


def test_each_layer_attends_with_its_own_window_and_the_models_scale_cap_and_chunks(monkeypatch):
    model = Transformer(SPEC, random_weights(SPEC), chunk_bytes=1 << 12)
    X = np.random.default_rng(0).normal(size=(SPEC.d, 5))
    seen = _calls(monkeypatch, lambda: model(X))
    scale = 1 / np.sqrt(SPEC.m)
    assert [_shown(how) for how in seen] == [
        (scale, True, 3, 20.0, True, 1 << 12),
        (scale, True, None, 20.0, True, 1 << 12),
    ]
    assert model.layers[0][0].attends is model.layers[0][0].attends  # made once per layer


def test_a_decoding_step_sees_every_cached_key_unmasked(monkeypatch):
    model = Transformer(SPEC, random_weights(SPEC))
    X = np.random.default_rng(1).normal(size=(SPEC.d, 4))
    seen = _calls(monkeypatch, lambda: decode(model, X))
    assert {(how.causal, how.window) for how in seen} == {(False, None)}  # one query: the cache's keys only
    assert len(seen) == SPEC.N * 4 and all(how.sinks is not None and how.softcap == 20.0 for how in seen)
