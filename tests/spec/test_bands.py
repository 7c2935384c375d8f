"""ModernBERT's pieces: an unmasked sliding window (query t sees keys s with |s - t| < w, a band) and
first_attn_norm: false (block 0 without a norm before its attention). Against transformers: hf_models_dense's
modernbert variants; here the band against a dense NumPy softmax, its chunks, verify's theory (a band breaks
permutation equivariance, a band of one does not), block 0's tensors, count and modes, and the decoder's head
transform against a NumPy reading of ModernBertDecoderPredictionHead."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import SpecError, kernels, spec_from_mapping
from transformer_cli.analysis.params import count_params
from transformer_cli.cli import app
from transformer_cli.components.tensors import all_tensors
from transformer_cli.model.transformer import Transformer

BASE = dict(N=3, H=2, m=4, d=8, r=16, V=11, positional="rope", rope_theta=10.0, norm="pre", scale="sqrt")


def _dense(Q, K, V, w):
    """Each head's softmax over the keys within w - 1 of the query, either way, computed whole."""
    n = Q.shape[-1]
    lag = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    S = np.einsum("bhmq,bhmk->bhqk", Q, K) + np.where(lag < w, 0.0, -np.inf)
    A = np.exp(S - S.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    return np.einsum("bhqk,bhmk->hmbq", A, V)


@pytest.mark.parametrize("chunk_bytes", [kernels.CHUNK_BYTES, 64])
def test_the_band_is_a_dense_softmax_over_the_keys_within_w(chunk_bytes):
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((2, 3, 4, 23)) for _ in range(3))
    ours = kernels.attend(Q, K, V, kernels.Attend(window=4, chunk_bytes=chunk_bytes))
    assert np.allclose(ours, _dense(Q, K, V, 4), rtol=0, atol=1e-12)
    assert not np.allclose(ours, _dense(Q, K, V, 23), rtol=0, atol=1e-3)  # (the control: every key)


@pytest.mark.parametrize("window, verdict", [(3, "breaks"), (1, "holds")])
def test_verify_predicts_a_band_breaks_equivariance_and_a_band_of_one_does_not(tmp_path, runner, window, verdict):
    keys = {k: v for k, v in BASE.items() if k not in ("positional", "rope_theta")} | {"window": window}
    (tmp_path / "s.yaml").write_text("\n".join(f"{k}: {v}" for k, v in keys.items()))
    result = runner.invoke(app, ["verify-equivariance", str(tmp_path / "s.yaml"), "--json"])
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and (report["predicted"], report["observed"]) == (verdict, verdict), report


def test_block_0_has_no_norm_before_its_attention_and_counts_two_d_fewer():
    spec = spec_from_mapping(BASE | {"first_attn_norm": False}, "s")
    names = {t.name for t in all_tensors(spec)}
    assert "blocks.0.norm1.gamma" not in names and {"blocks.0.norm2.gamma", "blocks.1.norm1.gamma"} <= names
    plain = spec_from_mapping(BASE, "s")
    assert count_params(plain).total - count_params(spec).total == 2 * 8


@pytest.mark.parametrize("keep", [None, 1])
def test_block_0_reads_its_input_as_it_is(keep):
    """Block 0's attention reads the embedded columns unnormalised: a model whose block 0 normalises them first
    differs, and the modes that make blocks just in time agree."""
    spec = spec_from_mapping(BASE | {"first_attn_norm": False}, "s")
    w = random_weights(spec, 1)
    ids = np.arange(9)[None] % 11
    ours = Transformer(spec, w, keep_blocks=keep).forward(ids)
    assert np.allclose(ours, Transformer(spec, w).forward(ids), rtol=0, atol=1e-13)
    normed = w | {"blocks.0.norm1.gamma": np.ones(8), "blocks.0.norm1.beta": np.zeros(8)}
    other = Transformer(spec_from_mapping(BASE, "s"), normed).forward(ids)
    assert not np.allclose(ours, other, rtol=0, atol=1e-3)


def test_no_first_norm_outside_a_pre_norm_stack_is_one_line_naming_the_key():
    with pytest.raises(SpecError, match="'first_attn_norm'.*norm: pre"):
        spec_from_mapping(BASE | {"first_attn_norm": False, "norm": "post"}, "s.yaml")


def test_the_head_transform_is_norm_of_act_of_w_t_x_plus_b_t_before_the_head():
    spec = spec_from_mapping(BASE | {"mask": "causal", "head_transform": "affine", "activation": "gelu"}, "s")
    w = random_weights(spec, 2)
    ids = np.arange(7)[None] % 11
    model = Transformer(spec, w)
    X = model.forward(ids, last=spec.N - 1)[0]  # (d, n): the last block's columns
    X = model.norm.apply(X[:, None], model.final_norm)[:, 0]
    Y = w["head.W_t"] @ X + w["head.b_t"][:, None]
    Y = kernels.ACTIVATIONS["gelu"](Y)
    Y = (Y - Y.mean(0)) / np.sqrt(Y.var(0) + spec.norm_eps) * w["head.norm.gamma"][:, None]
    logits = w["head.W"] @ (Y + w["head.norm.beta"][:, None])
    assert np.allclose(model.forward(ids)[0], logits, rtol=0, atol=1e-12)
    assert count_params(spec).total - count_params(spec_from_mapping(BASE | {"mask": "causal"}, "s")).total == (
        8 * 8 + 3 * 8
    )


def test_a_head_transform_without_a_head_is_one_line_naming_the_key():
    with pytest.raises(SpecError, match="'head_transform'.*a head"):
        spec_from_mapping(BASE | {"head_transform": "linear", "head": False}, "s.yaml")
