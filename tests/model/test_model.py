"""The forward pass against independent references: the shared cases and a literal transcription of the seed."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REFERENCE_CASES, random_weights, reference, variant_specs
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_model import reference_forward

from transformer_cli import Spec, Transformer, init_weights, load_spec
from transformer_cli.components.feedforward import FeedForwardWeights
from transformer_cli.kernels import causal_mask, gelu_, sinusoidal_positions, softmax_columns


def seed_transformer(w: dict, spec: Spec, X: np.ndarray) -> np.ndarray:
    """Seed 000 written out literally: a loop over blocks and heads, softmax column by column."""

    def softmax(v):
        e = np.exp(v - v.max())
        return e / e.sum()

    def Softmax(M):
        return np.column_stack([softmax(M[:, j]) for j in range(M.shape[1])])

    for i in range(spec.N):
        p = f"blocks.{i}."
        total = np.zeros_like(X)
        for h in range(spec.H):
            WQ, WK, WV = (w[p + f"attention.{k}"][h] for k in ("W_Q", "W_K", "W_V"))
            WO = w[p + "attention.W_O"][h]
            total += WO @ (WV @ X) @ Softmax((WK @ X).T @ (WQ @ X))
        X = X + total
        hidden = np.maximum(w[p + "ff.W1"] @ X + np.outer(w[p + "ff.b1"], np.ones(X.shape[1])), 0)
        X = X + w[p + "ff.W2"] @ hidden + np.outer(w[p + "ff.b2"], np.ones(X.shape[1]))
    return X


def rel(a: np.ndarray, b: np.ndarray) -> float:
    """max|a - b| / max|b|; two exactly equal arrays give 0, even all zeros (d = 1 under a norm without bias)."""
    diff = float(np.max(np.abs(a - b)))
    return 0.0 if diff == 0.0 else diff / float(np.max(np.abs(b)))


@pytest.mark.parametrize("case", REFERENCE_CASES)
def test_matches_reference_case(case):
    ref = reference(case)
    spec = load_spec(ref["spec_path"])
    y = Transformer(spec, ref["weights"])(ref["x"])
    assert y.shape == ref["y"].shape
    assert rel(y, ref["y"]) < 1e-12


def test_reference_check_can_fail():
    """The same comparison sees a change in one weight entry."""
    ref = reference("seed-plain")
    spec = load_spec(ref["spec_path"])
    ref["weights"]["blocks.1.ff.b2"][3] += 1e-6
    assert rel(Transformer(spec, ref["weights"])(ref["x"]), ref["y"]) > 1e-9


@pytest.mark.parametrize("shape", [(1, 1, 1, 1, 1), (2, 3, 4, 10, 16), (3, 1, 7, 5, 9), (1, 5, 2, 6, 3)])
def test_matches_literal_seed_formula(shape):
    N, H, m, d, r = shape
    spec = Spec(N=N, H=H, m=m, d=d, r=r)
    w = random_weights(spec, seed=sum(shape))
    X = np.random.default_rng(1).normal(size=(d, 11))
    assert rel(Transformer(spec, w)(X), seed_transformer(w, spec, X)) < 1e-12


def test_batched_equals_one_at_a_time():
    spec = load_spec(reference("standard-pre-causal")["spec_path"])
    model = Transformer(spec, random_weights(spec))
    X = np.random.default_rng(2).normal(size=(4, spec.d, 9))
    Y = model(X)
    for b in range(4):
        assert rel(Y[b], model(X[b])) < 1e-13


@pytest.mark.parametrize("case", REFERENCE_CASES)
def test_float32_agrees_with_float64_to_float32_precision(case):
    spec = load_spec(reference(case)["spec_path"])
    w = random_weights(spec)
    X = np.random.default_rng(3).normal(size=(spec.d, 12))
    y64 = Transformer(spec, w)(X)
    y32 = Transformer(spec, w, np.float32)(X)
    assert y32.dtype == np.float32
    assert 1e-9 < rel(y32.astype(np.float64), y64) < 1e-4


def test_softmax_is_over_columns_and_stable():
    S = np.array([[1000.0, 0.0], [999.0, 0.0], [-np.inf, 0.0]])
    A = softmax_columns(S)
    assert np.allclose(A.sum(axis=0), 1.0)
    assert A[2, 0] == 0.0
    assert np.isclose(A[0, 0], 1 / (1 + np.exp(-1)))
    assert np.allclose(A[:, 1], 1 / 3)


def test_large_unscaled_inputs_stay_finite():
    spec = Spec(N=2, H=4, m=8, d=32, r=64)
    X = 1e3 * np.random.default_rng(4).normal(size=(spec.d, 16))
    assert np.all(np.isfinite(Transformer(spec, init_weights(spec))(X)))


def test_sinusoidal_positions_follow_the_formula():
    d, n = 9, 6
    PE = sinusoidal_positions(d, n)
    for row in range(d):
        i = row // 2
        angle = np.arange(n) / 10000 ** (2 * i / d)
        expected = np.sin(angle) if row % 2 == 0 else np.cos(angle)
        assert np.allclose(PE[row], expected, rtol=0, atol=1e-15)
    assert PE.shape == (9, 6)  # odd d: the last row is a sine (row 8 is even)


def test_causal_mask_forbids_exactly_the_later_keys():
    assert np.array_equal(np.isinf(causal_mask(0, 4, 4)), np.triu(np.ones((4, 4), bool), 1))  # (n_q, n_k)
    assert np.array_equal(np.isinf(causal_mask(2, 4, 4)), [[False] * 3 + [True], [False] * 4])


def test_gelu_is_the_tanh_form():
    x = np.array([-3.0, -0.5, 0.0, 0.7, 2.0])
    expected = [0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v**3))) for v in x]
    assert np.allclose(gelu_(x.copy()), expected, rtol=0, atol=1e-15)


def test_init_keeps_activations_of_order_one_through_depth():
    """The init scheme (residual outputs scaled by 1/sqrt(2N)) keeps the RMS within a small factor at N = 24."""
    spec = Spec(N=24, H=4, m=16, d=64, r=256)
    trace: list[float] = []
    Transformer(spec, init_weights(spec, seed=5)).forward(np.random.default_rng(5).normal(size=(64, 32)), trace=trace)
    assert 0.9 < trace[0] < 1.1
    assert all(0.5 < v < 3.0 for v in trace), trace


def test_init_is_deterministic_and_seeded():
    spec = Spec(N=1, H=2, m=3, d=4, r=5)
    a, b, c = init_weights(spec, 7), init_weights(spec, 7), init_weights(spec, 8)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["blocks.0.attention.W_Q"], c["blocks.0.attention.W_Q"])
    assert all(v.dtype == np.float64 for v in a.values())


@settings(max_examples=80, deadline=None)
@given(variant_specs(), st.integers(1, 3), st.integers(1, 20), st.sampled_from([1, 3, 7, 10**9]), st.integers(0, 99))
def test_optimised_pass_matches_the_straightforward_one(spec, b, n, chunk_queries, seed):
    """Any spec, batch and n, with chunks of 1, 3 or 7 queries (n need not be a multiple) or one chunk."""
    w = random_weights(spec, seed)
    X = np.random.default_rng(seed).normal(size=(b, spec.d, n))
    chunk_bytes = chunk_queries * b * spec.H * n * 8
    y = Transformer(spec, w, chunk_bytes=chunk_bytes)(X)
    assert rel(y, reference_forward(spec, w, X)) < 1e-12


def test_chunked_equals_unchunked_for_a_long_causal_sequence():
    spec = Spec(N=1, H=2, m=8, d=16, r=32, mask="causal", scale="sqrt", positional="sinusoidal", norm="pre")
    w = random_weights(spec)
    X = np.random.default_rng(0).normal(size=(spec.d, 1000))
    one_chunk = Transformer(spec, w, chunk_bytes=1 << 40)(X)
    for chunk_queries in (1, 64, 333):
        chunked = Transformer(spec, w, chunk_bytes=chunk_queries * 2 * 1000 * 8)(X)
        assert rel(chunked, one_chunk) < 1e-13


def test_the_input_is_never_modified():
    spec = Spec(N=1, H=1, m=2, d=4, r=3, positional="sinusoidal")
    X = np.random.default_rng(0).normal(size=(4, 5))
    before = X.copy()
    Transformer(spec, random_weights(spec))(X)
    assert np.array_equal(X, before)


def test_batch_split_over_threads_equals_one_thread():
    spec = Spec(N=2, H=4, m=8, d=32, r=64, norm="post", mask="causal", positional="sinusoidal")
    w = random_weights(spec)
    X = np.random.default_rng(0).normal(size=(7, spec.d, 300))  # 67,200 activations: above the threads' threshold
    one = Transformer(spec, w, workers=1)(X)
    two = Transformer(spec, w, workers=2)(X)
    assert rel(two, one) < 1e-14
    assert rel(two, reference_forward(spec, w, X)) < 1e-12


@pytest.mark.parametrize("kind", [dict(mask="causal"), dict(mask="none"), dict(mask="causal", window=100, G=2)])
def test_one_long_sequences_attention_shared_over_threads_equals_one_thread(monkeypatch, kind):
    """A batch of one: each attention's chunks of queries split over the threads (interleaved), each writing its
    own columns; a chunk no thread took would leave the columns np.empty made."""
    import transformer_cli.kernels as kernels
    import transformer_cli.model.transformer as transformer

    monkeypatch.setattr(transformer, "PARALLEL_QUERIES", 256)  # (8,192 in use: the test's sequence is shorter)
    calls: list[tuple[int, int]] = []
    real = kernels.attend
    monkeypatch.setattr(kernels, "attend", lambda *a, **k: calls.append(k.get("part", (0, 1))) or real(*a, **k))
    spec = Spec(N=2, H=4, m=8, d=32, r=64, scale="sqrt", positional="rope", **kind)
    w = random_weights(spec)
    X = np.random.default_rng(0).normal(size=(1, spec.d, 700))  # six chunks of 128 queries and one of 60
    one = Transformer(spec, w, workers=1)(X)
    assert set(calls) == {(0, 1)}
    calls.clear()
    two = Transformer(spec, w, workers=2)(X)
    assert sorted(set(calls)) == [(0, 2), (1, 2)]  # (each block's attention in two parts)
    assert rel(two, one) < 1e-13  # (BLAS at one thread or two sums its products in another order)
    assert rel(two, reference_forward(spec, w, X)) < 1e-12


def test_trace_and_progress_are_the_same_split_over_threads_or_not():
    spec = Spec(N=3, H=2, m=8, d=32, r=64)
    w = random_weights(spec)
    X = np.random.default_rng(0).normal(size=(5, spec.d, 500))
    traces, steps = [], []
    for workers in (1, 2):
        trace: list[float] = []
        done: list[float] = []
        Transformer(spec, w, workers=workers).forward(X, trace=trace, on_block=done.append)
        traces.append(trace)
        steps.append(sum(done))
    assert len(traces[0]) == spec.N + 1 and np.allclose(traces[0], traces[1], rtol=1e-12)
    assert steps == pytest.approx([1.0, 1.0])
    direct = np.sqrt(np.mean(np.square(reference_forward(spec, w, X))))
    assert traces[0][-1] == pytest.approx(direct, rel=1e-12)


# -- token ids in, logits out -----------------------------------------------------------------------------


def test_token_ids_give_the_logits_of_their_embedded_columns():
    """Ids (b, n) and the columns E[:, ids] give the same logits: the embedding is a lookup, the head per column."""
    spec = Spec(N=1, H=2, m=3, d=6, r=5, V=9, norm="pre", head_bias=True)
    w = random_weights(spec)
    ids = np.array([[0, 8, 3, 3], [5, 1, 0, 7]])
    columns = np.moveaxis(w["embedding.E"][:, ids], 0, 1)  # (b, d, n)
    model = Transformer(spec, w)
    assert np.array_equal(model(ids), model(columns)) and model(ids).shape == (2, 9, 4)
    assert Transformer(spec, w)(ids[0]).shape == (9, 4)


# -- experts: the routed pass is the dense one with zero weights off the top k ------------------------------


def test_routed_experts_equal_the_dense_sum_with_zeros_off_the_top_k():
    spec = Spec(N=1, H=2, m=3, d=6, r=5, E=4, k=2, feedforward="gated", activation="silu", ff_bias=False)
    w = random_weights(spec)
    model = Transformer(spec, w)
    blk, ff = model.weights.block(0)[1], model.layers[0][1]
    X = np.random.default_rng(3).normal(size=(6, 2, 9))
    chosen, weights = ff.route(blk.router, X.reshape(6, -1))
    assert chosen.shape == (2, 18) and all(len(set(column)) == 2 for column in chosen.T)  # exactly k, distinct
    scores = blk.router.W @ X.reshape(6, -1)
    dense = np.zeros((6, 18))
    for e in range(4):  # every expert on every column, its weight 0 unless it is among the top k
        gate = np.where(np.argsort(-scores, axis=0)[:2] == e, weights, 0.0).sum(axis=0)
        one = FeedForwardWeights(W1=blk.W1[e], b1=None, W2=blk.W2[e], b2=None)  # expert e alone
        dense += gate * ff.expert.apply(one, X).reshape(6, -1)
    assert np.allclose(ff.apply(blk, X).reshape(6, -1), dense, rtol=0, atol=1e-14)


def test_experts_with_k_equal_to_E_weigh_every_expert_by_the_softmax():
    spec = Spec(N=1, H=1, m=2, d=4, r=3, E=3, k=3)
    model = Transformer(spec, random_weights(spec))
    router = model.weights.block(0)[1].router
    scores = router.W @ np.eye(4)
    _, weights = model.layers[0][1].route(router, np.eye(4))
    expected = np.sort(np.exp(scores) / np.exp(scores).sum(axis=0), axis=0)[::-1]
    assert np.allclose(weights, expected, rtol=1e-14)
