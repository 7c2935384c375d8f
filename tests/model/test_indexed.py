"""DeepSeek Sparse Attention (components/indexed.py): each query's selection against the lightning indexer written
out here query by query, the attention over the selected keys, chunked or whole, decoding against the parallel pass,
the shared layers, the cache and the count; each with a case where the property must break."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import Spec, Transformer, count_params, make_setup
from transformer_cli.analysis.kv_cache import kv_cache_bytes
from transformer_cli.errors import ExitCode, SpecError
from transformer_cli.model.decoding import decode
from transformer_cli.spec.validate import spec_from_mapping
from transformer_cli.verify import check_causality, check_decoding, check_equivariance

SPARSE = Spec(
    N=3, H=4, m=12, d=32, r=48, V=41, mask="causal", scale="sqrt", norm="pre", norm_type="rmsnorm",
    feedforward="gated", activation="silu", ff_bias=False, positional="rope", rope_pairing="interleaved",
    attention="indexed", kv_rank=8, q_rank=12, rope_m=4, v_m=6, index_heads=8, index_m=8, index_topk=3,
)  # fmt: skip


def rms(x, gain, eps):
    return x / np.sqrt(np.mean(x * x, axis=0) + eps) * gain


def turn_half(x, t, rot, theta):
    """x's first rot entries turned at position t, rotate_half's pairs (j, j + rot/2)."""
    f = theta ** (-np.arange(0, rot, 2) / rot) * t
    out, h = x.copy(), rot // 2
    out[:h] = x[:h] * np.cos(f) - x[h:rot] * np.sin(f)
    out[h:rot] = x[h:rot] * np.cos(f) + x[:h] * np.sin(f)
    return out


def chosen_by_hand(spec, weights, X):
    """Block 0's selection for one sequence X (d, n), written out query by query from the published formula: the
    keys each query's top-k index scores pick."""
    get = lambda name: weights[f"blocks.0.{name}"]  # noqa: E731
    low = rms(get("attention.W_QA") @ X, get("attention.q_a_norm.gamma")[:, None], 1e-6)
    H_I, D_I, n = spec.index_heads, spec.index_m, X.shape[1]
    k = get("attention.index.W_K") @ X
    k = (k - k.mean(0)) / np.sqrt(k.var(0) + 1e-6) * get("attention.index.k_norm.gamma")[:, None]
    k += get("attention.index.k_norm.beta")[:, None]
    q = np.einsum("hiq,qn->hin", get("attention.index.W_Q"), low)
    w = get("attention.index.W_W") @ X / np.sqrt(H_I)
    keys = np.stack([turn_half(k[:, t], t, spec.rope_m, spec.rope_theta) for t in range(n)], axis=1)
    chosen = []
    for s in range(n):
        qs = [turn_half(q[h, :, s], s, spec.rope_m, spec.rope_theta) for h in range(H_I)]
        score = [sum(w[h, s] * max(qs[h] @ keys[:, t] / np.sqrt(D_I), 0.0) for h in range(H_I)) for t in range(s + 1)]
        chosen.append(set(np.argsort(score)[::-1][: spec.index_topk].tolist()))
    return chosen


def test_each_query_attends_to_the_keys_the_indexer_written_out_chooses():
    weights = random_weights(SPARSE, seed=1)
    ids = np.random.default_rng(2).integers(0, SPARSE.V, size=(1, 9))
    A = Transformer(SPARSE, weights).attention_weights(ids)[0][0]  # (H, n_k, n_q): block 0's weights
    picked = [set(np.flatnonzero(A[0, :, s] > 0).tolist()) for s in range(9)]
    X = rms(weights["embedding.E"][:, ids[0]], weights["blocks.0.norm1.gamma"][:, None], SPARSE.norm_eps)
    assert picked == chosen_by_hand(SPARSE, weights, X)
    assert [len(p) for p in picked] == [1, 2, 3, 3, 3, 3, 3, 3, 3]  # (the first three see all they can)
    everything = Transformer(replace(SPARSE, index_topk=9), weights).attention_weights(ids)[0][0]
    assert (everything[0] > 0).sum() == 9 * 10 // 2


@pytest.mark.parametrize("chunk_bytes", [64, 10**9])
def test_the_selection_is_the_same_made_chunk_by_chunk(chunk_bytes):
    weights = random_weights(SPARSE, seed=3)
    ids = np.random.default_rng(4).integers(0, SPARSE.V, size=(2, 17))
    whole = Transformer(SPARSE, weights)(ids)
    chunked = Transformer(SPARSE, weights, chunk_bytes=chunk_bytes)(ids)
    assert np.abs(chunked - whole).max() < 1e-12 * np.abs(whole).max()
    everything = Transformer(replace(SPARSE, index_topk=17), weights)(ids)  # (every key: latent attention's)
    assert np.abs(everything - whole).max() > 1e-3 * np.abs(whole).max()


@pytest.mark.parametrize("kinds", [None, ("indexed", "indexed_shared", "indexed_shared")])
def test_decoding_step_by_step_is_the_parallel_pass(kinds):
    spec = replace(SPARSE, mixer_layers=kinds)
    model = Transformer(spec, random_weights(spec, seed=5))
    ids = np.random.default_rng(6).integers(0, spec.V, size=(2, 11))
    parallel = model(ids)
    assert np.abs(decode(model, ids, prompt=4) - parallel).max() < 1e-12 * np.abs(parallel).max()
    stale = decode(model, ids, prompt=4, stale_at=5)  # (step 5's latent and indexer key never stored)
    assert np.abs(stale - parallel).max() > 1e-3 * np.abs(parallel).max()


def test_shared_layers_reuse_the_selection_of_the_layer_before():
    spec = replace(SPARSE, mixer_layers=("indexed", "indexed_shared", "indexed"))
    own = replace(SPARSE, mixer_layers=("indexed", "latent", "indexed"))  # (block 1 attending to every key)
    weights = random_weights(spec, seed=7)
    ids = np.random.default_rng(8).integers(0, spec.V, size=(1, 12))
    assert count_params(spec).total == count_params(own).total  # (no indexer in block 1 either way)
    assert np.abs(Transformer(spec, weights)(ids) - Transformer(own, weights)(ids)).max() > 1e-3


def test_counts_name_every_tensor_and_the_closed_form_agrees():
    H, m, d, c, r, v, q, H_I, D_I = 4, 12, 32, 8, 4, 6, 12, 8, 8
    latent = q * (d + 1 + H * m) + (c + r) * d + c + H * (m - r + v) * c + H * v * d
    indexer = H_I * D_I * q + D_I * d + 2 * D_I + H_I * d
    expected = 3 * (latent + indexer + 3 * 48 * d + 2 * d) + 2 * 41 * d + d
    counted = count_params(SPARSE)
    assert counted.total == expected == counted.closed_total  # (the tensors, the closed form)
    shared = replace(SPARSE, mixer_layers=("indexed", "indexed_shared"))  # (blocks 1 without an indexer)
    assert count_params(shared).total == expected - indexer == count_params(shared).closed_total


def test_the_cache_holds_the_indexers_keys_beside_the_latents():
    per_token = (8 + 4 + 8) * 8  # the latent, the rotary key part and the indexer's key, float64
    assert kv_cache_bytes(SPARSE, 2, 10, "float64") == 3 * 2 * 10 * per_token
    shared = replace(SPARSE, mixer_layers=("indexed", "indexed_shared"))
    assert kv_cache_bytes(shared, 2, 10, "float64") == 2 * 10 * (3 * per_token - 8 * 8)  # (block 1: no key)


@pytest.mark.parametrize("kinds", [None, ("indexed", "indexed_shared")])
def test_the_sparse_attention_is_causal_and_decodes_as_it_runs(kinds):
    spec = replace(SPARSE, mixer_layers=kinds)
    setup = lambda: make_setup(spec, random_weights(spec), 0, "float64", None, None)  # noqa: E731
    assert check_causality(setup()).exit_code == ExitCode.OK
    assert check_decoding(setup()).exit_code == ExitCode.OK  # (its controls caught, or not OK)
    assert check_equivariance(setup()).exit_code == ExitCode.VIOLATED  # (causal: theory says it breaks)
    assert check_equivariance(setup(), expect="theory").exit_code == ExitCode.OK


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"q_rank": None}, "q_rank with attention: indexed"),
        ({"index_m": 2}, "at least rope_m = 4"),
        ({"mixer_layers": ["indexed_shared", "indexed"]}, "an indexed block first"),
        ({"index_topk": None}, "key 'index_topk': missing"),
        ({"mask": "none"}, "causal with attention: indexed"),
    ],
)
def test_what_the_indexer_cannot_be_is_refused_in_one_line(changes, said):
    data = {"N": 2, "H": 4, "m": 12, "d": 32, "r": 48, "V": 41, "mask": "causal", "positional": "rope"}
    data |= {"attention": "indexed", "kv_rank": 8, "q_rank": 12, "rope_m": 4, "index_heads": 8, "index_m": 8}
    data |= {"index_topk": 3}
    data = {k: v for k, v in (data | changes).items() if v is not None}
    with pytest.raises(SpecError, match=re.escape(said)):
        spec_from_mapping(data, "sparse.yaml")
