"""Qwen4-Exp's hashed n-gram inputs (components/ngram.py) on their own: the hash's numbers against transformers' own
functions, the rows against the contexts written out token by token, a YAML spec that counts to its closed form,
decodes as it runs and passes the verify suite, each with a case that must break. Their exactness against
transformers is tests/formats/test_hf_qwen4_exp.py's and the MIXERS models'."""

from __future__ import annotations

import numpy as np
import pytest

from transformer_cli import Transformer, count_params
from transformer_cli.components.ngram import head_sizes, multipliers, ngram_rows
from transformer_cli.io.weights import init_weights
from transformer_cli.model.decoding import decode
from transformer_cli.spec.load import spec_from_mapping

SPEC = dict(
    N=4, H=4, m=8, d=32, r=48, V=60, mask="causal", positional="rope", norm="pre", norm_type="rmsnorm",
    norm_plus_one=True, ngram_blocks=[0, 2], ngram_dim=16, ngram_heads=2, ngram_vocab=40, ngram_vocab_multiple=8,
    ngram_kernel=3, ngram_eos=2, norm_eps=1e-6,  # (one stream: no hyper-connections)
)  # fmt: skip


def test_the_hashs_numbers_are_transformers():
    qwen4 = pytest.importorskip("transformers.models.qwen4_exp.modeling_qwen4_exp")
    spec = spec_from_mapping(SPEC)
    for table in (0, 1, 3):
        theirs = qwen4._build_layer_multipliers(248320, 3, table, 1234).numpy()
        assert np.array_equal(multipliers(248320, 3, table, 1234), theirs)
        assert head_sizes(spec, table) == [qwen4._find_nth_prime_after(39, 4 * table + k + 1) for k in range(4)]
    assert not np.array_equal(multipliers(248320, 3, 1, 1234), multipliers(248320, 3, 0, 1234))


def _written_out(history: np.ndarray, g: int, mult, sizes, offsets, eos: int) -> np.ndarray:
    """Each column's rows, its context walked back token by token: no further than an eos before it."""
    out = np.zeros((*history.shape, len(sizes)), dtype=np.int64)
    heads = len(sizes) // (g - 1)
    for b, row in enumerate(history):
        for t in range(len(row)):
            context = []
            for j in range(g):
                back = row[t - j : t] if t - j >= 0 else None
                cut = back is None or eos in back
                context.append(eos if cut else int(row[t - j]))
            for order in range(2, g + 1):
                mixed = 0
                for j in range(order):
                    mixed ^= context[j] * int(mult[j])
                for k in range(heads):
                    h = (order - 2) * heads + k
                    out[b, t, h] = mixed % int(sizes[h]) + int(offsets[h])
    return out


def test_the_rows_are_the_contexts_written_out():
    rng = np.random.default_rng(0)
    history = rng.integers(0, 60, size=(3, 20))
    history[0, [3, 4, 11]] = 2
    history[1, 0] = 2
    mult = multipliers(60, 3, 1, 1234)
    sizes = np.array([41, 43, 47, 53])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    expected = _written_out(history, 3, mult, sizes, offsets, 2)
    assert np.array_equal(ngram_rows(history, 3, mult, sizes, offsets, 2), expected)
    ignoring = ngram_rows(history, 3, mult, sizes, offsets, 99)  # (no eos: contexts cross the 2s)
    assert not np.array_equal(ignoring, expected)


def test_a_yaml_spec_counts_to_its_closed_form_decodes_and_passes_verify():
    from transformer_cli.verify import verify_all

    spec = spec_from_mapping(SPEC)
    counted = count_params(spec)
    assert counted.total == counted.closed_total and spec.input_width == spec.d + 1
    model = Transformer(spec, init_weights(spec, seed=0))
    ids = np.random.default_rng(2).integers(0, 60, size=(2, 17))
    ids[0, 6] = 2
    full = model(ids)
    for prompt in (1, 6, 7):
        assert np.max(np.abs(decode(model, ids, prompt=prompt) - full)) < 1e-12 * np.max(np.abs(full))
    assert np.max(np.abs(decode(model, ids, prompt=6, stale_at=9) - full)) > 1e-4 * np.max(np.abs(full))
    results = {r.name: r for r in verify_all(spec)}
    assert all(r.observed == r.expected for r in results.values()), {n: r.observation for n, r in results.items()}
