"""Gemma 3n's pieces: AltUp's streams (altup), Laurel (laurel_rank), each block's feedforward size (r_layers) and
activation sparsity (sparsity_layers). Against transformers: hf_models_dense's gemma3n_text variants and
tests/formats/test_hf_gemma3n.py; here each against a model it must equal or a recomputation by hand, and the
keys' one-line errors."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import SpecError, count_params, spec_from_mapping
from transformer_cli.components.feedforward import sparse
from transformer_cli.model.transformer import Transformer

BASE = dict(N=3, H=2, m=4, d=8, r=12, V=30, mask="causal", positional="rope", norm="sandwich", norm_type="rmsnorm")
BASE |= dict(feedforward="gated", activation="gelu", ff_bias=False)
# no vocabulary, norms or positions: columns to columns, so that single blocks compose
PLAIN = {k: v for k, v in BASE.items() if k not in ("V", "norm_type")} | {"positional": "none", "norm": "none"}
IDS = np.random.default_rng(5).integers(0, 30, size=(2, 7))


def _block(w: dict, i: int) -> dict:
    return {name.replace(f"blocks.{i}.", "blocks.0.", 1): a for name, a in w.items() if name.startswith(f"blocks.{i}.")}


def test_one_stream_without_laurel_is_the_sandwich_block():
    """altup: 1 holds the one stream: predict adds C S (C = W_predict route), correct adds the innovation times
    (1 + W_correct route). With both coefficient matrices zero it is exactly the plain sandwich model; with them
    random, not."""
    spec = spec_from_mapping(BASE | {"altup": 1}, "s")
    w = random_weights(spec, 1)
    assert "altup.W_in" not in w and w["blocks.0.altup.W_predict"].shape == (1, 1)
    plain = spec_from_mapping(BASE, "s")
    zeroed = dict(w) | {f"blocks.{i}.altup.{x}": np.zeros((1, 1)) for i in range(3) for x in ("W_predict", "W_correct")}
    theirs = Transformer(plain, {k: v for k, v in w.items() if ".altup." not in k}).forward(IDS)
    assert np.allclose(Transformer(spec, zeroed).forward(IDS), theirs, rtol=0, atol=1e-12)
    assert not np.allclose(Transformer(spec, w).forward(IDS), theirs, rtol=0, atol=1e-6)


def test_the_streams_by_hand():
    """Two streams, one block, Laurel: the whole pass recomputed in NumPy from the module docstring's formulas."""
    spec = spec_from_mapping(BASE | {"N": 1, "altup": 2, "laurel_rank": 3, "positional": "none"}, "s")
    w = random_weights(spec, 2)
    ours = Transformer(spec, w).forward(IDS[0])

    def rms(x, g):
        return x / np.sqrt((x * x).mean(0) + spec.norm_eps) * g[:, None]

    def gelu(x):
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))

    x0 = w["embedding.E"][:, IDS[0]]
    y = w["altup.W_in"][0] @ x0
    S = np.stack([x0, y * np.sqrt((x0**2).mean(0)) / np.sqrt(np.maximum((y**2).mean(0), 1e-5))])
    b = "blocks.0."
    route = lambda v: np.tanh(w[b + "altup.W_router"] @ (rms(v, w[b + "altup.router_norm.gamma"]) / 8))  # noqa: E731
    C = (w[b + "altup.W_predict"] @ route(S[0])).reshape(2, 2, -1)
    P = S + np.einsum("ijn,jdn->idn", C, S)
    x = rms(P[0], w[b + "norm1.gamma"])
    Q, K, Vv = (w[b + f"attention.W_{k}"].reshape(8, 8) @ x for k in "QKV")
    heads = []
    for h in range(2):
        s = Q[4 * h : 4 * h + 4].T @ K[4 * h : 4 * h + 4]
        s = np.where(np.tril(np.ones((7, 7), bool)), s, -np.inf)
        p = np.exp(s - s.max(1, keepdims=True))
        heads.append(Vv[4 * h : 4 * h + 4] @ (p / p.sum(1, keepdims=True)).T)
    attn = w[b + "attention.W_O"].transpose(1, 0, 2).reshape(8, 8) @ np.concatenate(heads)
    laurel = x + rms(w[b + "laurel.W_right"] @ (w[b + "laurel.W_left"] @ x), w[b + "laurel.norm.gamma"])
    A = (P[0] + rms(attn, w[b + "norm1_out.gamma"]) + laurel) / math.sqrt(2)
    h = rms(A, w[b + "norm2.gamma"])
    ff = w[b + "ff.W2"] @ (gelu(w[b + "ff.W1"] @ h) * (w[b + "ff.W3"] @ h))
    out_ = A + rms(ff, w[b + "norm2_out.gamma"])
    P = P + (1 + w[b + "altup.W_correct"] @ route(out_))[:, None] * (out_ - P[0])
    u = w["altup.W_out"][0] @ P[1]
    out = (P[0] + u * np.sqrt((P[0] ** 2).mean(0)) / np.sqrt(np.maximum((u**2).mean(0), 1e-5))) / 2
    logits = w["head.W"] @ rms(out, w["final_norm.gamma"])
    assert np.allclose(ours, logits, rtol=0, atol=1e-12)


def test_each_block_has_its_own_feedforward_size():
    """r_layers [12, 5, 9]: each block's W1 has its rows, and the model is its single blocks composed."""
    spec = spec_from_mapping(PLAIN | {"r_layers": [12, 5, 9]}, "s")
    w = random_weights(spec, 3)
    assert [w[f"blocks.{i}.ff.W1"].shape[0] for i in range(3)] == [12, 5, 9]
    X = np.random.default_rng(1).standard_normal((8, 6))
    out = X
    for i, r in enumerate((12, 5, 9)):
        one = spec_from_mapping(PLAIN | {"N": 1, "r": r}, "s")
        out = Transformer(one, _block(w, i)).forward(out)
    assert np.allclose(Transformer(spec, w).forward(X), out, rtol=0, atol=1e-12)
    uniform = count_params(spec_from_mapping(PLAIN, "s")).total  # (r = 12 in each block)
    assert count_params(spec).total == uniform - 3 * 8 * ((12 - 5) + (12 - 9))


def test_a_sparse_gate_keeps_what_passes_the_gaussian_cutoff():
    """sparsity 0.9: the gate's pre-activation g becomes max(g - mean - std Phi^-1(0.9), 0) per token, by hand."""
    spec = spec_from_mapping(PLAIN | {"N": 1, "sparsity_layers": [0.9]}, "s")
    w = random_weights(spec, 4)
    X = np.random.default_rng(2).standard_normal((8, 5))
    dense = Transformer(spec_from_mapping(PLAIN | {"N": 1}, "s"), w)
    g = np.random.default_rng(3).standard_normal((12, 1, 5))
    cut = g.mean(0) + g.std(0) * NormalDist().inv_cdf(0.9)
    assert np.array_equal(sparse(g.copy(), (0.9,)), np.maximum(g - cut, 0))
    assert (sparse(g.copy(), (0.9,)) > 0).sum() < g.size / 3  # (about the top tenth of each column)
    assert not np.allclose(Transformer(spec, w).forward(X), dense.forward(X), rtol=0, atol=1e-6)


BAD = [
    ({"altup": 2, "altup_active": 2}, "key 'altup_active': got 2, expected a stream below altup = 2"),
    ({"altup": 2, "norm": "pre"}, "key 'altup': got 2, expected norm: sandwich in one stack"),
    ({"laurel_rank": 4}, "key 'laurel_rank': got 4, expected no laurel_rank without altup"),
    ({"r_layers": [4, 5, 6, 7]}, "key 'r_layers': got [4, 5, 6, 7], expected at most N = 3 entries"),
    ({"r_layers": [4, 0]}, "key 'r_layers': got [4, 0], expected a list of positive integers"),
    ({"sparsity_layers": [0.5, 1.0]}, "key 'sparsity_layers': got [0.5, 1.0], expected a list of numbers in [0, 1)"),
    ({"sparsity_layers": [0.5], "feedforward": "plain"}, "expected feedforward: gated"),
]


@pytest.mark.parametrize("keys, message", BAD)
def test_bad_gemma3n_keys_are_refused_in_one_line(keys, message):
    with pytest.raises(SpecError) as raised:
        spec_from_mapping(BASE | keys, "s.yaml")
    assert str(raised.value).startswith("s.yaml: ") and message in str(raised.value) and "\n" not in str(raised.value)
