"""Gemma 4's pieces: heads of their own size on the full blocks (full_m), values normalised per head (v_norm), each
block's output times its own number (layer_scale) and the proportional rope (rope_pairing: proportional). Against
transformers: hf_models_dense's gemma4_text variants; here each against a model it must equal (single blocks
composed, permuted heads under another base), and the keys' checks."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import SpecError, count_params, spec_from_mapping
from transformer_cli.components.attention import MultiHeadAttention
from transformer_cli.model.transformer import Transformer

# no vocabulary and no norms: a model of columns to columns, so that blocks compose
BASE = dict(N=2, H=2, G=1, m=4, d=8, r=12, mask="causal", positional="rope", rope_theta=10.0, norm="none")
X = np.random.default_rng(5).standard_normal((2, 8, 9))


def _block(w: dict, i: int) -> dict:
    """Block i's tensors as block 0's of a model of one block."""
    return {name.replace(f"blocks.{i}.", "blocks.0.", 1): a for name, a in w.items() if name.startswith(f"blocks.{i}.")}


def test_the_full_blocks_heads_are_of_full_m():
    """A sliding block of heads of 4 then a full one of heads of 8: the two single-block models composed."""
    keys = {"window": 3, "attention_layers": ["sliding", "full"], "full_m": 8}
    spec = spec_from_mapping(BASE | keys, "s")
    w = random_weights(spec, 1)
    assert w["blocks.0.attention.W_Q"].shape == (2, 4, 8) and w["blocks.1.attention.W_Q"].shape == (2, 8, 8)
    sliding = Transformer(spec_from_mapping(BASE | {"N": 1, "window": 3}, "s"), _block(w, 0))
    full = Transformer(spec_from_mapping(BASE | {"N": 1, "m": 8}, "s"), _block(w, 1))
    ours = Transformer(spec, w).forward(X)
    assert np.allclose(ours, full.forward(sliding.forward(X)), rtol=0, atol=1e-12)
    plain = count_params(spec_from_mapping(BASE | keys | {"full_m": 4}, "s")).total
    assert count_params(spec).total - plain == (2 * 2 + 2 * 1) * 4 * 8  # the full block's W_Q, W_O (H), W_K, W_V (G)
    cache = MultiHeadAttention(spec_from_mapping(BASE | {"N": 1, "m": 8}, "s")).cache_per_token(8, 0)
    assert cache == 2 * 1 * 8 * 8  # (the full block's: G keys and values of 8)


def test_each_blocks_output_is_times_its_layer_scale():
    spec = spec_from_mapping(BASE | {"layer_scale": True}, "s")
    w = random_weights(spec, 2)
    scales = [float(w[f"blocks.{i}.scale"][0]) for i in range(2)]
    assert all(abs(s - 1) > 1e-3 for s in scales)
    one = spec_from_mapping(BASE | {"N": 1}, "s")
    first, second = Transformer(one, _block(w, 0)), Transformer(one, _block(w, 1))
    expected = scales[1] * second.forward(scales[0] * first.forward(X))
    assert np.allclose(Transformer(spec, w).forward(X), expected, rtol=0, atol=1e-12)
    assert count_params(spec).total == count_params(spec_from_mapping(BASE, "s")).total  # (buffers, not parameters)


def test_values_are_normalised_per_head_without_a_gain():
    spec = spec_from_mapping(BASE | {"v_norm": True}, "s")
    w = random_weights(spec, 3)
    plain = spec_from_mapping(BASE, "s")
    attention, reference = MultiHeadAttention(spec), MultiHeadAttention(plain)
    get = lambda name: w[f"blocks.0.{name}"]  # noqa: E731
    columns = X.transpose(1, 0, 2)  # (d, b, n)
    V = attention.qkv(attention.prepare(get), columns)[2]
    raw = reference.qkv(reference.prepare(get), columns)[2]
    expected = raw / np.sqrt((raw**2).mean(axis=2, keepdims=True) + spec.norm_eps)
    assert np.allclose(V, expected, rtol=0, atol=1e-12)
    assert not np.allclose(Transformer(spec, w).forward(X), Transformer(plain, w).forward(X), atol=1e-3)


def test_proportional_pairs_are_half_pairs_of_permuted_heads_under_another_base():
    """rot = 4 of m = 8: pairs (0, 4), (1, 5) at theta^(-2j/8) are half's pairs (0, 2), (1, 3) at
    (theta^(4/8))^(-2j/4) once each query and key head's rows are put in the order 0, 1, 4, 5, 2, 3, 6, 7."""
    keys = dict(m=8, rope_fraction=0.5, rope_theta=100.0)
    spec = spec_from_mapping(BASE | keys | {"rope_pairing": "proportional"}, "s")
    half = spec_from_mapping(BASE | keys | {"rope_theta": 10.0}, "s")  # 100^(4/8)
    w = random_weights(spec, 4)
    order = [0, 1, 4, 5, 2, 3, 6, 7]
    permuted = dict(w)
    for i in range(2):
        for name in ("W_Q", "W_K"):
            permuted[f"blocks.{i}.attention.{name}"] = w[f"blocks.{i}.attention.{name}"][:, order]
        if f"blocks.{i}.attention.b_Q" in w:
            for name in ("b_Q", "b_K"):
                permuted[f"blocks.{i}.attention.{name}"] = w[f"blocks.{i}.attention.{name}"][:, order]
    ours = Transformer(spec, w).forward(X)
    assert np.allclose(ours, Transformer(half, permuted).forward(X), rtol=0, atol=1e-12)
    assert not np.allclose(ours, Transformer(half, w).forward(X), atol=1e-3)  # (control: pairs of their own)


def test_values_from_the_keys_are_a_w_v_equal_to_w_k_on_the_full_blocks():
    """v_from_k: no W_V, the values the keys' projection before its norm and rotation; the same as W_V = W_K
    without it (the keys' norm and rotation left out of the values), on the full blocks only."""
    keys = {
        "window": 3,
        "attention_layers": ["sliding", "full"],
        "qk_norm": True,
        "norm": "pre",
        "norm_type": "rmsnorm",
    }
    spec = spec_from_mapping(BASE | keys | {"v_from_k": True}, "s")
    w = random_weights(spec, 6)
    assert "blocks.1.attention.W_V" not in w and "blocks.0.attention.W_V" in w
    copied = w | {"blocks.1.attention.W_V": w["blocks.1.attention.W_K"]}
    ours = Transformer(spec, w).forward(X)
    assert np.allclose(ours, Transformer(spec_from_mapping(BASE | keys, "s"), copied).forward(X), rtol=0, atol=1e-12)
    other = copied | {"blocks.1.attention.W_V": w["blocks.0.attention.W_V"]}
    assert not np.allclose(ours, Transformer(spec_from_mapping(BASE | keys, "s"), other).forward(X), atol=1e-3)
    plain = count_params(spec_from_mapping(BASE | keys, "s")).total
    assert plain - count_params(spec).total == 1 * 4 * 8  # the full block's W_V (G m d)


def test_gemma4s_mixture_is_its_mlp_and_experts_each_through_its_norms():
    """expert_norms, column by column: post1(mlp(pre(x))) + post2(sum_k w_k s_e expert_e(pre2(x))), the weights the
    softmax over the top k of W_r (RMS(x) s_r / sqrt(d)), renormalised; the block itself without a norm2."""
    keys = dict(N=1, norm="sandwich", norm_type="rmsnorm", E=3, k=2, expert_r=5, shared_r=12, feedforward="gated")
    spec = spec_from_mapping(BASE | keys | {"activation": "silu", "ff_bias": False, "expert_norms": True}, "s")
    w = random_weights(spec, 7)
    assert "blocks.0.norm2.gamma" not in w and "blocks.0.ff.shared_norm.gamma" in w
    from transformer_cli.components.experts import block_feedforward

    ff = block_feedforward(spec)
    get = lambda name: w[f"blocks.0.{name}"]  # noqa: E731
    cols = np.random.default_rng(1).standard_normal((8, 1, 30))
    ours = ff.apply(ff.prepare(get), cols)[:, 0]

    def rms(x, g=1.0):
        return x / np.sqrt((x**2).mean() + spec.norm_eps) * g

    def mlp(W1, W3, W2, x):
        a = W1 @ x
        return W2 @ (a / (1 + np.exp(-a)) * (W3 @ x))

    expected = np.empty_like(ours)
    for t in range(cols.shape[-1]):
        x = cols[:, 0, t]
        dense = rms(
            mlp(get("ff.shared.W1"), get("ff.shared.W3"), get("ff.shared.W2"), rms(x, get("ff.shared_norm.gamma"))),
            get("ff.shared_norm_out.gamma"),
        )
        logits = get("ff.router") @ (rms(x) * get("ff.router_scale") / np.sqrt(8))
        p = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        top = np.argsort(-p)[:2]
        u = rms(x, get("ff.routed_norm.gamma"))
        mixed = sum(
            p[e] / p[top].sum() * get("ff.expert_scale")[e] * mlp(get("ff.W1")[e], get("ff.W3")[e], get("ff.W2")[e], u)
            for e in top
        )
        expected[:, t] = dense + rms(mixed, get("ff.routed_norm_out.gamma"))
    assert np.allclose(ours, expected, rtol=0, atol=1e-12)
    plain = count_params(spec_from_mapping(BASE | keys | {"activation": "silu", "ff_bias": False}, "s")).total
    assert count_params(spec).total - plain == 3 * 8 + 8 + 3  # 4 norms for the block's norm2, the router's scales


def test_per_layer_inputs_are_recomputed_token_by_token():
    """ple_dim: each token's N vectors of P from its id's column of per_layer.E and the scaled embedding's
    projection, block i adding norm(W_proj (act(W_gate x) * ple_i)) after its feedforward; a model of one block
    with V, so the composition is checked on the block's output (the final norm and head left to the model)."""
    keys = dict(N=2, V=11, norm="pre", norm_type="rmsnorm", embed_scale="sqrt", activation="silu", ple_dim=3)
    spec = spec_from_mapping(BASE | keys | {"ple_vocab": 13}, "s")
    w = random_weights(spec, 8)
    assert w["per_layer.E"].shape == (2 * 3, 13) and spec.input_width == 8 + 2 * 3
    model = Transformer(spec, w)
    ids = np.array([[3, 10, 7, 0, 5]])
    Z, _ = model.columns(ids)
    _, ple = model.per_layer.split(Z)

    def rms(x, g=1.0):
        return x / np.sqrt((x**2).mean(axis=0, keepdims=True) + spec.norm_eps) * g

    x0 = w["embedding.E"][:, ids[0]] * np.sqrt(8)  # (d, n)
    proj = (w["per_layer.W"] @ x0 / np.sqrt(8)).reshape(2, 3, -1)
    tokens = w["per_layer.E"][:, ids[0]].reshape(2, 3, -1) * np.sqrt(3)
    expected = (np.stack([rms(p, w["per_layer.norm.gamma"][:, None]) for p in proj]) + tokens) / np.sqrt(2)
    assert np.allclose(ple[:, :, 0], expected, rtol=0, atol=1e-12)
    x = np.random.default_rng(2).standard_normal((8, 1, 5))
    before = x.copy()
    model.per_layer.add(1, x, ple[1])
    gate = w["blocks.1.per_layer.W_gate"] @ before[:, 0]
    added = w["blocks.1.per_layer.W_proj"] @ (gate / (1 + np.exp(-gate)) * ple[1][:, 0])
    assert np.allclose(x[:, 0], before[:, 0] + rms(added, w["blocks.1.per_layer.norm.gamma"][:, None]), atol=1e-12)
    plain = spec_from_mapping({k: v for k, v in (BASE | keys).items() if k != "ple_dim"}, "s")
    assert count_params(spec).total - count_params(plain).total == (13 * 6 + 6 * 8 + 3 + 2 * (2 * 8 * 3 + 8))


def test_a_block_of_kv_shared_attends_to_the_earlier_blocks_keys_and_values():
    """kv_shared: 1 of 2 blocks: block 1's queries (its own W_Q of its own input) attend causally to block 0's keys
    and values (block 0's W_K, W_V of block 0's input); it has no W_K, W_V or cache, and its feedforward is 2r."""
    from transformer_cli.components.attention import MultiHeadAttention

    base = {k: v for k, v in BASE.items() if k != "rope_theta"} | dict(positional="none", scale="sqrt")
    spec = spec_from_mapping(base | dict(kv_shared=1, kv_shared_r=24, attention_bias=False), "s")
    w = random_weights(spec, 9)
    assert "blocks.1.attention.W_K" not in w and w["blocks.1.ff.W1"].shape == (24, 8)
    model = Transformer(spec, w)
    x = X[:1].transpose(1, 0, 2)  # (d, 1, n)
    taps: dict = {}
    model.run(x.copy(), taps=lambda i, kind, Z: taps.setdefault((i, kind), Z.copy()))
    Q0, K0, V0 = model.qkv(0, x)  # block 0's input is the model's (no norms)
    X1 = taps[(0, "block")]
    Q1 = np.einsum("hmd,dbn->bhmn", w["blocks.1.attention.W_Q"], X1)
    K, V = np.repeat(K0, 2, axis=1), np.repeat(V0, 2, axis=1)  # (G = 1 for H = 2)
    S = np.einsum("bhms,bhmt->bhst", K, Q1) / 2.0
    S = np.where(np.arange(9)[:, None] > np.arange(9)[None, :], -np.inf, S)
    A = np.exp(S - S.max(axis=2, keepdims=True))
    A /= A.sum(axis=2, keepdims=True)
    heads = np.einsum("bhms,bhst->bhmt", V, A)
    expected = np.einsum("hdm,bhmt->dbt", w["blocks.1.attention.W_O"], heads)
    assert np.allclose(taps[(1, "attention")], expected, rtol=0, atol=1e-12)
    assert MultiHeadAttention(spec).cache_per_token(8, 0) > 0 and model.layers[1][0].cache(1, 9, np.float64) is None
    plain = count_params(spec_from_mapping(base | {"attention_bias": False}, "s"))
    assert count_params(spec).total - plain.total == 2 * 12 * 8 + 12 - 2 * 1 * 4 * 8  # a feedforward of 2r; no W_K, W_V


@pytest.mark.parametrize(
    ("keys", "named", "expected"),
    [
        ({"full_m": 8}, "full_m", "no full_m without attention_layers"),
        ({"v_from_k": True, "v_m": 2}, "v_from_k", "values of the keys' size m = 4"),
        ({"E": 2, "k": 1, "expert_norms": True, "norm": "pre"}, "expert_norms", "shared_r"),
        ({"kv_shared": 2}, "kv_shared", "below N = 2"),
        ({"kv_reused": True}, "kv_reused", "no kv_reused by hand"),
        ({"kv_shared_r": 4}, "kv_shared_r", "without kv_shared"),
        ({"window": 3, "attention_layers": ["full", "sliding"], "kv_shared": 1}, "kv_shared", "of each sharing"),
        ({"attention": "latent", "kv_rank": 4, "rope_m": 2, "v_norm": True, "G": None}, "v_norm", "latent"),
        (
            {"attention": "latent", "kv_rank": 4, "rope_m": 2, "G": None, "rope_pairing": "proportional"},
            "rope_pairing",
            "latent",
        ),
    ],
)
def test_the_keys_are_refused_where_they_do_not_fit(keys, named, expected):
    data = {k: v for k, v in (BASE | keys).items() if v is not None}
    with pytest.raises(SpecError) as info:
        spec_from_mapping(data, "s.yaml")
    assert f"'{named}'" in str(info.value) and expected in str(info.value) and "\n" not in str(info.value)
