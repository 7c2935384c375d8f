"""An encoder-decoder whose stacks differ (T5Gemma's): the encoder's own keys (`encoder`), grouped cross-attention keys
and values of the encoder's width (`cross_G`), and the sandwich around cross-attention. Against transformers:
tests/formats/test_hf_t5gemma.py; here each against a model it must equal, and the keys' one-line errors."""

from __future__ import annotations

import jsonschema
import numpy as np
import pytest
from conftest import random_weights

from transformer_cli import SpecError, count_params, spec_from_mapping
from transformer_cli.model.encoder_decoder import EncoderDecoder
from transformer_cli.model.transformer import Transformer
from transformer_cli.spec.schema import spec_schema

BASE = dict(N=2, N_enc=2, H=4, m=4, d=16, r=24, V=20, V_src=30, mask="causal", norm="pre", norm_type="rmsnorm")
BASE |= dict(positional="rope", feedforward="gated", activation="gelu", ff_bias=False)
WIDE = {"d": 24, "H": 6, "G": 3, "r": 32, "window": 3, "attention_layers": ["sliding", "full"]}
SRC = np.random.default_rng(1).integers(0, 30, size=(2, 7))
TGT = np.random.default_rng(2).integers(0, 20, size=(2, 5))


def test_the_encoder_is_a_stack_of_its_own_keys():
    """The encoder's output equals a one-stack model written with the encoder's keys, on the same weights."""
    spec = spec_from_mapping(BASE | {"encoder": WIDE}, "s")
    w = random_weights(spec, 3)
    assert w["encoder.0.attention.W_K"].shape == (3, 4, 24) and w["blocks.0.cross.W_K"].shape == (4, 4, 24)
    alone = spec_from_mapping(
        {k: v for k, v in BASE.items() if k not in ("N_enc", "V_src")} | WIDE | {"V": 30, "mask": "none"}, "s"
    )
    renamed = {
        name.replace("encoder.", "blocks.", 1).replace("encoder_embedding.", "embedding.").replace("encoder_", ""): a
        for name, a in w.items()
        if name.startswith("encoder")
    }
    ours = EncoderDecoder(spec, w).encode(SRC)
    theirs = Transformer(spec_from_mapping(alone.to_dict() | {"head": False}, "s"), renamed).forward(SRC)  # (columns)
    assert np.allclose(ours, theirs, rtol=0, atol=1e-12)
    same = spec_from_mapping(BASE | {"encoder": WIDE | {"window": 5}}, "s")  # (a wider band: other outputs)
    assert not np.allclose(EncoderDecoder(same, w).encode(SRC), ours, rtol=0, atol=1e-6)


def test_grouped_cross_keys_equal_each_head_its_own_copy():
    """cross_G = 2 of 4 heads equals 4 heads whose W_K, W_V repeat each group's (and differs from a model whose
    copies are not repeated)."""
    grouped = spec_from_mapping(BASE | {"encoder": WIDE, "cross_G": 2}, "s")
    w = random_weights(grouped, 4)
    assert count_params(grouped).total < count_params(spec_from_mapping(BASE | {"encoder": WIDE}, "s")).total
    full = spec_from_mapping(BASE | {"encoder": WIDE}, "s")
    repeated = dict(w)
    for i in range(2):
        for x in ("W_K", "W_V"):
            repeated[f"blocks.{i}.cross.{x}"] = np.repeat(w[f"blocks.{i}.cross.{x}"], 2, axis=0)
    ours = EncoderDecoder(grouped, w)(SRC, TGT)
    assert np.allclose(ours, EncoderDecoder(full, repeated)(SRC, TGT), rtol=0, atol=1e-12)
    tiled = dict(repeated)
    for i in range(2):
        for x in ("W_K", "W_V"):
            tiled[f"blocks.{i}.cross.{x}"] = np.tile(w[f"blocks.{i}.cross.{x}"], (2, 1, 1))  # (groups misassigned)
    assert not np.allclose(ours, EncoderDecoder(full, tiled)(SRC, TGT), rtol=0, atol=1e-6)


def test_the_sandwich_normalises_cross_attentions_output():
    """norm: sandwich in an encoder-decoder: cross_norm before the cross-attention and cross_norm_out on its output.
    A gain of c on cross_norm_out is the same as c on the cross-attention's W_O (an RMSNorm's output scales with its
    gain), and a plain pre-norm spec (no output norm) gives other logits."""
    spec = spec_from_mapping(BASE | {"norm": "sandwich"}, "s")
    w = random_weights(spec, 5)
    assert w["blocks.0.cross_norm_out.gamma"].shape == (16,)
    ours = EncoderDecoder(spec, w)(SRC, TGT)
    doubled = dict(w) | {"blocks.1.cross_norm_out.gamma": 2 * w["blocks.1.cross_norm_out.gamma"]}
    assert not np.allclose(EncoderDecoder(spec, doubled)(SRC, TGT), ours, rtol=0, atol=1e-6)
    pre = spec_from_mapping(BASE, "s")
    kept = {k: a for k, a in w.items() if "_out" not in k}
    assert not np.allclose(EncoderDecoder(pre, kept)(SRC, TGT), ours, rtol=0, atol=1e-6)
    assert count_params(spec).total - count_params(pre).total == 2 * 3 * 16 + 2 * 2 * 16  # (decoder's, encoder's)


def test_an_encoders_window_is_a_band_both_ways():
    """One encoder block of window 2 (|s - t| < 2): moving source column 5 moves encoder columns 4, 5, 6 alone; the
    decoder's window of 2 stays causal (keys t - 1 .. t)."""
    spec = spec_from_mapping(BASE | {"N_enc": 1, "window": 2, "V_src": 30}, "s")
    w = random_weights(spec, 6)
    model = EncoderDecoder(spec, w)
    moved = SRC.copy()
    moved[:, 5] = (moved[:, 5] + 1) % 30
    changed = np.abs(model.encode(moved) - model.encode(SRC)).max(axis=(0, 1)) > 1e-12
    assert changed.tolist() == [False, False, False, False, True, True, True]


BAD = [
    ({"encoder": {"d": 24}}, "key 'encoder.d': got 24, expected d = 16 unless the source has its own embedding"),
    ({"encoder": {"d": -1}}, "key 'encoder.d': got -1, expected a positive integer"),
    ({"encoder": {"mask": "none"}}, "key 'encoder': got {'mask': 'none'}, expected a mapping of some of d, H, G"),
    ({"encoder": {"G": 4, "H": 6}}, "key 'encoder.G': got 4, expected a divisor of the encoder's H = 6"),
    ({"cross_G": 3}, "key 'cross_G': got 3, expected a divisor of the 4 cross-attention heads"),
    ({"encoder": {"attention_layers": ["sliding"]}}, "key 'encoder.attention_layers': got ['sliding'], expected"),
    ({"encoder": {}}, "key 'encoder': got {}, expected a mapping of some of"),
]


@pytest.mark.parametrize("keys, message", BAD)
def test_bad_encoder_keys_are_refused_in_one_line(keys, message):
    base = {k: v for k, v in BASE.items() if not (k == "V_src" and "encoder" in keys)}
    with pytest.raises(SpecError) as raised:
        spec_from_mapping(base | keys, "s.yaml")
    assert str(raised.value).startswith("s.yaml: ") and message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_encoder_keys_need_an_encoder():
    one = {k: v for k, v in BASE.items() if k not in ("N_enc", "V_src")}
    for keys in ({"encoder": {"d": 8}}, {"cross_G": 2}):
        with pytest.raises(SpecError, match="unless the spec has an encoder"):
            spec_from_mapping(one | keys, "s")


def test_the_schema_takes_the_encoder_keys_the_loader_takes():
    validator = jsonschema.Draft202012Validator(spec_schema())
    good = BASE | {"encoder": WIDE, "cross_G": 2}
    spec_from_mapping(good, "s")
    validator.validate(good)
    for bad in ({"encoder": {"mask": "none"}}, {"encoder": {"d": 0}}, {"encoder": {}}):
        assert not validator.is_valid(BASE | bad)
    assert spec_from_mapping(good, "s").to_dict()["encoder"] == WIDE  # (written back as the mapping it was)
