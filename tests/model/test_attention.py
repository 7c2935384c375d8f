"""`tfm attention`: the saved weights' shape and axes, and the heatmap at n = 1 and n = 200."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import EXAMPLES, random_weights

from transformer_cli import Transformer, load_spec
from transformer_cli.cli import app

TINY = next(p for p in EXAMPLES if p.name == "tiny-causal.yaml")


def _input(tmp_path, n, b=None):
    x = tmp_path / "x.npy"
    shape = (16, n) if b is None else (b, 16, n)
    np.save(x, np.random.default_rng(0).normal(size=shape))
    return x


@pytest.mark.parametrize("n", [1, 200])
def test_heatmap_renders(runner, tmp_path, n):
    result = runner.invoke(app, ["attention", str(TINY), "-i", str(_input(tmp_path, n)), "--block", "1"])
    assert result.exit_code == 0, result.output
    assert "head 0" in result.stdout and "head 1" in result.stdout and "rows: key k" in result.stdout
    assert ("averaged" in result.stdout) == (n == 200)


def test_saved_weights_are_h_by_key_by_query(runner, tmp_path):
    x, out = _input(tmp_path, 9), tmp_path / "attn.npy"
    result = runner.invoke(app, ["attention", str(TINY), "-i", str(x), "--block", "1", "--head", "1", "-o", str(out)])
    assert result.exit_code == 0 and "head 1" in result.stdout and "head 0" not in result.stdout
    A = np.load(out)
    assert A.shape == (2, 9, 9)
    assert np.allclose(A.sum(axis=1), 1.0)  # each query column sums to 1 over keys
    assert np.all(A[:, np.tril_indices(9, -1)[0], np.tril_indices(9, -1)[1]] == 0)  # causal: key k > query q is 0
    spec = load_spec(TINY)
    from transformer_cli import init_weights

    expected = Transformer(spec, init_weights(spec)).attention_weights(np.load(x))[1][0]
    assert np.array_equal(A, expected)


def test_json_and_a_batch(runner, tmp_path):
    x = _input(tmp_path, 5, b=3)
    result = runner.invoke(app, ["attention", str(TINY), "-i", str(x), "--sequence", "2", "--head", "0", "--json"])
    data = json.loads(result.stdout)
    assert data["axes"] == ["head", "key", "query"] and data["shape"] == [2, 5, 5] and list(data["weights"]) == ["0"]


@pytest.mark.parametrize(
    "args, words",
    [(["--block", "2"], "expected 0 .. 1"), (["--head", "5"], "H = 2"), (["--sequence", "1"], "the input holds 1")],
)
def test_out_of_range_indices(runner, tmp_path, args, words):
    result = runner.invoke(app, ["attention", str(TINY), "-i", str(_input(tmp_path, 4)), *args])
    assert result.exit_code == 2 and words in result.stderr


def test_weights_seen_by_the_heatmap_are_the_models(tmp_path):
    spec = load_spec(TINY)
    w = random_weights(spec)
    A = Transformer(spec, w).attention_weights(np.random.default_rng(1).normal(size=(16, 7)))[0][0]
    assert A.shape == (2, 7, 7) and np.allclose(A.sum(axis=-2), 1)


def test_masked_and_small_weights_look_different():
    """Uniform causal attention over n = 40: weights 1/40 .. 1 above the diagonal, exact zeros below."""
    from rich.console import Console

    from transformer_cli.cli.heatmap import heatmap

    n = 40
    A = np.triu(np.ones((n, n))) / np.arange(1, n + 1)  # A[k, q] = 1/(q+1) for k <= q, 0 for masked k > q
    console = Console(width=200, color_system=None, record=True)
    console.print(heatmap(A, "uniform", 200))
    rows = [line for line in console.export_text().splitlines() if line[:3].strip().isdigit()]  # label "39 "
    assert len(rows) == n
    for k, line in enumerate(rows):
        cells = [line[3 + 2 * q : 5 + 2 * q] for q in range(n)]
        assert all(c == "  " for c in cells[:k]), (k, cells)  # masked: blank
        assert all(c.strip() for c in cells[k:]), (k, cells)  # every nonzero weight is drawn


@pytest.mark.parametrize(("width", "step"), [(200, 1), (80, 1), (20, 2)])
def test_a_cross_attention_map_is_pooled_only_when_its_queries_do_not_fit(width, step):
    """Issue 22 (14): 7 source keys x 5 queries was averaged into 2 x 2 blocks even at 200 columns."""
    from rich.console import Console

    from transformer_cli.cli.heatmap import heatmap

    A = np.random.default_rng(0).random((7, 5))
    console = Console(width=width, color_system=None, record=True)
    console.print(heatmap(A / A.sum(axis=0), "cross", width))
    text = console.export_text()
    rows = [line for line in text.splitlines() if line.strip()[:1].isdigit() and any(c in line for c in "░▒▓█")]
    assert len(rows) == -(-7 // step)
    assert ("blocks of 2 x 2 averaged" in " ".join(text.split())) == (step == 2)
