"""Training FLOPs per token and one decoding step's FLOPs and bytes (issue 14, item 5 in part), against the
matrix products tfm's own passes make, counted as they happen."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import matmul_count

from transformer_cli import Spec, init_weights
from transformer_cli.analysis.decode import decode_step, training_flops_per_token
from transformer_cli.analysis.kv_cache import kv_cache_bytes
from transformer_cli.model import decoding
from transformer_cli.model.transformer import Transformer

SPECS = {
    "gpt-like with a head": Spec(N=2, H=2, m=4, d=8, r=16, V=13, tie_embeddings=True, mask="causal", norm="pre"),
    "grouped-query, rope, window 3": Spec(
        N=2,
        H=4,
        G=2,
        m=4,
        d=8,
        r=12,
        V=11,
        mask="causal",
        positional="rope",
        window=3,
        norm="pre",
        norm_type="rmsnorm",
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    ),
    "experts 2 of 4": Spec(N=1, H=2, m=4, d=8, r=6, V=7, E=4, k=2, mask="causal", norm="pre", ff_bias=False),
}


def _macs_per_step(model: Transformer, ids: np.ndarray, monkeypatch) -> list[int]:
    """The multiply-adds of the products tfm's decoder makes at each step."""
    steps: list[int] = []
    real, real_finish = np.matmul, model.finish
    done = [0]

    def counted(a, b, *args, **kwargs):
        out = real(a, b, *args, **kwargs)
        done[0] += out.size * np.shape(a)[-1]
        return out

    def finish(Z):  # the head closes each step
        out = real_finish(Z)
        steps.append(done[0] - sum(steps))
        return out

    with monkeypatch.context() as patched:
        patched.setattr(np, "matmul", counted)
        patched.setattr(model, "finish", finish)
        decoding.decode(model, ids)
    return steps


@pytest.mark.parametrize("name", SPECS)
def test_a_decoding_step_computes_the_flops_stated(monkeypatch, name):
    spec, n = SPECS[name], 6
    model = Transformer(spec, init_weights(spec), workers=1)
    steps = _macs_per_step(model, np.arange(n) % spec.V, monkeypatch)
    assert [2 * s for s in steps] == [decode_step(spec, t)["flops"] for t in range(1, n + 1)]


def test_a_step_reads_the_weights_it_uses_and_the_cache():
    """The products' weights and the norms' gains, not the (untied) embedding table, of which it needs a row."""
    spec = SPECS["grouped-query, rope, window 3"]
    step = decode_step(spec, 100, "bfloat16")
    products = step["flops"] // 2 - 2 * spec.N * spec.H * spec.m * 3  # the window caps the keys read at 3
    gains = (2 * spec.N + 1) * spec.d  # two norms a block and the final norm
    assert step["bytes"] == 2 * (products + gains) + kv_cache_bytes(spec, 1, 100, "bfloat16")
    assert step["flops_per_byte"] == step["flops"] / step["bytes"]


def test_training_is_three_times_the_forward_products_and_6n_leaves_attention_out(monkeypatch):
    spec, n = SPECS["gpt-like with a head"], 8
    model = Transformer(spec, init_weights(spec), workers=1)
    done = matmul_count(monkeypatch, lambda: model(np.arange(n) % spec.V))  # n < 128: one chunk, every pair
    flops = training_flops_per_token(spec, n)
    assert flops["exact"] == 3 * 2 * done // n
    matrices = 2 * (4 * 2 * 4 * 8 + 2 * 16 * 8) + 13 * 8  # two blocks' attention and feedforward, and the head
    assert flops["six_n_rule"] == 6 * matrices
    assert flops["exact"] > flops["six_n_rule"]  # attention's products come on top
