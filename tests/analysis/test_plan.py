"""`tfm plan` (issue 14): serving memory and what fits a memory, the roofline's times, the command and its JSON."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from transformer_cli import Spec, count_params
from transformer_cli.analysis.hardware import PRESETS, Hardware, probe, timing
from transformer_cli.analysis.kv_cache import kv_cache_bytes
from transformer_cli.analysis.quantized import weight_bytes
from transformer_cli.analysis.serving import fits, serving_memory, transient
from transformer_cli.cli import app
from transformer_cli.hf.config import spec_from_config

ROOT = Path(__file__).parents[2]
LLAMA3 = ROOT / "examples" / "hf" / "Meta-Llama-3-8B"
MIXTRAL = ROOT / "examples" / "hf" / "Mixtral-8x7B-v0.1"


# -- serving ---------------------------------------------------------------------------------------


def test_the_transient_peak_by_hand():
    """Attention over 256 keys, b = 2, bfloat16: the residual stream (b n d), then the largest phase. Fused:
    the norm's output, Q and the heads' output; unfused adds the scores and their softmax (2 b H n^2)."""
    spec = Spec(N=1, H=8, m=8, d=64, r=64, norm="pre")
    b, n, s = 2, 256, 2
    stream = b * n * 64 * s
    attention = b * n * (64 + 2 * 8 * 8) * s
    feedforward = b * n * (64 + 2 * 64) * s  # the pre-activation and the activation
    assert transient(spec, b, n, s, fused=True).total == stream + max(attention, feedforward)
    assert transient(spec, b, n, s, fused=False).total == stream + attention + 2 * b * 8 * n * n * s


def test_the_logits_of_every_position_dominate_a_large_vocabulary():
    spec = Spec(N=1, H=2, m=8, d=16, r=32, V=50_000, norm="pre")
    every = transient(spec, 3, 100, 2, logits="all")
    assert every.logits == 3 * 100 * (16 + 50_000) * 2  # the final norm's output too
    assert every.total == 3 * 100 * 16 * 2 + 3 * 100 * (16 + 50_000) * 2
    last = transient(spec, 3, 100, 2)  # a serving engine's: each prompt's last position
    assert last.logits == 3 * 100 * 16 * 2 + 3 * 50_000 * 2
    assert last.total == 3 * 100 * 16 * 2 + max(last.blocks, last.logits)


def test_serving_is_weights_plus_cache_plus_transient():
    spec = spec_from_config(LLAMA3)
    for weights in ("bfloat16", "int4", "float32"):
        plan = serving_memory(spec, 2, 1000, weights, "int8")
        s = 4 if weights == "float32" else 2
        assert plan.to_dict() == {
            "weights": weight_bytes(spec)[weights],
            "kv_cache": kv_cache_bytes(spec, 2, 1000, "int8"),
            "transient": transient(spec, 2, 1000, s).total,
            "total": weight_bytes(spec)[weights]
            + kv_cache_bytes(spec, 2, 1000, "int8")
            + transient(spec, 2, 1000, s).total,
        }


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("budget", [16 << 30, 24 << 30, 80 << 30])
def test_the_largest_batch_and_context_fit_and_one_more_does_not(budget, fused):
    spec, n, b = spec_from_config(LLAMA3), 8192, 2
    found = fits(spec, budget, b, n, fused=fused)
    batch, context = found.max_batch_at_context, found.max_context_at_batch
    total = lambda b, n: serving_memory(spec, b, n, fused=fused).total  # noqa: E731
    assert batch == 0 or total(batch, n) <= budget
    assert total(batch + 1, n) > budget
    assert context == 0 or total(b, context) <= budget
    assert context == found.context_cap == 8192 or total(b, context + 1) > budget  # Llama 3's own 8k at most


def test_nothing_fits_below_the_weights_and_learned_positions_cap_the_context():
    spec = spec_from_config(LLAMA3)
    assert fits(spec, weight_bytes(spec)["bfloat16"], 1, 10).to_dict() == {
        "memory": weight_bytes(spec)["bfloat16"],
        "context": 10,
        "max_batch_at_context": 0,
        "batch": 1,
        "max_context_at_batch": 0,
        "context_cap": 8192,
    }
    gpt2 = spec_from_config(ROOT / "examples" / "hf" / "gpt2")
    assert fits(gpt2, 80 << 30, 1, 10).max_context_at_batch == 1024 == gpt2.max_len


def test_mistrals_window_caps_its_cache_at_32k():
    """The issue's figure: Mistral-7B's KV cache at 32k is 0.5 GiB (a 4096 window), not 4 GiB."""
    spec = spec_from_config(ROOT / "examples" / "hf" / "Mistral-7B-v0.1")
    assert serving_memory(spec, 1, 32768).kv_cache == (1 << 30) // 2


# -- time ------------------------------------------------------------------------------------------

TOY = Hardware("toy", {"float32": 1e12, "bfloat16": 4e12}, 1e11, 1 << 30, "made up")


def test_a_decoding_step_is_memory_bound_and_reads_the_weights_a_token_uses():
    """Llama-3-8B at batch 1: a step reads every weight but the (untied) embedding table once, and the cache;
    seconds = bytes / bandwidth exactly; tokens a second = b / seconds."""
    spec = spec_from_config(LLAMA3)
    step = timing(spec, TOY, 1, 8192)
    read = 2 * (count_params(spec).total - spec.V * spec.d) + kv_cache_bytes(spec, 1, 8192, "bfloat16")
    assert step.decode_step.bytes == read
    assert step.decode_step.bound == "memory"
    assert step.decode_step.seconds == read / 1e11
    assert step.tokens_per_second == 1 / step.decode_step.seconds


def test_a_batch_of_prompts_is_compute_bound():
    spec = spec_from_config(LLAMA3)
    prefill = timing(spec, TOY, 4, 4096).time_to_first_token
    assert prefill.bound == "compute"
    assert prefill.seconds == prefill.flops / 4e12


@pytest.mark.parametrize("b, experts", [(1, 2), (2, 4), (4, 8), (64, 8)])
def test_routed_experts_are_read_as_many_as_the_batch_can_choose(b, experts):
    """Mixtral (8 experts, top 2): a batch of b tokens reads min(8, 2b) experts a block."""
    spec = spec_from_config(MIXTRAL)
    per_expert = 3 * spec.r * spec.d  # W1, W3, W2, no biases
    assert count_params(spec).total - count_params(spec).active == spec.N * (spec.E - spec.k) * per_expert
    dense = count_params(spec).total - spec.N * spec.E * per_expert - spec.V * spec.d  # not experts or the table
    read = timing(spec, TOY, b, 1).decode_step.bytes - kv_cache_bytes(spec, b, 1, "bfloat16")
    assert read == 2 * (dense + spec.N * experts * per_expert)


def test_the_presets_and_this_machine():
    assert {hw.name for hw in PRESETS.values()} == {"H100 SXM", "A100 80GB SXM", "L4", "RTX 4090"}
    assert PRESETS["h100-sxm"].flops["bfloat16"] == 989e12 and PRESETS["a100-80gb"].bandwidth == 2039e9
    here = probe(0.01)
    assert here.flops["float32"] > 1e9 and here.bandwidth > 1e8  # anything that runs NumPy does this
    assert timing(spec_from_config(LLAMA3), here, 1, 16).compute_type == "float32"  # no bfloat16 GEMM here


# -- the command -----------------------------------------------------------------------------------


def test_plan_prints_the_four_tables(runner):
    result = runner.invoke(
        app, ["plan", str(LLAMA3), "-n", "8192", "--memory", "80G", "--hardware", "h100-sxm"], env={"COLUMNS": "160"}
    )
    assert result.exit_code == 0, result.output
    for title in ("Serving Meta-Llama-3-8B", "What fits in 80 GiB", "Training Meta-Llama-3-8B", "Time Meta-Llama"):
        assert title in result.stdout
    assert "H100 SXM" in result.stdout and "this machine" not in result.stdout


def test_plan_json_holds_the_exact_figures(runner):
    result = runner.invoke(
        app,
        [
            "plan",
            str(LLAMA3),
            "-n",
            "8192",
            "-b",
            "2",
            "--kv-dtype",
            "float8",
            "--json",
            "--hardware",
            "l4",
            "--zero",
            "3",
            "-D",
            "8",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    spec = spec_from_config(LLAMA3)
    assert data["kv_cache_bytes"] == kv_cache_bytes(spec, 2, 8192, "float8") == 2 * 2 * 32 * 8 * 128 * 8192
    assert data["serving"]["fused_attention"] == serving_memory(spec, 2, 8192, "bfloat16", "float8").to_dict()
    assert data["training"]["states"]["total"] == -(-count_params(spec).total * 16 // 8)
    assert [t["hardware"] for t in data["time"]] == ["L4"]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--memory", "lots"], "--memory: got 'lots'"),
        (["--devices", "8"], "--devices 8: needs --zero"),
        (["--zero", "4"], "--zero"),
        (["--weights", "int3"], "--weights"),
        (["-n", "2000"], "2000"),  # gpt2 has 1024 learned positions
        (["--source-len", "10"], "--source-len 10: gpt2 is not an encoder-decoder"),
    ],
)
def test_plan_refuses_bad_options_in_one_line(runner, args, words):
    result = runner.invoke(app, ["plan", str(ROOT / "examples" / "hf" / "gpt2"), *args])
    assert result.exit_code == 2
    assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_check_holds_specs_to_serving_and_training_budgets_and_diff_shows_both(runner):
    """Llama-3-8B at 8k: serving 16.7 GiB (bfloat16, fused attention, the last position's logits), training 175 GiB
    (mixed-precision Adam)."""
    spec = spec_from_config(LLAMA3)
    serving = serving_memory(spec, 1, 8192).total
    args = ["check", str(LLAMA3), "--no-verify", "-n", "8192", "--json"]
    under = runner.invoke(app, [*args, "--max-serving-memory", "17G", "--max-training-memory", "180G"])
    assert under.exit_code == 0, under.output
    over = runner.invoke(app, [*args, "--max-serving-memory", "16G", "--max-training-memory", "170G"])
    assert over.exit_code == 1
    assert json.loads(over.stdout)["specs"][0]["over_budget"] == [
        "serving at n = 8192: 16.7 GiB > 16 GiB",
        "training at n = 8192 (Adam, mixed precision): 175 GiB > 170 GiB",
    ]
    bad = runner.invoke(app, ["check", str(LLAMA3), "--max-training-memory", "x"])
    assert bad.exit_code == 2 and "--max-training-memory: got 'x'" in bad.stderr
    diff = runner.invoke(
        app, ["diff", str(LLAMA3), str(ROOT / "examples" / "hf" / "Mistral-7B-v0.1"), "-n", "8192", "--json"]
    )
    rows = {r["name"]: r for r in json.loads(diff.stdout)["rows"]}
    assert rows["serving at n, bfloat16"]["a"] == serving


def test_count_refuses_a_source_length_when_no_spec_reads_a_source(runner):
    result = runner.invoke(app, ["count", str(ROOT / "examples" / "hf" / "gpt2"), "-n", "10", "--source-len", "5"])
    assert result.exit_code == 2 and "--source-len 5: no spec here is an encoder-decoder" in result.stderr
    t5 = runner.invoke(
        app, ["count", str(ROOT / "examples" / "models" / "t5-small.yaml"), "-n", "10", "--source-len", "5", "--json"]
    )
    assert t5.exit_code == 0 and json.loads(t5.stdout)["specs"][0]["costs"]["source_len"] == 5


def test_the_readme_worked_examples_are_tfm_plans_figures_and_the_peers_recorded_ones():
    """Each row: tfm plan's figure now, and each peer's from benchmarks/peer_memory.json (its own code, run here)."""
    from worked_examples import kv_rows, total_rows

    readme = (ROOT / "docs" / "plan.md").read_text().splitlines()
    for row in kv_rows() + total_rows():
        assert row in readme, row


# -- issue 22: figures a user can plan with ----------------------------------------------------------------------


def _plan_json(runner, *args):
    result = runner.invoke(app, ["plan", *map(str, args), "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def test_what_fits_is_capped_at_the_models_own_context(runner):
    """Llama-3-8B (max_position_embeddings 8192) in 80 GB: the largest context is its 8,192, not 100k+."""
    plan, _ = _plan_json(runner, ROOT / "examples" / "hf" / "Meta-Llama-3-8B", "--memory", "80G")
    for way in ("fused_attention", "unfused_attention"):
        assert plan["fits"][way]["context_cap"] == 8192 == plan["fits"][way]["max_context_at_batch"]
    assert plan["spec"]["spec"]["context"] == 8192
    uncapped = fits(replace(spec_from_config(LLAMA3), context=None), 80 << 30, 1, 2048)
    assert uncapped.max_context_at_batch > 100_000  # what was promised before


def test_a_context_beyond_the_models_own_is_warned_about_and_refused_past_learned_positions(runner):
    _, stderr = _plan_json(runner, ROOT / "examples" / "hf" / "Meta-Llama-3-8B", "-n", "100000")
    assert "warning: --seq-len 100,000 is beyond Meta-Llama-3-8B's own context of 8,192 tokens" in stderr
    _, stderr = _plan_json(runner, ROOT / "examples" / "hf" / "Meta-Llama-3-8B", "-n", "8192")
    assert "warning" not in stderr
    result = runner.invoke(app, ["plan", str(ROOT / "examples" / "hf" / "gpt2"), "-n", "2000"])
    assert result.exit_code == 2 and "expected at most max_len = 1024" in result.stderr


def test_an_encoder_has_no_kv_cache_and_no_decoding(runner):
    plan, _ = _plan_json(runner, ROOT / "examples" / "hf" / "bert-base-uncased", "--memory", "1G")
    assert plan["decodes"] is False and plan["kv_cache_bytes"] == 0 == plan["kv_cache_bytes_per_token"]
    assert "does not decode token by token" in plan["kv_cache_note"]
    assert all(plan["serving"][way]["kv_cache"] == 0 for way in plan["serving"])
    assert all(t["decode_step"] is None and t["tokens_per_second"] is None for t in plan["time"])
    table = runner.invoke(app, ["plan", str(ROOT / "examples" / "hf" / "bert-base-uncased")], env={"COLUMNS": "200"})
    assert "KV cache (none: no decoding)" in table.stdout and "forward pass" in table.stdout
    assert "tokens/s" not in table.stdout
    decoder, _ = _plan_json(runner, ROOT / "examples" / "hf" / "t5-small")  # an encoder-decoder keeps its decoder's
    assert decoder["decodes"] is True and decoder["kv_cache_bytes"] > 0 and decoder["time"][0]["tokens_per_second"]


def test_the_fits_footnote_appears_only_under_a_zero(runner):
    args = ["plan", str(ROOT / "examples" / "hf" / "Llama-2-7b"), "--memory"]
    words = lambda result: " ".join(result.stdout.split())  # noqa: E731  (captions wrap at the terminal's width)
    roomy = words(runner.invoke(app, [*args, "80G"]))
    assert "not even" not in roomy and "Each figure alone: the batch for contexts of n = 2,048" in roomy
    tight = words(runner.invoke(app, [*args, "13G"]))
    assert "A batch of 0: not even one sequence of 2,048 tokens fits." in tight
    assert "A context of 0" not in tight  # 794 tokens fit at b = 1


# -- the library call ------------------------------------------------------------------------------


def test_the_plan_of_an_asked_is_the_plan_of_its_fields_by_keyword():
    """`plan(spec, b=..., n=...)` (the library's call) builds the Asked the command passes whole: each field reaches
    the plan (the control: another n, another plan)."""
    from transformer_cli.analysis.parallel import Split
    from transformer_cli.analysis.plan import Asked, plan, plan_asked

    spec = Spec(N=2, H=4, m=8, d=32, r=64, V=100, mask="causal")
    fields = dict(b=3, n=96, weights="int8", kv="float16", memory=2**30, optimizer="sgd", zero=1, devices=2)
    fields |= dict(hardware=("h100-sxm",), split=Split(2, 1, 1), logits="all")
    asked = Asked(spec, **fields)
    assert plan_asked(asked).to_dict() == plan(spec, **fields).to_dict()
    assert plan_asked(asked).batch == 3 and plan_asked(asked).split is not None
    assert plan_asked(replace(asked, n=97)).to_dict() != plan(spec, **fields).to_dict()
