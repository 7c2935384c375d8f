"""Training, serving and parallel memory ask the components, not the spec's keys: a kind registered with other
figures changes the estimates without a line of analysis/ changing (what a new mixer or feedforward needs)."""

from __future__ import annotations

import pytest

from transformer_cli import Spec
from transformer_cli import components as registry
from transformer_cli.analysis.parallel import Split, check_split
from transformer_cli.analysis.serving import transient
from transformer_cli.analysis.training import activation_bytes
from transformer_cli.components.attention import MultiHeadAttention
from transformer_cli.components.feedforward import FEEDFORWARDS, GatedFeedForward
from transformer_cli.errors import SpecError

GATED = Spec(N=2, H=2, m=4, d=8, r=64, feedforward="gated", activation="silu", norm="pre")


class WideGated(GatedFeedForward):
    """A gated kind that holds five rows of r at its peak and keeps 7 bytes a token for training."""

    hidden_rows = 5  # type: ignore[assignment]

    def saved_bytes(self, s: int, down: bool = True, gate: bool = True, up: bool = True) -> int:
        return 7


class Unsplittable(MultiHeadAttention):
    tensor_split_refusal = "test attention is not split"

    def saved_bytes(self, keys, s, fused, needed=(True,) * 3, frozen=False) -> int:  # type: ignore[no-untyped-def]
        return 11


def test_the_prefill_peak_is_the_feedforward_kinds():
    b, n, s = 1, 3, 2
    assert transient(GATED, b, n, s).blocks == b * n * (8 + 3 * 64) * s  # gated: gate, up and their product
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(FEEDFORWARDS, "gated", WideGated)
        assert transient(GATED, b, n, s).blocks == b * n * (8 + 5 * 64) * s


def test_training_bytes_are_the_components(monkeypatch):
    before = activation_bytes(GATED, 1, 5, "float32")["per_block"]
    assert before["feedforward"] != 5 * 7 and before["attention"] != 5 * 11
    monkeypatch.setitem(FEEDFORWARDS, "gated", WideGated)
    monkeypatch.setitem(registry.ATTENTIONS, "standard", Unsplittable)
    after = activation_bytes(GATED, 1, 5, "float32")["per_block"]
    assert (after["feedforward"], after["attention"]) == (5 * 7, 5 * 11)  # per token, times b n = 5
    assert after["norms"] == before["norms"] and after["linear_inputs"] == before["linear_inputs"]


def test_a_split_is_refused_by_the_attention_that_cannot_be_split(monkeypatch):
    check_split(GATED, Split(tensor=2))  # standard attention: heads split
    monkeypatch.setitem(registry.ATTENTIONS, "standard", Unsplittable)
    check_split(GATED, Split(pipeline=2))  # no tensor parallelism: nothing to refuse
    with pytest.raises(SpecError, match="--tensor-parallel 2: .*'s test attention is not split"):
        check_split(GATED, Split(tensor=2))
