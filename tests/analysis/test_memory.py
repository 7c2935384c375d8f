"""Memory: the model's figure and tfm's pass against measured peaks, the real limits (cgroup v1/v2, ulimit -v),
refusals that name the limit, sizes no machine holds, and `tfm attention` keeping only what it shows."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from conftest import random_weights, variant_specs
from hypothesis import given, settings

from transformer_cli import Spec, Transformer, count_params, init_weights, kernels
from transformer_cli.analysis.costs import costs
from transformer_cli.analysis.diff import diff
from transformer_cli.analysis.memory import estimate_forward, human
from transformer_cli.cli import app
from transformer_cli.spec.load import load_spec
from transformer_cli.tasks.attention_maps import attention_maps, block_weights, estimate_maps
from transformer_cli.tasks.check import Budgets, check_spec

ROOT = Path(__file__).parents[2]
GPT2 = ROOT / "examples" / "configs" / "gpt2-small.yaml"
GiB, MiB = 1 << 30, 1 << 20


# -- #14: the model's figure, and tfm's own copies beside it ---------------------------------------


def test_the_models_figure_is_smaller_in_float32_than_in_float64():
    """GPT-2 small at n = 1024: the model's weights are 4 or 8 bytes a parameter; tfm's float64 copies apart."""
    spec = load_spec(GPT2)
    params = count_params(spec).total
    f32, f64 = estimate_forward(spec, 1, 1024, "float32"), estimate_forward(spec, 1, 1024, "float64")
    assert (f32.weights, f64.weights) == (4 * params, 8 * params)
    assert f32.model < f64.model
    assert f32.loaded == 8 * params  # tfm's float64 weights as loaded, beside the model's float32 copies
    assert f32.total == f32.model + f32.loaded + f32.input


def _held_by(model: Transformer) -> int:
    """Bytes of the distinct arrays a model keeps (views count once, by their base)."""
    arrays = model.weights.arrays() + [model.P, *(model.final_norm or ())]
    arrays = [a for a in arrays if isinstance(a, np.ndarray)]
    bases = {id(a if a.base is None else a.base): (a if a.base is None else a.base) for a in arrays}
    return sum(a.nbytes for a in bases.values())


def _tfm_pass(spec: Spec, b: int, n: int, dtype: str, workers: int | None = None) -> int:
    """Peak bytes of tfm's pass: float64 weights as loaded, the model built from them, a float64 input."""
    X = np.random.default_rng(0).normal(size=(b, spec.d, n))
    tracemalloc.start()
    weights = init_weights(spec)  # held through the pass, as run_forward and verify hold them
    Transformer(spec, weights, dtype, workers=workers)(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak + X.nbytes


def _model_pass(spec: Spec, b: int, n: int, dtype: str, workers: int | None = None) -> int:
    """Peak bytes of the model alone: its weights in `dtype`, its input in `dtype`, and what its pass allocates."""
    model = Transformer(spec, init_weights(spec), dtype, workers=workers)  # the float64 weights dropped after stacking
    X = np.random.default_rng(0).normal(size=(b, spec.d, n)).astype(dtype)
    tracemalloc.start()
    model(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return _held_by(model) + X.nbytes + peak


MEASURED = [
    (Spec(N=2, H=4, m=64, d=256, r=1024), 4, 256),
    (Spec(N=2, H=4, m=32, d=128, r=512, norm="pre", mask="causal", positional="sinusoidal"), 2, 512),
    (Spec(N=1, H=1, m=4, d=512, r=2, norm="post"), 8, 64),  # activations dominate
    (Spec(N=2, H=8, m=128, d=128, r=128, positional="rope"), 2, 512),  # attention dominates; Q and K turned in place
    (
        Spec(
            N=2,
            H=4,
            G=2,
            m=32,
            d=128,
            r=352,
            norm="pre",
            norm_type="rmsnorm",
            feedforward="gated",
            activation="silu",
            mask="causal",
            positional="rope",
        ),
        2,
        512,
    ),  # LLaMA's kind: RMSNorm holds no temporary
    (Spec(N=2, H=4, m=32, d=128, r=512, norm="sandwich", mask="causal", positional="sinusoidal"), 2, 512),  # 4 norms
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(MEASURED)))
def test_both_figures_bound_the_measured_peaks_within_1_3x_on_one_thread(case, dtype):
    """Upper bounds, and tight ones: 1.01x to 1.29x measured here on one thread, where the peak is the same
    every run."""
    spec, b, n = MEASURED[case]
    estimate = estimate_forward(spec, b, n, dtype, workers=1)
    tfm, model = _tfm_pass(spec, b, n, dtype, workers=1), _model_pass(spec, b, n, dtype, workers=1)
    assert tfm <= estimate.total <= 1.3 * tfm, (tfm, estimate)
    assert model <= estimate.model <= 1.3 * model, (model, estimate)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(MEASURED)))
def test_both_figures_bound_the_threaded_peaks(case, dtype):
    """With the batch split over threads the estimate assumes every thread at its peak at once: an upper bound
    always. How far above depends on how the threads' peaks happen to overlap on a loaded machine (1.02x to 1.35x
    measured usually, 1.61x once): at most the 1.3x of one thread times the threads, whose peaks may not overlap at
    all. The tight bound is the one-thread test's above."""
    spec, b, n = MEASURED[case]
    estimate = estimate_forward(spec, b, n, dtype)
    tfm, model = _tfm_pass(spec, b, n, dtype), _model_pass(spec, b, n, dtype)
    loose = 1.3 * min(b, kernels.cores())
    assert tfm <= estimate.total <= loose * tfm, (tfm, estimate)
    assert model <= estimate.model <= loose * model, (model, estimate)


def test_diff_and_check_report_the_models_figure():
    spec = load_spec(GPT2)
    estimate = estimate_forward(spec, 1, 1024, "float32")
    rows = {r["name"]: r for r in diff(spec, spec, 1, 1024, "float32")}
    assert rows["forward peak, float32, the model"]["a"] == estimate.model
    assert rows["tfm's pass also holds (float64 copies)"]["a"] == estimate.loaded + estimate.input
    assert check_spec(GPT2, Budgets(), 1024, None).memory == estimate.model


# -- #15: training with Adam -----------------------------------------------------------------------


def test_adam_in_mixed_precision_is_16_bytes_a_parameter_and_says_activations_are_excluded(runner):
    spec = load_spec(GPT2)
    params = count_params(spec).total
    memory = costs(spec, 1, 16).to_dict()["memory"]
    assert memory["training_adam"] == {
        "float64": 32 * params,
        "float32": 16 * params,
        "float16_mixed": 16 * params,
        "bfloat16_mixed": 16 * params,
    }
    assert "activations are not included" in memory["training_adam_note"]
    table = runner.invoke(app, ["count", str(GPT2), "-n", "16"], env={"COLUMNS": "200"}).stdout
    assert "bfloat16 mixed: 16 B/param" in table and "Activations are not included" in table


# -- #4: the real limits ---------------------------------------------------------------------------


def test_sizes_of_any_magnitude_format_without_overflow():
    assert human(10**400) == "1.00e+400 bytes" and human(123456 * 10**400) == "1.23e+405 bytes"
    assert human(1536) == "1.5 KiB" and human(1023 * 2**50) == "1,023 PiB" and human(2**60) == "1.15e+18 bytes"
    from transformer_cli.cli.render import si

    assert si(10**400) == "1.00e+400" and si(1234567) == "1.23 M"


@pytest.fixture
def impossible(tmp_path):
    spec = tmp_path / "huge.yaml"
    spec.write_text("N: 1" + "0" * 400 + "\nH: 1\nm: 2\nd: 4\nr: 4\n")
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((4, 3)))
    return spec, x, tmp_path


REFUSING = [
    ["verify", "{spec}"],
    ["run", "{spec}", "-i", "{x}"],
    ["init", "{spec}", "-o", "{dir}/w.npz"],
    ["bench", "{spec}", "--no-torch"],
    ["attention", "{spec}", "-i", "{x}"],
    ["verify-scaling", "{spec}"],
]


@pytest.mark.parametrize("args", REFUSING, ids=lambda a: a[0])
def test_an_impossible_size_is_refused_in_one_line(runner, impossible, args):
    spec, x, folder = impossible
    result = runner.invoke(app, [a.format(spec=spec, x=x, dir=folder) for a in args])
    assert result.exit_code == 2, (result.stderr, result.exception)
    lines = [line for line in result.stderr.splitlines() if not line.startswith("using")]
    assert len(lines) == 1 and "e+40" in lines[0] and "bytes" in lines[0], lines


@pytest.mark.parametrize("args", [["check", "{spec}"], ["count", "{spec}", "-n", "4"], ["diff", "{spec}", "{spec}"]])
def test_an_impossible_size_is_still_counted_and_compared(runner, impossible, args):
    """count and diff allocate nothing: they show the figures; check verifies the structure on a scaled-down copy
    (issue 22: a model too large to run is a valid spec, not bad input)."""
    spec, x, folder = impossible
    result = runner.invoke(app, [a.format(spec=spec, x=x, dir=folder) for a in args], env={"COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0 and "e+40" in result.stdout
    if args[0] == "check":
        assert "on a scaled-down copy: N=2" in " ".join(result.stdout.split())


# -- #3 (issue 10): tfm attention keeps one block of one sequence ------------------------------------


def test_attention_maps_stay_within_their_estimate(tmp_path):
    """Four sequences, three blocks: only one sequence's (H, n, n) weights of one block are kept."""
    spec = Spec(N=3, H=4, m=8, d=32, r=64, mask="causal")
    n = 256
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(0).normal(size=(4, spec.d, n)))
    tracemalloc.start()
    A = attention_maps(spec, x, None, 0, "float64", 1, None, 2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    estimate = estimate_maps(spec, 4, n, "float64", spec.H, False)
    assert A.shape == (spec.H, n, n) and peak <= estimate.total, (peak, estimate)
    assert estimate.output >= spec.H * n * n * 8  # the maps themselves are in the estimate


@settings(max_examples=15, deadline=None, derandomize=True)
@given(variant_specs())
def test_one_blocks_weights_are_those_of_the_whole_pass(spec):
    model = Transformer(spec, random_weights(spec), workers=1)
    x = np.random.default_rng(1).normal(size=(spec.d, 7))
    every = model.attention_weights(x)
    for block in range(spec.N):
        assert np.array_equal(block_weights(model, x, block), every[block][0])
