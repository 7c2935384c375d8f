"""MiMo-V2-Flash's pieces: value heads of their own size in standard attention (v_m), the values scaled
(value_scale), and its sliding blocks' own key/value heads and sinks (local_G, local_sinks). Against transformers:
hf_models_experts' mimo_v2_flash variants; here each against a model it must equal (zero-padded values, a scaled
W_V), the sliding blocks' specs and tensors, the cache's bytes, and the keys' checks."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import SpecError, spec_from_mapping
from transformer_cli.components.attention import MultiHeadAttention
from transformer_cli.components.tensors import all_tensors
from transformer_cli.model.transformer import Transformer
from transformer_cli.spec.stacks import decoder

BASE = dict(N=2, H=4, G=2, m=4, d=8, r=16, V=11, mask="causal", positional="rope", rope_theta=10.0, norm="pre")
IDS = np.random.default_rng(7).integers(0, 11, size=(2, 9))


def _padded(w: dict, pad: float = 0.0) -> dict:
    """v_m = 2 values padded to m = 4: W_V's two more rows, W_O's two more columns (zero: the same model)."""
    out, rng = dict(w), np.random.default_rng(0)
    for i in range(2):
        p = f"blocks.{i}.attention."
        W_V, W_O = w[p + "W_V"], w[p + "W_O"]
        out[p + "W_V"] = np.concatenate([W_V, pad * rng.standard_normal((2, 2, 8))], axis=1)
        out[p + "W_O"] = np.concatenate([W_O, pad * rng.standard_normal((4, 8, 2))], axis=2)
    return out


def test_values_of_their_own_size_are_values_padded_with_zeros():
    narrow = spec_from_mapping(BASE | {"v_m": 2}, "s")
    w = random_weights(narrow, 1)
    ours = Transformer(narrow, w).forward(IDS)
    wide = spec_from_mapping(BASE, "s")
    assert np.allclose(ours, Transformer(wide, _padded(w)).forward(IDS), rtol=0, atol=1e-12)
    assert not np.allclose(ours, Transformer(wide, _padded(w, 0.5)).forward(IDS), rtol=0, atol=1e-3)  # (control)
    assert MultiHeadAttention(narrow).cache_per_token(8, 0) == 2 * (4 + 2) * 8  # G keys of m, G values of v_m


def test_scaled_values_are_a_scaled_w_v():
    spec = spec_from_mapping(BASE | {"value_scale": 0.5}, "s")
    w = random_weights(spec, 2)
    scaled = w | {f"blocks.{i}.attention.W_V": 0.5 * w[f"blocks.{i}.attention.W_V"] for i in range(2)}
    plain = spec_from_mapping(BASE, "s")
    ours = Transformer(spec, w).forward(IDS)
    assert np.allclose(ours, Transformer(plain, scaled).forward(IDS), rtol=0, atol=1e-12)
    assert not np.allclose(ours, Transformer(plain, w).forward(IDS), rtol=0, atol=1e-3)


def test_the_sliding_blocks_have_their_own_key_value_heads_and_sinks():
    keys = {"window": 3, "attention_layers": ["full", "sliding"], "G": 1, "local_G": 2, "local_sinks": True}
    spec = spec_from_mapping(BASE | keys, "s")
    full, sliding = decoder(spec).layer(0), decoder(spec).layer(1)
    assert (full.kv_heads, full.attn_sinks, sliding.kv_heads, sliding.attn_sinks) == (1, False, 2, True)
    shapes = {t.name: t.shape for t in all_tensors(spec)}
    assert shapes["blocks.0.attention.W_K"] == (1, 4, 8) and shapes["blocks.1.attention.W_K"] == (2, 4, 8)
    assert "blocks.1.attention.sinks" in shapes and "blocks.0.attention.sinks" not in shapes


@pytest.mark.parametrize(
    "keys, words",
    [
        ({"local_G": 2}, "no local_G without attention_layers"),
        ({"local_sinks": True}, "no local_sinks without attention_layers"),
        ({"local_G": 3, "window": 3, "attention_layers": ["full", "sliding"]}, "'local_G'.*a divisor of H = 4"),
        ({"attention": "latent", "kv_rank": 4, "rope_m": 2, "G": None, "value_scale": 0.5}, None),
    ],
)
def test_what_the_keys_need_is_one_line_naming_the_key(keys, words):
    data = {k: v for k, v in (BASE | keys).items() if v is not None}
    if words is None:  # (latent attention takes a value scale too: no refusal)
        spec_from_mapping(data, "s.yaml")
        return
    with pytest.raises(SpecError, match=words):
        spec_from_mapping(data, "s.yaml")


def test_verify_knows_which_blocks_have_sinks():
    """The softmax check reads each block's sinks (a sliding block's columns sum to less than 1, a full one's to 1):
    with the stack's alone it failed on the sliding blocks."""
    from transformer_cli import make_setup
    from transformer_cli.verify import check_softmax

    keys = {"window": 3, "attention_layers": ["full", "sliding"], "G": 1, "local_G": 2, "local_sinks": True}
    spec = spec_from_mapping(BASE | keys, "s")
    result = check_softmax(make_setup(spec, random_weights(spec, 3), 3, "float64", None, None))
    assert result.observed is True and "sinks" in result.reason, result.rows
