"""Where llama.cpp puts a model (analysis/offload.py) and --fit (analysis/llama_cpp_plan.py): llama.cpp's layer
assignment as its source states it (src/llama-model.cpp load_tensors), gguf-parser's published split of
Llama-3.1-70B, --override-tensor, --no-kv-offload, and --fit's order (context first, then layers, a mixture's
experts on the host first)."""

import json
from pathlib import Path

import pytest
from llama_cpp_records import spec_of, tensors_of

from transformer_cli.analysis.llama_cpp import Runtime, layer_memory
from transformer_cli.analysis.llama_cpp_plan import MARGIN, fit, fits, plan_llama_cpp
from transformer_cli.analysis.offload import HOST, Offload, layer_devices, parse_overrides, place
from transformer_cli.errors import SpecError

GiB, MiB = 2**30, 2**20


def test_gguf_parsers_published_split_of_llama_3_1_70b_is_llama_cpps():
    """gguf-parser's README: Llama-3.1-70B-Instruct Q4_K_M, --ctx-size 1024, --tensor-split 8,10: 36 layers on the
    first device, 44 and the output layer on the second; its first device's 144 MiB (UMA: the KV cache alone) is
    36 blocks' F16 K and V at 1,024 cells."""
    spec = spec_of("Llama-3.1-70B")
    p = plan_llama_cpp(spec, tensors_of("Llama-3.1-70B"), Runtime(1024), Offload(-1, (8, 10)))
    devices = p.offload["devices"]
    assert (devices["GPU0"]["blocks"], devices["GPU1"]["blocks"], p.offload["host"]["blocks"]) == ("36", "44+1", "0")
    assert devices["GPU0"]["kv_cache"] == 144 * MiB
    assert p.offload["host"]["weights"] == tensors_of("Llama-3.1-70B")["token_embd.weight"]  # (the input layer)
    assert p.offload["device"]["total"] == devices["GPU0"]["total"] + devices["GPU1"]["total"]


def test_gpu_layers_offload_the_output_layer_first_then_the_last_blocks():
    """-ngl L puts the last L of the N + 1 layers (block 0..N-1, then the output layer) on the device: 1 is the
    output layer alone, N leaves block 0 on the host, N + 1 (or -1) is all; 0 none."""
    N = 32
    assert layer_devices(N, Offload(1)) == [HOST] * N + ["GPU0"]
    assert layer_devices(N, Offload(N)) == [HOST] + ["GPU0"] * N
    assert layer_devices(N, Offload(N + 1)) == layer_devices(N, Offload(-1)) == ["GPU0"] * (N + 1)
    assert layer_devices(N, Offload(0)) == [HOST] * (N + 1)
    assert layer_devices(N, Offload(None)) == [HOST] * (N + 1)


def test_the_tensor_split_is_llama_cpps_float32_cut_and_ties_go_to_the_next_device():
    """llama.cpp's upper_bound: block i goes to the first device whose cumulative share exceeds i / L; a block
    landing on a share exactly goes to the next device (Llama-3.1-70B's block 36 of 81 at 8/18)."""
    placed = layer_devices(80, Offload(81, (8, 10)))
    assert placed.index("GPU1") == 36 and 36 / 81 == pytest.approx(8 / 18)
    three = layer_devices(9, Offload(10, (1, 1, 1)))
    assert [three.count(f"GPU{i}") for i in range(3)] == [4, 3, 3]  # (3.33: blocks 0-3, 4-6, 7-9)


def test_a_tied_head_gets_its_own_copy_on_the_device_and_the_input_stays_on_the_host():
    """Gemma 3's head is its token embeddings: with the output layer on a device llama.cpp loads them there a second
    time; on the host the one copy serves both."""
    name = "gemma-3-1b-pt"
    tensors = tensors_of(name)
    assert "output.weight" not in tensors
    spec = spec_of(name)
    memory, _ = place(tensors, [0] * spec.N, spec.N, Offload(-1))
    embeddings = tensors["token_embd.weight"]
    assert memory[HOST].weights == embeddings
    assert memory["GPU0"].weights == sum(tensors.values()) - embeddings + embeddings  # (all but the input, + a copy)
    first = sum(size for t, size in tensors.items() if t.startswith("blk.0."))
    on_host, _ = place(tensors, [0] * spec.N, spec.N, Offload(spec.N))  # (block 0 on the host, the head's copy not)
    assert on_host["GPU0"].weights == memory["GPU0"].weights - first
    none, _ = place(tensors, [0] * spec.N, spec.N, Offload(0))
    assert none[HOST].weights == sum(tensors.values())  # (one copy)


def test_experts_on_the_host_and_the_cache_on_the_host():
    """-ot exps=CPU: every tensor named with exps on the host, the rest where -ngl says; --no-kv-offload: every
    block's cache on the host, the weights unmoved."""
    name = "Qwen3-30B-A3B"
    spec, tensors = spec_of(name), tensors_of(name)
    experts = sum(size for t, size in tensors.items() if "exps" in t)
    rt = Runtime(8192)
    both = plan_llama_cpp(spec, tensors, rt, Offload(-1, overrides=parse_overrides(["exps=CPU"])))
    assert both.offload["host"]["weights"] == experts + tensors["token_embd.weight"]
    assert both.offload["device"]["weights"] == sum(tensors.values()) - both.offload["host"]["weights"]
    kept = plan_llama_cpp(spec, tensors, rt, Offload(-1, no_kv_offload=True))
    assert kept.offload["device"]["kv_cache"] == 0
    assert kept.offload["host"]["kv_cache"] == sum(m.total for m in layer_memory(spec, rt)) == kept.kv_cache_bytes
    assert kept.offload["device"]["weights"] == sum(tensors.values()) - tensors["token_embd.weight"]


def test_overrides_are_checked_and_the_first_match_wins():
    assert parse_overrides([r"blk\.1\.=CUDA1,exps=CPU"]) == ((r"blk\.1\.", "GPU1"), ("exps", "CPU"))
    for bad in ("exps", "exps=", "(=CPU", "=CPU"):
        with pytest.raises(SpecError, match="--override-tensor"):
            parse_overrides([bad])
    spec, tensors = spec_of("Qwen3-30B-A3B"), tensors_of("Qwen3-30B-A3B")
    with pytest.raises(SpecError, match="no such device"):
        place(tensors, [0] * spec.N, spec.N, Offload(-1, overrides=(("exps", "GPU3"),)))


def test_fit_cuts_the_context_first_to_the_largest_that_fits():
    """Llama-3.1-70B in Q4_K_M over two 24 GiB devices, the context not given: its own 131,072 does not fit, the
    largest that does (in steps of 256) is kept with every layer on the devices; one step more does not fit."""
    name = "Llama-3.1-70B"
    spec, tensors = spec_of(name), tensors_of(name)
    budgets = [24 * GiB, 24 * GiB]
    rt, offload, said = fit(spec, tensors, Runtime(131072), Offload(-1, (1, 1)), budgets, False, False)
    assert said.startswith("context cut") and offload.gpu_layers == -1
    assert 4096 < rt.n_ctx < 131072 and rt.n_ctx % 256 == 0
    assert fits(plan_llama_cpp(spec, tensors, rt, offload), budgets)
    more = Runtime(rt.n_ctx + 256)
    assert not fits(plan_llama_cpp(spec, tensors, more, offload), budgets)


def test_fit_then_puts_the_most_layers_on_the_device_and_keeps_what_the_user_set():
    """One 24 GiB device: even 4,096 tokens of context leave no room for all of Llama-3.1-70B, so the context stays
    4,096 and the most layers that fit go on the device; one more does not fit. A context or -ngl the user set is
    kept (llama.cpp's --fit keeps them)."""
    name = "Llama-3.1-70B"
    spec, tensors = spec_of(name), tensors_of(name)
    rt, offload, said = fit(spec, tensors, Runtime(131072), Offload(-1), [24 * GiB], False, False)
    assert rt.n_ctx == 4096 and 0 < offload.gpu_layers < spec.N + 1
    assert fits(plan_llama_cpp(spec, tensors, rt, offload), [24 * GiB])
    one_more = Offload(offload.gpu_layers + 1)
    assert not fits(plan_llama_cpp(spec, tensors, rt, one_more), [24 * GiB])
    assert said == f"{offload.gpu_layers} of {spec.N + 1} layers on the devices ({offload.gpu_layers})"
    kept, placed, told = fit(spec, tensors, Runtime(8192), Offload(-1), [24 * GiB], True, False)
    assert kept.n_ctx == 8192 and placed.gpu_layers > 0
    kept, placed, told = fit(spec, tensors, Runtime(8192), Offload(70), [24 * GiB], True, True)
    assert placed.gpu_layers == 70 and "kept" in told


def test_fit_keeps_a_mixtures_experts_on_the_host_first():
    """Mixtral-8x7B in Q4_K_M (26.5 GiB) on one 16 GiB device: every block's attention goes on the device with the
    experts on the host, then as many blocks as fit get their experts back; the rest stay on the host."""
    name = "Mixtral-8x7B-v0.1"
    spec, tensors = spec_of(name), tensors_of(name)
    rt, offload, said = fit(spec, tensors, Runtime(4096), Offload(-1), [16 * GiB], True, False)
    assert offload.gpu_layers == spec.N + 1 and "experts of" in said
    kept = len(offload.overrides)
    assert 0 < kept < spec.N
    p = plan_llama_cpp(spec, tensors, rt, offload)
    assert p.offload["device"]["total"] <= 16 * GiB - MARGIN
    whole = Offload(offload.gpu_layers, offload.split, overrides=offload.overrides[1:])  # (one block more whole)
    assert not fits(plan_llama_cpp(spec, tensors, rt, whole), [16 * GiB])


def test_fit_needs_a_size_per_device():
    spec, tensors = spec_of("Meta-Llama-3-8B"), tensors_of("Meta-Llama-3-8B")
    with pytest.raises(SpecError, match="2 devices"):
        fit(spec, tensors, Runtime(8192), Offload(-1, (1, 1)), [8 * GiB], False, False)
    with pytest.raises(SpecError, match="does not fit the host"):
        fit(spec, tensors, Runtime(8192), Offload(None), [2 * GiB], False, False)


def test_the_plans_memory_at_the_json(tmp_path):
    """`tfm plan --json` of a folder in q4_k_m with -ngl: offload's device, devices and host, each with weights,
    kv_cache, compute and total bytes; the llama.cpp part's caches and buffers beside it."""
    from typer.testing import CliRunner

    from transformer_cli.cli import app

    folder = Path(__file__).parents[2] / "examples" / "hf" / "Meta-Llama-3-8B"
    args = ["plan", str(folder), "--weights", "q4_k_m", "-n", "8192", "--gpu-layers", "20", "--kv-dtype", "q8_0"]
    done = CliRunner().invoke(app, [*args, "--json", "--hardware", "h100-sxm"])
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    offload = found["offload"]
    for part in (offload["device"], offload["host"], *offload["devices"].values()):
        assert {"weights", "kv_cache", "compute", "total"} <= set(part)
    assert offload["devices"]["GPU0"]["blocks"] == "19+1" and offload["host"]["blocks"] == "13"
    part = found["llama_cpp"]
    assert part["caches"] == [{"kind": "full", "cells": 8192, "blocks": 32, "k_bytes": 272 * MiB, "v_bytes": 272 * MiB}]
    assert found["kv_cache_bytes"] == 544 * MiB  # (the plan's own cache in q8_0's bytes, as llama.cpp's here)


def test_several_devices_holding_every_layer_keep_four_copies_of_their_inputs():
    """llama.cpp turns on pipeline parallelism for several devices holding every layer (no -ot, no -nkvo): each
    device's compute buffer keeps GGML_SCHED_MAX_COPIES = 4 copies of its inputs (the stream and the masks); one
    device, the output layer on the host, or an override: one copy."""
    from transformer_cli.analysis.llama_cpp import compute_bytes, input_bytes

    spec, tensors = spec_of("Llama-3.1-70B"), tensors_of("Llama-3.1-70B")
    rt = Runtime(1024, flash_attn=False)
    p = plan_llama_cpp(spec, tensors, rt, Offload(-1, (8, 10)))
    copies = 3 * input_bytes(spec, rt)
    assert p.offload["devices"]["GPU0"]["compute"] == compute_bytes(spec, rt, head=False) + copies
    assert p.offload["devices"]["GPU1"]["compute"] == compute_bytes(spec, rt) + copies
    assert input_bytes(spec, rt) == 4 * 512 * spec.d + 4 * 512 * 1024  # (the stream, a float32 mask)
    for offload in (Offload(80, (8, 10)), Offload(-1, (8, 10), overrides=(("exps", "CPU"),)), Offload(-1)):
        single = plan_llama_cpp(spec, tensors, rt, offload)
        device = next(iter(single.offload["devices"].values()))
        assert device["compute"] in (compute_bytes(spec, rt), compute_bytes(spec, rt, head=False))


def test_the_command_refuses_bad_flags_in_one_line_with_exit_2(runner):
    """llama.cpp's flags checked: a share that is no number, an override without its device or to a device that
    is not there, a quantised V without flash attention, --fit without sizes (docs/bad-input.md's rows)."""
    from transformer_cli.cli import app

    folder = str(Path(__file__).parents[2] / "examples" / "hf" / "Meta-Llama-3-8B")
    for flags, said in (
        (["--tensor-split", "8,x"], "--tensor-split 8,x: expected shares by commas (8,10)"),
        (["--override-tensor", "exps"], "--override-tensor exps: expected PATTERN=DEVICE"),
        (["--override-tensor", "exps=GPU2", "--gpu-layers", "5"], "no such device (the devices: GPU0)"),
        (["--v-dtype", "q8_0", "--no-flash-attn"], "a quantised V cache needs flash attention"),
        (["--fit"], "--fit: needs --memory"),
        (["--gpu-layers", "-3"], "--gpu-layers -3: expected a count, or -1 for all"),
    ):
        done = runner.invoke(app, ["plan", folder, "--weights", "q4_k_m", *flags])
        assert done.exit_code == 2, (flags, done.output)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and said in lines[0], (flags, done.stderr)


def test_a_gguf_file_is_planned_as_llama_cpp_runs_it_with_its_own_tensors(tmp_path, runner):
    """`tfm plan model.gguf`: the llama.cpp part comes with every plan of a GGUF file, its weights the file's own
    tensors (its model buffer as llama.cpp maps it); llama.cpp's default cache type f16 where none is asked."""
    import numpy as np

    from transformer_cli.cli import app
    from transformer_cli.gguf.header import read_header

    tiny = str(Path(__file__).parents[2] / "examples" / "hf" / "tiny-llama")
    made = runner.invoke(app, ["init", tiny, "-o", str(tmp_path / "m"), "--seed", "3"])
    assert made.exit_code == 0, made.output
    assert runner.invoke(app, ["convert", str(tmp_path / "m"), "-o", str(tmp_path / "m.gguf")]).exit_code == 0
    done = runner.invoke(app, ["plan", str(tmp_path / "m.gguf"), "--json", "--hardware", "l4", "-n", "512"])
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    own = sum(t.nbytes for t in read_header(tmp_path / "m.gguf").tensors.values())
    assert found["offload"]["host"]["weights"] == own and found["llama_cpp"]["runtime"]["type_k"] == "f16"
    assert found["llama_cpp"]["n_ctx"] == 512 and not np.isnan(found["offload"]["host"]["total"])


@pytest.mark.parametrize(
    ("folder", "slides"), [("Mistral-7B-v0.1", False), ("Phi-3-mini-4k-instruct", False), ("gemma-7b", None)]
)
def test_windows_are_cached_as_llama_cpp_runs_them(folder, slides):
    """Mistral-7B's window has no key in the llama architecture its GGUF file is, and llama.cpp disables Phi-3's:
    llama.cpp caches every token of them, as tfm's plan does (transformers' cache, the plan's own, keeps the
    window). Control: Gemma 2's window (recorded above) is kept."""
    import transformer_cli as tfm

    model = tfm.load(Path(__file__).parents[2] / "examples" / "hf" / folder)
    p = model.plan(seq_len=16384, weights="q8_0", hardware="l4")
    cache = p.llama_cpp.caches
    assert [c["kind"] for c in cache] == ["full"] and cache[0]["cells"] == 16384
    if slides is False:
        assert model.spec.window is not None and p.kv_cache_bytes < cache[0]["k_bytes"] + cache[0]["v_bytes"]
    gemma = spec_of("gemma-2-9b")
    assert {m.window for m in layer_memory(gemma, Runtime(16384))} == {True, False}


def test_fit_on_the_host_alone_cuts_the_context_to_the_hosts_memory(runner):
    """`--fit --gpu-layers 0 --memory 16G`: no device, the host's memory bounds model, caches and compute (not the
    output buffer, as llama.cpp's --fit leaves it out); too little memory even at 4,096 tokens is refused."""
    from transformer_cli.cli import app

    folder = str(Path(__file__).parents[2] / "examples" / "hf" / "Llama-3.1-8B")
    args = ["plan", folder, "--weights", "q4_k_m", "--fit", "--gpu-layers", "0", "--hardware", "l4"]
    done = runner.invoke(app, [*args, "--memory", "16G", "--json"])
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    n_ctx, host = found["llama_cpp"]["fit"]["n_ctx"], found["offload"]["host"]
    assert found["offload"]["devices"] == {} and 4096 < n_ctx < 131072 and found["llama_cpp"]["fit"]["gpu_layers"] == 0
    assert host["total"] - host["output"] <= 16 * GiB - MARGIN
    spec, tensors = spec_of("Meta-Llama-3-8B"), tensors_of("Meta-Llama-3-8B")  # (the same blocks, its own context)
    more = plan_llama_cpp(spec, tensors, Runtime(n_ctx + 256), Offload(None))
    assert not fits(more, [16 * GiB])
    refused = runner.invoke(app, [*args, "--memory", "4G"])
    assert refused.exit_code == 2 and "does not fit the host's --memory even at a context of 4,096" in refused.stderr


def test_a_ggml_cache_type_alone_plans_a_spec_llama_cpp_cannot_run_with_a_note(runner):
    """--kv-dtype q8_0 of a YAML spec no GGUF architecture holds: the plan's own cache in q8_0's bytes, llama.cpp's
    part left out and said; one of llama.cpp's flags with it is refused instead."""
    from transformer_cli.cli import app

    spec = str(Path(__file__).parents[2] / "examples" / "configs" / "tiny-causal.yaml")
    done = runner.invoke(app, ["plan", spec, "--kv-dtype", "q8_0", "--json", "--hardware", "l4"])
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    assert "llama_cpp" not in found and "note: llama.cpp's part not planned" in done.stderr
    assert found["kv_cache_bytes_per_token"] % 34 == 0  # (blocks of 32 entries in 34 bytes)
    refused = runner.invoke(app, ["plan", spec, "--kv-dtype", "q8_0", "--gpu-layers", "2"])
    assert refused.exit_code == 2 and "not a GGUF llama model" in refused.stderr
