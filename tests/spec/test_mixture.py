"""A mixture of attention heads (attention: mixture, JetMoE's). Against transformers: hf_models_experts' jetmoe
variants; here the property that experts all alike are one attention of G heads (the gates sum to one), decoding
against the pass, and the keys' checks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import SpecError, spec_from_mapping
from transformer_cli.cli import app
from transformer_cli.model.transformer import Transformer

BASE = dict(N=2, H=4, G=2, m=4, d=8, r=16, V=11, mask="causal", positional="rope", rope_theta=10.0, norm="pre")
MIXED = BASE | {"attention": "mixture", "attn_experts": 3, "attn_k": 2, "out_bias": True}
IDS = np.random.default_rng(4).integers(0, 11, size=(2, 7))


def test_experts_all_alike_are_one_attention_of_g_heads():
    spec = spec_from_mapping(MIXED, "s")
    w = random_weights(spec, 6)
    for i in range(2):  # every expert expert 0
        w[f"blocks.{i}.attention.W_QE"] = np.repeat(w[f"blocks.{i}.attention.W_QE"][:1], 3, axis=0)
        w[f"blocks.{i}.attention.W_OE"] = np.repeat(w[f"blocks.{i}.attention.W_OE"][:1], 3, axis=0)
    plain = spec_from_mapping(BASE | {"H": 2, "out_bias": True}, "s")
    theirs = {k: v for k, v in random_weights(plain, 6).items() if not k.startswith("blocks.")}
    theirs |= {k: w[k] for k in theirs}  # the same embedding, norms
    for i in range(2):
        p = f"blocks.{i}."
        theirs |= {k: v for k, v in w.items() if k.startswith(p) and ".attention." not in k}
        theirs[p + "attention.W_Q"] = w[p + "attention.W_QE"][0].reshape(2, 4, 8)
        theirs[p + "attention.W_O"] = w[p + "attention.W_OE"][0].reshape(8, 2, 4).transpose(1, 0, 2)
        theirs |= {p + f"attention.{x}": w[p + f"attention.{x}"] for x in ("W_K", "W_V", "b_O")}
    ours = Transformer(spec, w).forward(IDS)
    assert np.allclose(ours, Transformer(plain, theirs).forward(IDS), rtol=0, atol=1e-12)
    assert not np.allclose(Transformer(spec, random_weights(spec, 6)).forward(IDS), ours, atol=1e-3)  # (experts)


def test_decoding_equals_the_pass(tmp_path, runner):
    (tmp_path / "s.yaml").write_text("\n".join(f"{k}: {v}" for k, v in MIXED.items()))
    result = runner.invoke(app, ["verify-decoding", str(tmp_path / "s.yaml"), "--json"])
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["observed"] == "holds", report


@pytest.mark.parametrize(
    "keys, words",
    [
        ({"H": 2}, "'H'.*attn_k G = 4"),
        ({"attn_k": 4}, "'attn_k'.*at most attn_experts = 3"),
        ({"qk_norm": True}, "no qk_norm with attention: mixture"),
    ],
)
def test_what_a_mixture_cannot_be_is_one_line_naming_the_key(keys, words):
    with pytest.raises(SpecError, match=words):
        spec_from_mapping(MIXED | keys, "s.yaml")


def test_its_keys_need_the_mixture():
    with pytest.raises(SpecError, match="no attn_experts unless attention is mixture"):
        spec_from_mapping(BASE | {"attn_experts": 3, "attn_k": 2}, "s.yaml")


def test_a_token_uses_attn_k_of_the_experts():
    """Active parameters leave out the E_a - attn_k query and output experts a token did not choose (JetMoE-8B:
    2.33 billion of 8.52, its card's 2.2B active)."""
    from transformer_cli.analysis.params import count_params

    spec = spec_from_mapping(MIXED, "s")
    count = count_params(spec)
    assert count.total - count.active == 2 * (3 - 2) * 2 * (2 * 4 * 8)  # N (E_a - k) (W_QE, W_OE) G m d
