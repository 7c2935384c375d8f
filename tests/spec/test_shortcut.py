"""LongCat-Flash's pieces: zero experts (zero_experts), the routed experts' output joining the stream a block later
(routed_later), and the latent attention's scaled queries and latent (latent_scale). Against transformers:
hf_models_experts' longcat_flash variants; here each against a model it must equal (a per-column recomputation of
the routing, a block made transparent, scaled W_QB and W_KVB), the counts and the keys' checks."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import SpecError, count_params, spec_from_mapping
from transformer_cli.components.experts import block_feedforward
from transformer_cli.model.transformer import Transformer

BASE = dict(N=2, H=2, m=4, d=8, r=12, V=11, mask="causal", positional="rope", rope_theta=10.0, norm="pre")
ROUTED = dict(E=3, k=2, expert_r=5, feedforward="gated", activation="silu", ff_bias=False, norm_type="rmsnorm")
LATER = ROUTED | dict(shared_r=12, feedforward_layers=["routed", "dense"], routed_later=True)
IDS = np.random.default_rng(3).integers(0, 11, size=(2, 9))


def _silu(x):
    return x / (1 + np.exp(-x))


def test_a_zero_expert_gives_its_column_back_times_its_weight():
    """Each column recomputed alone: softmax over the E + Z scores, the top k, each chosen computing expert's
    SwiGLU output or (a zero expert) the column itself, times its softmax weight."""
    spec = spec_from_mapping(BASE | ROUTED | {"N": 1, "zero_experts": 2, "k": 3, "router_renorm": False}, "s")
    w = random_weights(spec, 5)
    ff = block_feedforward(spec)
    prepared = ff.prepare(lambda name: w[f"blocks.0.{name}"])
    X = np.random.default_rng(0).standard_normal((8, 1, 40))
    ours = ff.apply(prepared, X)[:, 0]
    W1, W3, W2, R = (w[f"blocks.0.ff.{n}"] for n in ("W1", "W3", "W2", "router"))
    expected, zero_chosen = np.zeros_like(ours), 0
    for t in range(X.shape[-1]):
        x = X[:, 0, t]
        scores = np.exp(R @ x - (R @ x).max())
        scores /= scores.sum()
        for e in np.argsort(-scores)[:3]:
            y = x if e >= 3 else W2[e] @ (_silu(W1[e] @ x) * (W3[e] @ x))
            expected[:, t] += scores[e] * y
            zero_chosen += e >= 3
    assert np.allclose(ours, expected, rtol=0, atol=1e-12)
    assert zero_chosen > 0  # (else the zero experts' path went untested)
    assert spec.E + spec.zero_experts == w["blocks.0.ff.router"].shape[0]


def test_zero_experts_count_in_the_router_alone():
    plain = count_params(spec_from_mapping(BASE | ROUTED, "s")).total
    zeros = count_params(spec_from_mapping(BASE | ROUTED | {"zero_experts": 4}, "s")).total
    assert zeros - plain == 2 * 4 * 8  # each block's router: 4 more rows of d; the zero experts hold nothing


def _transparent(w: dict, i: int) -> dict:
    """Block i's attention and feedforward output zero: the block passes the stream on as it came."""
    return w | {name: 0 * w[name] for name in (f"blocks.{i}.attention.W_O", f"blocks.{i}.ff.W2")}


def test_routed_later_is_the_routed_output_added_after_the_next_block():
    """With the next block transparent, adding the routed experts' output a block later is adding it at once; with
    the next block's attention reading the stream, the two differ (that block sees the stream without it)."""
    later = spec_from_mapping(BASE | LATER, "s")
    at_once = spec_from_mapping(BASE | LATER | {"routed_later": False}, "s")
    w = random_weights(later, 8)
    ours = Transformer(later, _transparent(w, 1)).forward(IDS)
    assert np.allclose(ours, Transformer(at_once, _transparent(w, 1)).forward(IDS), rtol=0, atol=1e-12)
    assert not np.allclose(Transformer(later, w).forward(IDS), Transformer(at_once, w).forward(IDS), atol=1e-3)


def test_routed_later_decodes_as_the_whole_pass():
    """The routed output held for the next block lives within one pass: a prefill and each step carry their own."""
    from transformer_cli.model.decoding import decode

    spec = spec_from_mapping(BASE | LATER, "s")
    model = Transformer(spec, random_weights(spec, 9))
    whole = model.forward(IDS)
    assert np.allclose(decode(model, IDS, prompt=4), whole, rtol=0, atol=1e-12)
    assert not np.allclose(decode(model, IDS, prompt=4, stale_at=6), whole, rtol=0, atol=1e-3)  # (control)


LATENT = dict(attention="latent", kv_rank=6, q_rank=5, rope_m=2, norm_type="rmsnorm")


def test_latent_scale_is_w_qb_and_w_kvb_scaled():
    """Queries times (d / q_rank)^1/2 and the latent times (d / kv_rank)^1/2: the same as W_QB and W_KVB (the
    latent's keys' and values' projection) scaled, the latent cached as it is."""
    scaled = spec_from_mapping(BASE | LATENT | {"latent_scale": True}, "s")
    plain = spec_from_mapping(BASE | LATENT, "s")
    w = random_weights(scaled, 4)
    folded = dict(w)
    for i in range(2):
        folded[f"blocks.{i}.attention.W_QB"] = w[f"blocks.{i}.attention.W_QB"] * (8 / 5) ** 0.5
        folded[f"blocks.{i}.attention.W_KVB"] = w[f"blocks.{i}.attention.W_KVB"] * (8 / 6) ** 0.5
    ours = Transformer(scaled, w).forward(IDS)
    assert np.allclose(ours, Transformer(plain, folded).forward(IDS), rtol=0, atol=1e-12)
    assert not np.allclose(ours, Transformer(plain, w).forward(IDS), rtol=0, atol=1e-3)


@pytest.mark.parametrize(
    ("keys", "named", "expected"),
    [
        ({"zero_experts": 2}, "zero_experts", "no zero_experts without experts (E)"),
        (ROUTED | {"zero_experts": 1, "k": 5}, "k", "at most E + zero_experts = 4"),
        (ROUTED | {"zero_experts": 1, "router_score": "sigmoid"}, "zero_experts", "router_score: softmax"),
        (ROUTED | {"routed_later": True}, "routed_later", "every routed block is followed by a dense one"),
        (LATER | {"feedforward_layers": ["dense", "routed"]}, "routed_later", "followed by a dense one"),
        (LATENT | {"latent_scale": True, "q_rank": None}, "latent_scale", "q_rank with latent_scale"),
        ({"latent_scale": True}, "latent_scale", "attention"),
    ],
)
def test_the_keys_are_refused_where_they_do_not_fit(keys, named, expected):
    data = {k: v for k, v in (BASE | keys).items() if v is not None}
    with pytest.raises(SpecError) as info:
        spec_from_mapping(data, "s.yaml")
    assert f"'{named}'" in str(info.value) and expected in str(info.value) and "\n" not in str(info.value)
