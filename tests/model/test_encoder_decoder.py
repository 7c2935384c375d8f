"""Encoder-decoder specs (seed 001's second stack): keys, counts and their closed form, and what tfm refuses.

The published counts of T5 and BART are held by test_presets.py (examples/models/); here the original
Transformer's count is derived from the paper's description independently of tfm's components.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_cli import Spec, SpecError, count_params, load_spec
from transformer_cli.cli import app
from transformer_cli.components.tensors import all_tensors
from transformer_cli.spec.validate import spec_from_mapping

ROOT = Path(__file__).parents[2]
AIAYN = ROOT / "examples" / "encoder-decoder" / "attention-is-all-you-need-transformer-base.yaml"


def test_the_original_transformer_counts_what_the_paper_describes():
    """Vaswani et al. 2017, base: N = 6 + 6, d = 512, 8 heads of 64, d_ff = 2048, post-norm (2 layer norms in an
    encoder layer, 3 in a decoder layer), biases on every linear map, one 37000 x 512 embedding shared by both
    stacks and the pre-softmax matrix, sinusoidal positions (no parameters)."""
    d, r, V = 512, 2048, 37000
    attention = 4 * d * d + 4 * d  # W_Q, W_K, W_V, W_O and their biases
    feedforward = 2 * d * r + r + d
    encoder_layer = attention + feedforward + 2 * 2 * d
    decoder_layer = 2 * attention + feedforward + 3 * 2 * d
    assert count_params(load_spec(AIAYN)).total == 6 * encoder_layer + 6 * decoder_layer + V * d == 63_082_496


def test_an_encoder_decoder_lists_both_stacks_tensors_once_each():
    spec = load_spec(ROOT / "examples" / "models" / "bart-base.yaml")
    names = [t.name for t in all_tensors(spec)]
    assert len(names) == len(set(names))
    assert "encoder.5.attention.W_Q" in names and "encoder.6.attention.W_Q" not in names
    assert {"blocks.0.cross.W_K", "blocks.0.cross_norm.gamma", "encoder_positional.P", "positional.P"} <= set(names)
    assert not any(n.startswith("encoder.") and ".cross" in n for n in names)  # the encoder has no cross-attention
    P = next(t for t in all_tensors(spec) if t.name == "positional.P")
    assert P.shape == (768, 1026)  # BART's 1024 positions, offset by 2


def _encoder_decoders() -> st.SearchStrategy[Spec]:
    return st.builds(
        Spec,
        N=st.integers(1, 3),
        N_enc=st.integers(1, 3),
        H=st.integers(1, 4),
        m=st.integers(1, 8),
        d=st.integers(1, 8),
        r=st.integers(1, 8),
        mask=st.just("causal"),
        cross_H=st.none() | st.integers(1, 4),
        cross_m=st.none() | st.integers(1, 8),
        attention_bias=st.booleans(),
        cross_bias=st.none() | st.booleans(),
        norm=st.sampled_from(["none", "pre", "post"]),
        norm_type=st.sampled_from(["layernorm", "rmsnorm"]),
        feedforward=st.sampled_from(["plain", "gated"]),
        ff_bias=st.booleans(),
        positional=st.sampled_from(["none", "sinusoidal", "relative"]),
        V=st.none() | st.integers(2, 20),
    )


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_encoder_decoders())
def test_shapes_and_closed_form_agree_for_any_encoder_decoder(spec):
    """count_params raises unless the tensors' shapes and the closed form agree, per stack and in all."""
    count = count_params(spec)
    by_stack = sum(t.count for t in all_tensors(spec))
    assert count.total == by_stack == count.closed_total
    decoder_only = count_params(
        Spec(**{**spec.to_dict(), "N_enc": None, "cross_H": None, "cross_m": None, "cross_bias": None})
    )
    assert count.total > decoder_only.total  # the encoder and the cross-attention add parameters


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"N_enc": 2, "mask": "none"}, "key 'N_enc': got 2, expected mask: causal with an encoder"),
        ({"cross_H": 2}, "key 'cross_H': got 2, expected no cross_H unless the spec has an encoder (N_enc)"),
        ({"N_enc": 2, "mask": "causal", "parallel": True, "norm": "pre"}, "no parallel in an encoder-decoder"),
        ({"rel_buckets": 16}, "no rel_buckets unless positional is relative"),
        ({"position_offset": 2}, "no position_offset unless positional is learned"),
        ({"head_scale": "sqrt"}, "no head_scale unless the spec has a vocabulary V"),
    ],
)
def test_combinations_an_encoder_decoder_cannot_have_are_one_line_errors(extra, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        spec_from_mapping({"N": 2, "H": 2, "m": 4, "d": 8, "r": 16} | extra, "x.yaml")


@pytest.mark.parametrize("command", [["bench"]])
def test_commands_that_need_the_forward_pass_refuse_an_encoder_decoder_in_one_line(runner, tmp_path, command):
    import numpy as np

    np.save(tmp_path / "x.npy", np.zeros(4, dtype=np.int64))
    args = [command[0], str(ROOT / "examples" / "models" / "t5-small.yaml"), *command[1:]]
    args = [str(tmp_path / a) if a == "x.npy" else a for a in args]
    result = runner.invoke(app, args)
    said = result.stderr
    assert result.exit_code == 2 and said.startswith("error: t5-small: "), said
    assert "of encoder-decoders (N_enc) come next" in said, said
    assert len([line for line in said.splitlines() if line]) == 1


def test_tfm_run_takes_a_source_and_a_target_and_writes_the_decoders_logits(runner, tmp_path):
    aiayn = str(AIAYN)
    src, tgt, out = tmp_path / "src.npy", tmp_path / "tgt.npy", tmp_path / "y.npy"
    np.save(src, np.array([[3, 1, 4, 1, 5, 9, 2]]))
    np.save(tgt, np.array([[2, 7, 1, 8]]))
    result = runner.invoke(app, ["run", aiayn, "-i", str(src), "-t", str(tgt), "-o", str(out)])
    assert result.exit_code == 0, result.output
    logits = np.load(out)
    assert logits.shape == (1, 37000, 4)  # (b, V, n_tgt): one column per target token
    # the decoder is causal: the logits of the first three target tokens do not see the fourth
    np.save(tgt, np.array([[2, 7, 1, 30000]]))
    assert runner.invoke(app, ["run", aiayn, "-i", str(src), "-t", str(tgt), "-o", str(out), "-f"]).exit_code == 0
    changed = np.load(out)
    assert np.allclose(changed[..., :3], logits[..., :3], rtol=0, atol=1e-12)
    assert not np.allclose(changed[..., 3], logits[..., 3])


@pytest.mark.parametrize(
    ("spec", "args", "message"),
    [
        (AIAYN, ["-i", "src.npy"], "an encoder-decoder reads a source and a target: --input SRC --target TGT"),
        (
            ROOT / "examples" / "configs" / "tiny-causal.yaml",
            ["-i", "src.npy", "-t", "src.npy"],
            "has no encoder (N_enc); --target is for encoder-decoders",
        ),
        (AIAYN, ["-i", "src.npy", "-t", "wide.npy"], "source (1, 7) and target (2, 3): expected the same batch"),
    ],
)
def test_run_without_a_target_or_with_one_it_cannot_use_is_one_line(runner, tmp_path, spec, args, message):
    np.save(tmp_path / "src.npy", np.array([[3, 1, 4, 1, 5, 9, 2]]))
    np.save(tmp_path / "wide.npy", np.zeros((2, 3), dtype=np.int64))
    result = runner.invoke(app, ["run", str(spec), *[str(tmp_path / a) if a.endswith(".npy") else a for a in args]])
    assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_init_writes_every_tensor_of_both_stacks(runner, tmp_path):
    from transformer_cli.io import safetensors_io

    out = tmp_path / "t5.safetensors"
    result = runner.invoke(app, ["init", str(ROOT / "examples" / "models" / "t5-small.yaml"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    layout, _ = safetensors_io.peek(out)
    spec = load_spec(ROOT / "examples" / "models" / "t5-small.yaml")
    assert {name: header.shape for name, header in layout.items()} == {t.name: t.shape for t in all_tensors(spec)}
    assert sum(math.prod(h.shape) for h in layout.values()) == 60_506_624


# -- the forward pass against PyTorch's nn.Transformer ------------------------------------------------------
