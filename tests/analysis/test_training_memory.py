"""Training memory (issue 14, item 4): the activations autograd keeps, against PyTorch's own count of the bytes it
saves (torch.autograd.graph.saved_tensors_hooks), and the model states against the ZeRO paper's figures."""

from __future__ import annotations

import pytest

from transformer_cli import Spec
from transformer_cli.analysis.training import activation_bytes, model_states, training_memory

SPECS = {
    "seed (no norm, relu, no vocabulary)": Spec(N=2, H=4, m=16, d=64, r=128),
    "gpt-2 style (pre layer norm, gelu, learned positions, causal)": Spec(
        N=2,
        H=4,
        m=16,
        d=64,
        r=256,
        norm="pre",
        activation="gelu",
        mask="causal",
        positional="learned",
        max_len=256,
        V=300,
        scale="sqrt",
    ),
    "llama style (rms norm, rope, 8 heads over 2 kv heads, swiglu)": Spec(
        N=2,
        H=8,
        G=2,
        m=16,
        d=128,
        r=344,
        norm="pre",
        norm_type="rmsnorm",
        activation="silu",
        feedforward="gated",
        ff_bias=False,
        mask="causal",
        positional="rope",
        V=500,
        scale="sqrt",
    ),
    "gemma 2 style (sandwich rms norms, rope, gated gelu)": Spec(
        N=2,
        H=4,
        G=1,
        m=16,
        d=64,
        r=192,
        norm="sandwich",
        norm_type="rmsnorm",
        activation="gelu",
        feedforward="gated",
        ff_bias=False,
        mask="causal",
        positional="rope",
        V=300,
        scale="sqrt",
    ),
    "bert style (post layer norm, gelu)": Spec(
        N=2, H=4, m=16, d=64, r=256, norm="post", activation="gelu", V=100, scale="sqrt"
    ),
}


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", SPECS)
def test_the_activations_are_what_pytorchs_autograd_saves_within_10_percent(name, dtype, fused):
    """Measured here: equal to the byte in every case but a few scalars (the loss's)."""
    pytest.importorskip("torch", reason="PyTorch is the reference for the bytes autograd saves (the test extra)")
    from torch_reference import saved_bytes

    spec = SPECS[name]
    for b, n in ((2, 64), (1, 256)):
        measured = saved_bytes(spec, b, n, dtype, fused)
        figure = activation_bytes(spec, b, n, dtype, fused=fused)["total"]
        assert abs(figure - measured) <= 0.10 * measured, (b, n, figure, measured)


def test_the_fused_figure_is_not_the_unfused_kernels_the_check_can_fail():
    """The control: at n = 256 the unfused kernels keep the (H, n, n) softmax, which the fused figure leaves out."""
    pytest.importorskip("torch", reason="PyTorch is the reference for the bytes autograd saves (the test extra)")
    from torch_reference import saved_bytes

    spec = SPECS["llama style (rms norm, rope, 8 heads over 2 kv heads, swiglu)"]
    measured = saved_bytes(spec, 1, 256, "float32", fused=False)
    assert activation_bytes(spec, 1, 256, "float32", fused=True)["total"] < 0.9 * measured


def test_zero_matches_the_papers_figure_1():
    """Rajbhandari et al. 2020, Figure 1: 7.5B parameters, Adam in mixed precision (K = 12), 64 devices:
    120 GB, then 31.4, 16.6 and 1.88 GB per device for stages 1 to 3."""
    params = 7_500_000_000
    per_device = [model_states(params, "adam-mixed", zero, 64)["total"] / 1e9 for zero in range(4)]
    assert [float(f"{x:.3g}") for x in per_device] == [120, 31.4, 16.6, 1.88]


@pytest.mark.parametrize("optimizer, per_param", [("adam-mixed", 16), ("adam", 16), ("sgd", 8), ("sgd-momentum", 12)])
def test_each_optimizer_keeps_its_bytes_a_parameter(optimizer, per_param):
    assert model_states(1001, optimizer)["total"] == 1001 * per_param
    assert model_states(1001, optimizer, 3, 4)["total"] == sum(-(-1001 * x // 4) for x in _sizes(optimizer))


def _sizes(optimizer: str) -> tuple[int, int, int]:
    return {"adam-mixed": (2, 2, 12), "adam": (4, 4, 8), "sgd": (4, 4, 0), "sgd-momentum": (4, 4, 4)}[optimizer]


def test_recomputation_keeps_each_blocks_input_and_one_block():
    spec = SPECS["llama style (rms norm, rope, 8 heads over 2 kv heads, swiglu)"]
    b, n, s = 2, 64, 2
    full = activation_bytes(spec, b, n, "bfloat16")
    recomputed = activation_bytes(spec, b, n, "bfloat16", recompute=True)
    one_block = sum(full["per_block"].values())
    assert full["blocks"] == spec.N * one_block
    tables = 2 * n * spec.m * s  # the rotary cosines and sines, made again with the block
    assert recomputed["recomputed"] == one_block + tables
    assert recomputed["blocks"] == spec.N * b * n * spec.d * s + one_block + tables
    assert recomputed["model"] == full["model"] - tables
    assert recomputed["total"] < full["total"]


def test_an_encoder_decoder_counts_both_stacks_and_the_cross_attention():
    """T5's shape: more with a longer source (the encoder and the cross-attention's keys), and the unfused
    kernels keep the (H, n, n_src) softmax of every cross-attention, as well as the stacks' own."""
    spec = Spec(
        N=2,
        N_enc=2,
        H=4,
        m=16,
        d=64,
        r=128,
        V=100,
        norm="pre",
        norm_type="rmsnorm",
        mask="causal",
        positional="relative",
        scale="none",
    )
    short = activation_bytes(spec, 1, 32, "bfloat16", n_src=32)["total"]
    long = activation_bytes(spec, 1, 32, "bfloat16", n_src=64)["total"]
    assert long > short
    fused = activation_bytes(spec, 1, 32, "bfloat16", fused=True, n_src=64)["total"]
    unfused = activation_bytes(spec, 1, 32, "bfloat16", fused=False, n_src=64)["total"]
    # bfloat16 softmaxes (cross, decoder's self, encoder's) in place of float32 log-sum-exps (one a query and head)
    queries = spec.N * spec.H * 32 + spec.N * spec.H * 32 + spec.N_enc * spec.H * 64
    softmaxes = 2 * (spec.N * spec.H * 32 * 64 + spec.N * spec.H * 32 * 32 + spec.N_enc * spec.H * 64 * 64)
    assert unfused - fused == softmaxes - 4 * queries


def test_the_training_total_is_states_plus_activations():
    spec = SPECS["gpt-2 style (pre layer norm, gelu, learned positions, causal)"]
    plan = training_memory(spec, 12345, 2, 64, "adam", zero=2, devices=4)
    assert plan.activation_dtype == "float32"
    for way, size in plan.activations.items():
        assert plan.total[way] == plan.states["total"] + size
    assert plan.states == {
        "weights": 4 * 12345,
        "gradients": -(-4 * 12345 // 4),
        "optimizer": -(-8 * 12345 // 4),
        "total": 4 * 12345 + 12345 + 24690,
    }
