"""Encoder-decoders, continued: the properties verify finds, their FLOPs, memory and attention maps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import matmul_count

from transformer_cli import Spec, SpecError, count_params, load_spec
from transformer_cli.cli import app
from transformer_cli.components.tensors import all_tensors
from transformer_cli.spec.validate import spec_from_mapping

ROOT = Path(__file__).parents[2]
AIAYN = ROOT / "examples" / "encoder-decoder" / "attention-is-all-you-need-transformer-base.yaml"


# -- the properties (verify) --------------------------------------------------------------------------------


def _small(path: Path) -> dict:
    """A preset's keys at a small size (the same kind of model, quick to verify)."""
    small = {"N": 2, "N_enc": 2, "H": 2, "m": 4, "d": 8, "r": 16, "V": 50}
    keys = load_spec(path).to_dict() | small
    return keys | ({"max_len": 16} if "max_len" in keys else {})


@pytest.mark.parametrize(
    "path",
    [AIAYN, ROOT / "examples" / "models" / "t5-small.yaml", ROOT / "examples" / "models" / "bart-base.yaml"],
    ids=lambda p: p.stem,
)
def test_verify_finds_what_theory_predicts_for_each_encoder_decoder(runner, tmp_path, path):
    """Sinusoidal (original), relative (T5) and learned (BART) positions: every check as predicted, exit 0."""
    import json

    import yaml

    small = tmp_path / "small.yaml"
    small.write_text(yaml.safe_dump(_small(path)))
    result = runner.invoke(app, ["verify", str(small), "-n", "6", "--json"])
    report = json.loads(result.stdout)
    verdicts = {c["check"]: (c["predicted"], c["verdict"]) for c in report["checks"]}
    assert result.exit_code == 0, verdicts
    assert verdicts["memory order"] == ("holds", "PASS") and verdicts["source reach"] == ("holds", "PASS")
    assert verdicts["source order"] == ("breaks", "PASS")  # every one of them has positions in its encoder
    assert verdicts["decoding"] == ("holds", "PASS") and verdicts["causality"] == ("holds", "PASS")


NO_POSITIONS = Spec(N=2, N_enc=2, H=2, m=4, d=8, r=16, mask="causal", norm="pre", scale="sqrt")


def test_without_positions_the_output_ignores_the_source_order_and_a_model_that_sees_them_fails(monkeypatch):
    from transformer_cli.components import cross as model_module
    from transformer_cli.kernels import sinusoidal_positions
    from transformer_cli.verify.encoder_decoder import (
        check_memory_order,
        check_source_order,
        make_encoder_decoder_setup,
    )

    setup = make_encoder_decoder_setup(NO_POSITIONS, None, 0, "float64", 6, None)
    assert check_source_order(setup).verdict == "PASS" and check_source_order(setup).predicted is True
    assert check_memory_order(setup).verdict == "PASS"
    real = model_module.memory_keys

    def positional_keys(cross, M, H):  # a cross-attention that sees the memory's positions: the broken model
        return real(cross, M + sinusoidal_positions(M.shape[0], M.shape[-1])[:, None, :], H)

    monkeypatch.setattr(model_module, "memory_keys", positional_keys)
    broken = make_encoder_decoder_setup(NO_POSITIONS, None, 0, "float64", 6, None)
    assert check_memory_order(broken).verdict == "FAIL" and check_source_order(broken).verdict == "FAIL"


# -- FLOPs and memory ---------------------------------------------------------------------------------------


def test_the_multiply_adds_are_what_the_pass_computes(monkeypatch):
    """Every matrix product of an encoder-decoder's pass counted as it happens (one chunk of scores each, so all
    n_tgt x n_tgt, n_src x n_src and n_tgt x n_src pairs) against costs.multiply_adds with sources and targets of
    different lengths."""
    from transformer_cli import kernels
    from transformer_cli.analysis.flops import multiply_adds
    from transformer_cli.io.weights import init_weights
    from transformer_cli.model.encoder_decoder import EncoderDecoder

    spec = Spec(
        N=2,
        N_enc=3,
        H=2,
        m=4,
        d=8,
        r=12,
        cross_H=3,
        cross_m=5,
        V=11,
        mask="causal",
        norm="pre",
        scale="sqrt",
        attention_bias=True,
        feedforward="gated",
        activation="silu",
    )
    monkeypatch.setattr(kernels, "CAUSAL_CHUNK", 10**9)
    model = EncoderDecoder(spec, init_weights(spec), workers=1)
    done = matmul_count(monkeypatch, lambda: model(np.arange(7).reshape(1, 7) % 11, np.arange(5).reshape(1, 5)))
    assert done == sum(multiply_adds(spec, 1, 5, n_src=7).values())


def test_the_output_heads_products_are_counted_and_a_pooler_adds_none(monkeypatch):
    """Found by the test above: the head's FLOPs were declared on BERT's pooler (never computed), so every model
    with a head lacked its 2 V d FLOPs per token and BERT had them without a head."""
    from transformer_cli.analysis.flops import forward_flops, multiply_adds
    from transformer_cli.io.weights import init_weights
    from transformer_cli.model.transformer import Transformer

    gpt = Spec(N=1, H=2, m=4, d=8, r=12, V=11, tie_embeddings=True, mask="causal", norm="pre")
    bert = Spec(N=1, H=2, m=4, d=8, r=12, V=11, head=False, pooler=True, norm="post")
    assert forward_flops(gpt, 1, 5)["output head"] == 2 * 11 * 8 * 5
    assert "output head" not in forward_flops(bert, 1, 5)
    for spec in (gpt, bert):
        model = Transformer(spec, init_weights(spec), workers=1)
        done = matmul_count(monkeypatch, lambda model=model: model(np.arange(5) % 11))
        assert done == sum(multiply_adds(spec, 1, 5).values())  # n = 5 < 128: one chunk computes all pairs


def test_the_cross_attention_cache_is_two_n_heads_size_and_source_length():
    from transformer_cli.analysis.costs import costs

    spec = load_spec(ROOT / "examples" / "models" / "t5-small.yaml")
    cache = costs(spec, 2, 16, "float32", n_src=1024).to_dict()["memory"]["kv_cache"]["float32"]
    self_attention = 2 * 6 * 8 * 64 * 16 * 2 * 4  # 2 N G m n per sequence, b = 2, 4 bytes
    assert cache == self_attention + 2 * 6 * 8 * 64 * 1024 * 2 * 4  # and 2 N H_c m_c n_src for the source


@pytest.mark.slow
def test_attention_shows_the_decoders_self_and_cross_attention_and_the_encoders(runner, tmp_path):
    import json

    src, tgt = tmp_path / "s.npy", tmp_path / "t.npy"
    np.save(src, np.array([3, 1, 4, 1, 5, 9, 2]))
    np.save(tgt, np.array([2, 7, 1, 8]))

    def maps(kind: str, source: Path = src) -> np.ndarray:
        args = ["attention", str(AIAYN), "-i", str(source), "-t", str(tgt), "--kind", kind, "--block", "0", "--json"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        return np.array([data["weights"][str(h)] for h in range(8)])

    self_, cross, encoder = maps("self"), maps("cross"), maps("encoder")
    assert self_.shape == (8, 4, 4) and cross.shape == (8, 7, 4) and encoder.shape == (8, 7, 7)  # [h, key, query]
    for A in (self_, cross, encoder):
        assert np.allclose(A.sum(axis=1), 1.0, atol=1e-12)  # each query's weights over its keys
    assert np.all(np.tril(self_, -1) == 0)  # causal: a key after its query (k > q) gets exactly 0
    other = tmp_path / "other.npy"
    np.save(other, np.array([8, 8, 2, 7, 1, 3, 3]))
    assert np.array_equal(maps("self", other), self_)  # block 0's self-attention never sees the source
    assert not np.allclose(maps("cross", other), cross)  # its cross-attention does


def test_a_source_vocabulary_of_its_own_is_a_separate_embedding_counted_and_run(runner, tmp_path):
    """V_src: the encoder embeds the source with encoder_embedding.E (d, V_src); the target keeps E (d, V)."""
    import yaml

    keys = {
        "N": 1,
        "N_enc": 1,
        "H": 2,
        "m": 4,
        "d": 8,
        "r": 16,
        "V": 11,
        "V_src": 23,
        "mask": "causal",
        "tie_embeddings": True,
    }
    spec = spec_from_mapping(keys, "x.yaml")
    shared = count_params(Spec(**{**spec.to_dict(), "V_src": None}))
    assert count_params(spec).total == shared.total + 23 * 8
    assert ("encoder_embedding.E", (8, 23)) in [(t.name, t.shape) for t in all_tensors(spec)]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(keys))
    np.save(tmp_path / "src.npy", np.array([22, 0, 15]))  # ids past V = 11 but within V_src = 23
    np.save(tmp_path / "tgt.npy", np.array([1, 2]))
    args = [
        "run",
        str(path),
        "-i",
        str(tmp_path / "src.npy"),
        "-t",
        str(tmp_path / "tgt.npy"),
        "-o",
        str(tmp_path / "y.npy"),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert np.load(tmp_path / "y.npy").shape == (11, 2)
    np.save(tmp_path / "src.npy", np.array([23]))
    result = runner.invoke(app, args + ["-f"])
    assert result.exit_code == 2 and "token id 23 at index (0,), expected 0 .. 22 (V = 23)" in result.stderr
    with pytest.raises(SpecError, match="no V_src unless the spec has an encoder"):
        spec_from_mapping({"N": 1, "H": 2, "m": 4, "d": 8, "r": 16, "V": 11, "V_src": 23}, "y.yaml")
