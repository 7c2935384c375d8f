"""PhiMoE's router (router_score: sparsemixer) against transformers' own sparsemixer in eval mode, on scores with
ties, negatives and near neighbours; its controls; and its keys' rules."""

from __future__ import annotations

import numpy as np
import pytest

from transformer_cli.components.experts import sparsemixer
from transformer_cli.errors import SpecError
from transformer_cli.spec.validate import spec_from_mapping


def _theirs(scores: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    torch = pytest.importorskip("torch", reason="PyTorch runs the reference (the test extra)")
    phimoe = pytest.importorskip(
        "transformers.models.phimoe.modeling_phimoe", reason="transformers' PhiMoE is the reference (the test extra)"
    )
    weights, chosen = phimoe.sparsemixer(torch.from_numpy(scores.T.copy()), jitter_eps=eps, training=False)
    return chosen.numpy().T, weights.numpy().T


@pytest.mark.parametrize("eps", [0.01, 0.2, 0.6])
def test_sparsemixer_chooses_and_weights_as_transformers(eps):
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(8, 400))  # (E, T): one column per token
    scores[:, :50] = np.round(scores[:, :50], 1)  # ties and equal neighbours
    scores[:, 50:100] = -np.abs(scores[:, 50:100])  # every score negative
    scores[:, 100] = 0.0  # all equal (0 / 0 in the threshold)
    scores[:3, 101] = 1.0
    chosen, weights = sparsemixer(scores, eps)
    theirs_chosen, theirs_weights = _theirs(scores, eps)
    assert np.array_equal(chosen, theirs_chosen)
    np.testing.assert_allclose(weights, theirs_weights, rtol=1e-15, atol=0)
    assert np.all(weights > 0) and np.all(weights <= 1)


def test_the_threshold_matters_and_the_weights_are_not_renormalised():
    """The control: with a wide threshold the weights fall below 1 (several experts share the softmax); with a narrow
    one each chosen expert has weight 1, so the two sum to 2, never renormalised."""
    scores = np.array([[2.0, 1.0], [1.9, 0.5], [1.8, -3.0], [-1.0, 0.9]])
    _, narrow = sparsemixer(scores, 1e-6)
    _, wide = sparsemixer(scores, 0.5)
    assert np.array_equal(narrow, np.ones((2, 2)))
    assert np.all(wide[:, 0] < 1) and np.allclose(wide, _theirs(scores, 0.5)[1], rtol=1e-15)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"E": 4, "k": 1}, "key 'k': got 1, expected k = 2 with router_score: sparsemixer"),
        ({"E": 4, "k": 2, "router_groups": 2, "router_topk_groups": 1}, "no router_groups with router_score"),
        ({"E": 4, "k": 2, "router_score": "softmax", "router_jitter": 0.1}, "no router_jitter unless router_score"),
    ],
)
def test_sparsemixer_rules_are_one_line_naming_the_key(data, says):
    base = {"N": 1, "H": 2, "m": 2, "d": 4, "r": 4, "router_score": "sparsemixer"}
    with pytest.raises(SpecError) as error:
        spec_from_mapping(base | data, "s.yaml")
    assert says in str(error.value) and "\n" not in str(error.value)
