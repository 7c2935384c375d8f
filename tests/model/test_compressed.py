"""DeepSeek-V4's attention (components/compressed.py, entries.py) on its own: the entries against the pooling written
out window by window, a decoder's entries made a step at a time equal to a whole pass's, a YAML spec that counts to
its closed form and decodes as it runs, each with a case that must break. Its exactness against transformers is
tests/formats/test_hf_deepseek_v4.py's and the INDEXED models'."""

from __future__ import annotations

import numpy as np
import pytest

from transformer_cli import Transformer, count_params
from transformer_cli.components.entries import Pooler, PoolState, Series
from transformer_cli.components.positional import POSITIONALS
from transformer_cli.io.weights import init_weights
from transformer_cli.model.decoding import decode
from transformer_cli.spec.load import spec_from_mapping

RATE, WIDTH, D, R = 3, 12, 10, 8  # (rate, entry width, model size, rotated entries: the spec's rope_m)

SPEC = dict(
    N=4, H=4, m=16, d=32, r=16, V=50, mask="causal", positional="rope", rope_theta=160000.0, rope_local_theta=10000.0,
    rope_m=8, norm="pre", norm_type="rmsnorm", scale="sqrt", attention="compressed_sparse",
    mixer_layers=["shared_kv", "compressed_sparse", "compressed", "compressed_sparse"], q_rank=12, o_groups=2,
    o_rank=6, window=4, attn_sinks=True, compress_rate=2, compress_heavy_rate=3, index_heads=8, index_m=12,
    index_topk=2, feedforward="limited", swiglu_limit=0.5, activation="silu", ff_bias=False, E=4, k=2, shared_r=16,
    router_score="sqrtsoftplus", router_bias=True, router_scale=1.5, feedforward_layers=["hashed", "routed"],
    hc_streams=3, hc_sinkhorn=4,
)  # fmt: skip


def _pooler(rng, rows: int) -> Pooler:
    return Pooler(
        rng.standard_normal((2 * rows, D)), rng.standard_normal((RATE, rows)), rng.uniform(0.5, 1.5, (WIDTH, 1, 1))
    )


def _rotary():
    spec = spec_from_mapping(SPEC)  # (the model's own rotary: the compressed blocks')
    rotary = POSITIONALS["rope"](spec)
    rotary.load(lambda name: None, np.dtype(np.float64))
    return rotary


def _written_out(p: Pooler, X: np.ndarray, overlap: bool, rotary) -> np.ndarray:
    """Each window's entry, one at a time: softmax over its slots (the window before's first halves first, with
    overlap), the norm, the turn at its first position."""
    rows = p.W.shape[0] // 2
    kv, gate = p.W[:rows] @ X, p.W[rows:] @ X  # (rows, n)
    out = []
    for w in range(X.shape[1] // RATE):
        tokens = slice(w * RATE, (w + 1) * RATE)
        g, v = gate[:, tokens] + p.bias.T, kv[:, tokens]
        if overlap:
            g, v = g[WIDTH:], v[WIDTH:]
            if w:
                before = slice((w - 1) * RATE, w * RATE)
                g = np.concatenate([gate[:WIDTH, before] + p.bias.T[:WIDTH], g], axis=1)
                v = np.concatenate([kv[:WIDTH, before], v], axis=1)
        weights = np.exp(g - g.max(axis=1, keepdims=True))
        e = (weights / weights.sum(axis=1, keepdims=True) * v).sum(axis=1)
        e = e / np.sqrt(np.mean(e**2) + 1e-6) * p.gain[:, 0, 0]
        angle = w * RATE * rotary.frequencies(X.shape[1])
        x, y = e[WIDTH - R :: 2].copy(), e[WIDTH - R + 1 :: 2].copy()
        e[WIDTH - R :: 2], e[WIDTH - R + 1 :: 2] = (
            x * np.cos(angle) - y * np.sin(angle),
            y * np.cos(angle) + x * np.sin(angle),
        )
        out.append(e)
    return np.stack(out, axis=1)


@pytest.mark.parametrize("overlap", [False, True])
def test_the_entries_are_the_pooling_written_out(overlap):
    rng = np.random.default_rng(0)
    p, X = _pooler(rng, WIDTH * (1 + overlap)), rng.standard_normal((D, 1, 11))
    rotary = _rotary()
    ours = Series(RATE, overlap, 1e-6, R).read(rotary, p, X, 0, None, True)[:, 0]
    expected = _written_out(p, X[:, 0], overlap, rotary)
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)
    if overlap:  # (each window pooled alone: the window before's first halves unread)
        alone = Pooler(np.concatenate([p.W[WIDTH : 2 * WIDTH], p.W[3 * WIDTH :]]), p.bias[:, WIDTH:], p.gain)
        broken = Series(RATE, False, 1e-6, R).read(rotary, alone, X, 0, None, True)
    else:  # (not turned)
        broken = Series(RATE, False, 1e-6, 0).read(rotary, p, X, 0, None, True)
    assert np.max(np.abs(broken[:, 0] - expected)) > 1e-3


@pytest.mark.parametrize("overlap", [False, True])
def test_a_decoders_entries_made_a_step_at_a_time_are_the_whole_passs(overlap):
    """After a prefill of p tokens and steps to n, the entries are those of a pass over n (a stale step's not kept)."""
    rng = np.random.default_rng(1)
    p, X = _pooler(rng, WIDTH * (1 + overlap)), rng.standard_normal((D, 2, 13))
    rotary, series = _rotary(), Series(RATE, overlap, 1e-6, R)
    whole = series.read(rotary, p, X, 0, None, True)
    for prompt in (0, 2, 3, 7):
        state = PoolState.made(p.W.shape[0] // 2, WIDTH, 2, RATE, 13, np.dtype(np.float64))
        series.read(rotary, p, X[:, :, :prompt], 0, state, True)
        for t in range(prompt, 13):
            seen = series.read(rotary, p, X[:, :, t : t + 1], t, state, True)
        np.testing.assert_allclose(seen, whole, rtol=1e-12, atol=1e-12)
    stale = PoolState.made(p.W.shape[0] // 2, WIDTH, 2, RATE, 13, np.dtype(np.float64))
    series.read(rotary, p, X[:, :, :4], 0, stale, True)
    series.read(rotary, p, X[:, :, 4:5], 4, stale, False)  # (used, not kept: the next step takes its slot)
    for t in range(5, 13):
        seen = series.read(rotary, p, X[:, :, t : t + 1], t, stale, True)
    assert seen.shape != whole.shape or np.max(np.abs(seen - whole)) > 1e-6


def test_a_yaml_spec_counts_to_its_closed_form_and_decodes_as_it_runs():
    spec = spec_from_mapping(SPEC)
    counted = count_params(spec)
    assert counted.total == counted.closed_total
    model = Transformer(spec, init_weights(spec, seed=0))
    ids = np.random.default_rng(2).integers(0, 50, size=(2, 17))
    full = model(ids)
    for prompt in (1, 6):
        assert np.max(np.abs(decode(model, ids, prompt=prompt) - full)) < 1e-12 * np.max(np.abs(full))
    assert np.max(np.abs(decode(model, ids, prompt=6, stale_at=9) - full)) > 1e-4 * np.max(np.abs(full))


def test_the_verify_suite_finds_what_its_theory_predicts():
    """Every check on the spec, its hashed blocks reading the ids below the drawn columns: causal, so not
    equivariant; relative (entries turned at their windows' first positions); experts routed by the table."""
    from transformer_cli.verify import verify_all

    results = {r.name: r for r in verify_all(spec_from_mapping(SPEC))}
    assert all(r.observed == r.expected for r in results.values()), {n: r.observation for n, r in results.items()}
    assert results["equivariance"].expected is False and results["relative"].expected is True
    assert "experts" in results and "decoding" in results


def test_the_kernels_tail_is_a_softmax_over_the_band_and_the_entries_written_out():
    """kernels.attend with a tail (a band of the tokens' keys a chunk, then every entry, masked by `content`) against
    one softmax over all keys written out (the window's mask, the entries' mask, a sink a head), weights too; small
    chunks so that many bands are cut. Control: the entries left unread."""
    from dataclasses import replace

    from transformer_cli import kernels

    rng = np.random.default_rng(3)
    b, H, m, n, T, w = 2, 4, 8, 23, 5, 4
    Q, K = rng.standard_normal((b, H, m, n)), rng.standard_normal((b, 1, m, n + T))
    sinks = rng.standard_normal(H)
    seen = rng.random((b, n, T)) < 0.6  # (each query's entries)
    mask = np.where(seen, 0.0, -np.inf)

    def content(i, q0, c, k0, k):
        return np.concatenate([np.zeros((c, k)), mask[i, q0 : q0 + c]], axis=-1)[None]

    how = kernels.Attend(m**-0.5, causal=True, window=w, sinks=sinks, tail=T, content=content, chunk_bytes=H * 40 * 8)
    found: list = []
    ours = kernels.attend(Q, K, K, replace(how, weights_out=found))  # (H, m, b, n)
    t, j = np.arange(n)[:, None], np.arange(n)[None, :]
    band = np.where((j <= t) & (j > t - w), 0.0, -np.inf)
    scores = (
        np.einsum("bhmq,bmk->bhqk", Q, K[:, 0]) * m**-0.5 + np.concatenate([band[None].repeat(b, 0), mask], -1)[:, None]
    )
    top = np.maximum(scores.max(-1, keepdims=True), sinks[None, :, None, None])
    e = np.exp(scores - top)
    weights = e / (e.sum(-1, keepdims=True) + np.exp(sinks[None, :, None, None] - top))
    expected = np.einsum("bhqk,bmk->hmbq", weights, K[:, 0])
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(found[0], weights.swapaxes(-1, -2), rtol=1e-12, atol=1e-14)
    unread = kernels.attend(Q, K[..., :n], K[..., :n], replace(how, tail=0, content=None))
    assert np.max(np.abs(unread - expected)) > 1e-3
