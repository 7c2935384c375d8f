"""Issue 42: a checkpoint run in the memory a user allows. Under a --max-memory that the float32 copy does not fit,
the weights are held as stored (each block upcast when it runs) or streamed from the file block by block, and the
numbers are the ones of the run that holds every block in float32: bit for bit, for every format tfm reads (a
Hugging Face folder in float32, bfloat16, float16, sharded, bitsandbytes int8 and FP8; GGUF files of f16, q8_0, q4_0
and Q4_K blocks). Each case forces the mode by a budget just above its estimate, and a budget below the streamed
estimate is refused before anything is read; a command that runs the model once streams whatever the memory. Peak
RSS against the budget is checked in subprocesses below (how a block is decoded: test_weights_decoding.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from helpers_weights_modes import FORMATS, IDS, just_above, make_big, make_files, mode_figures
from rss import tfm as measured

import transformer_cli as tfm
from transformer_cli.analysis.memory import MemoryLimitError
from transformer_cli.analysis.modes import Mode, build, mode_estimates, stored_form
from transformer_cli.model.attention_maps import block_weights
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_files(tmp_path_factory.mktemp("modes"))


@pytest.mark.parametrize("name", FORMATS)
def test_the_stored_and_the_streamed_pass_give_the_resident_one_bit_for_bit(files, name):
    path = files / name
    model = tfm.load(path)
    estimates = mode_figures(path)
    expected = model.transformer("float32").forward(IDS)  # every block prepared up front, from the file
    for mode in ("resident", "stored", "streamed"):
        built = build(model.spec, load_weights(path, model.spec), "float32", Mode(mode, estimates[mode], ""))
        assert np.array_equal(built.forward(IDS), expected), mode
    run = tfm.load(path).run(IDS, dtype="float32")  # one pass: streamed, whatever the memory (analysis/modes.py)
    assert run.mode.name == "streamed" and run.mode.why.startswith("one pass, ") and not run.mode.said  # (usual)
    assert np.array_equal(run.output, expected)
    streamed = estimates["streamed"].total
    with pytest.raises(MemoryLimitError, match="each block read from the file when it runs, needs about"):
        tfm.load(path).run(IDS, dtype="float32", max_memory=f"{streamed // 2048}K")


@pytest.mark.parametrize("name", ["hf-bf16", "m-q4_0.gguf"])
def test_a_command_running_the_model_again_and_again_takes_the_first_mode_that_fits(files, name):
    """bench runs its passes again and again: resident when the float32 copy fits, else stored, else streamed;
    the control: a run (one pass) streams whatever the budget."""
    path = files / name
    estimates = mode_estimates(
        tfm.load(path).spec, 1, 8, "float32", stored_form(load_weights(path, tfm.load(path).spec))
    )
    bench = ("bench", path, "--seq-len", "8", "--repeat", "1", "--json", "--dtype", "float32")
    for mode in ("resident", "stored", "streamed"):
        code, timed, stderr = _invoke(*bench, "--max-memory", just_above(estimates[mode]))
        assert code == 0 and timed["weights_mode"]["mode"] == mode, stderr
    one = mode_estimates(
        tfm.load(path).spec, *IDS.shape, "float32", stored_form(load_weights(path, tfm.load(path).spec))
    )
    assert tfm.load(path).run(IDS, dtype="float32", max_memory=just_above(one["resident"])).mode.name == "streamed"


def test_a_run_says_its_mode_on_stderr_and_in_json(files):
    path = files / "hf-bf16"
    np.save(files / "ids.npy", IDS)
    budget = just_above(mode_figures(path)["streamed"])
    done = measured("run", path, "-i", files / "ids.npy", "--max-memory", budget, "--json")
    assert done.code == 0, done.stderr
    mode = json.loads(done.stdout)["weights_mode"]
    assert mode["mode"] == "streamed" and mode["limit"] == {"kind": "--max-memory", "bytes": int(budget[:-1]) * 1024}
    assert mode["modes"]["streamed"] == mode["estimate"]["total"] < mode["modes"]["stored"] < mode["modes"]["resident"]
    assert "note: weights streamed: one pass, each block read from the file when it runs" in done.stderr
    plain = measured("bench", path, "--seq-len", "8", "--repeat", "1", "--json")  # passes again and again
    assert json.loads(plain.stdout)["weights_mode"]["mode"] == "resident"
    assert "note: weights" not in plain.stderr  # all resident, the usual path: said in --json alone


@pytest.mark.parametrize("name", ["hf-bf16", "m-q4_0.gguf"])
def test_generation_streamed_gives_the_resident_tokens_keeping_the_blocks_the_budget_holds(files, name):
    path = files / name
    model = tfm.load(path)
    expected = model.generate(IDS, 5, dtype="float32")
    assert expected.weights_mode["mode"] == "resident"
    prompt_and_new = mode_estimates(
        model.spec, IDS.shape[0], IDS.shape[1] + 5, "float32", stored_form(load_weights(path, model.spec))
    )
    got = tfm.load(path).generate(IDS, 5, dtype="float32", max_memory=just_above(prompt_and_new["streamed"]))
    assert got.weights_mode["mode"] == "streamed"
    assert np.array_equal(got.sequences, expected.sequences)


def test_a_streamed_model_keeps_as_many_upcast_blocks_as_the_room_holds(files):
    from transformer_cli.analysis.modes import Mode

    estimate = mode_figures(files / "hf-bf16")["streamed"]
    assert Mode("streamed", estimate, "", block=100, room=250).keep_up_to(4) == 3  # one, and two more in the room
    assert Mode("streamed", estimate, "", block=100, room=10**9).keep_up_to(4) == 4
    assert Mode("streamed", estimate, "", block=100, room=0).keep_up_to(4) == 1
    assert Mode("resident", estimate, "", block=100, room=0).keep_up_to(4) is None  # resident: all, up front


def _least(call) -> str:
    """The budget a command names as its least when refused at 1 KiB ("needs about 1.5 MiB"), a little above."""
    with pytest.raises(MemoryLimitError) as refused:
        call("1K")
    return _above(str(refused.value))


def _above(refusal: str) -> str:
    """A budget a little above the figure a refusal names ("needs about 1.5 MiB")."""
    value, unit = re.search(r"needs about ([\d.]+) (KiB|MiB)", refusal).groups()
    return f"{float(value) * (1 if unit == 'KiB' else 1024) * 1.02 + 8:.0f}K"


@pytest.mark.parametrize("name", ["hf-bf16", "m-q8_0.gguf"])
def test_verify_streamed_finds_what_the_resident_verify_finds(files, name):
    path = files / name
    expected = tfm.load(path).verify(seq_len=8, dtype="float32")
    budget = _least(lambda b: tfm.load(path).verify(seq_len=8, dtype="float32", max_memory=b))
    got = tfm.load(path).verify(seq_len=8, dtype="float32", max_memory=budget)
    assert (expected.mode.name, got.mode.name) == ("resident", "streamed")
    assert [(c.name, c.observed) for c in got] == [(c.name, c.observed) for c in expected]
    assert got.exit_code == expected.exit_code


def _invoke(*args) -> tuple[int, dict, str]:
    from typer.testing import CliRunner

    from transformer_cli.cli import app

    done = CliRunner().invoke(app, [str(a) for a in args])
    return done.exit_code, json.loads(done.stdout) if done.exit_code in (0, 1) else {}, done.stderr


def _cli_least(*args) -> str:
    """The budget a command names as its least when refused at 1 KiB, a little above."""
    code, _, stderr = _invoke(*args, "--max-memory", "1K")
    assert code == 2, stderr
    return _above(stderr)


@pytest.mark.parametrize("name", ["hf-bf16", "m-q4_0.gguf"])
def test_attention_and_bench_streamed_say_so_and_attention_gives_the_resident_maps(files, name):
    path, ids = files / name, files / "ids16.npy"
    np.save(ids, IDS[0])
    attention = ("attention", path, "-i", ids, "--block", "2", "--json", "--dtype", "float32")
    code, free, stderr = _invoke(*attention)  # one pass: streamed, whatever the memory (the usual path: not said)
    assert code == 0 and free["weights_mode"]["mode"] == "streamed" and "note: weights" not in stderr
    code, streamed, stderr = _invoke(*attention, "--max-memory", _cli_least(*attention))
    assert code == 0 and streamed["weights_mode"]["mode"] == "streamed", stderr
    assert "note: weights streamed" in stderr
    resident = block_weights(tfm.load(path).transformer("float32"), IDS[0], 2)  # every block made up front
    assert streamed["weights"] == free["weights"] == {str(h): a.tolist() for h, a in enumerate(resident)}
    bench = ("bench", path, "--seq-len", "8", "--repeat", "1", "--json")
    code, timed, stderr = _invoke(*bench, "--max-memory", _cli_least(*bench))
    assert code == 0 and timed["weights_mode"]["mode"] == "streamed", stderr


def test_plan_says_how_the_checkpoint_runs_here_in_each_budget(files):
    path = files / "hf-bf16"
    estimates = mode_estimates(
        tfm.load(path).spec, 1, 64, "float32", stored_form(load_weights(path, tfm.load(path).spec))
    )
    plan = ("plan", path, "-n", "64", "--hardware", "this", "--json")
    found, first_token = {}, {}
    for mode, budget in (("resident", None), ("streamed", just_above(estimates["streamed"])), (None, "1K")):
        code, data, stderr = _invoke(*plan, *(["--memory", budget] if budget else []))
        assert code == 0, stderr
        found[mode] = data["runs_here"]
        assert data["runs_here"]["mode"] == mode, data["runs_here"]
        first_token[mode] = data["time"][0]["time_to_first_token"]["seconds"]  # this machine's, in the same plan
    assert found["streamed"]["peak_bytes"] == estimates["streamed"].total
    assert "within the --memory of" in found["streamed"]["why"] and "more than the --memory" in found[None]["why"]
    assert found["resident"]["pass_seconds"] == first_token["resident"]  # the plan's own roofline here
    assert found["streamed"]["pass_seconds"] > first_token["streamed"]  # and each pass upcasting the blocks
    assert tfm.load(path).plan(seq_len=64, hardware="this").runs_here["mode"] == "resident"
    code, spec_plan, _ = _invoke("plan", "-n", "64", "--json")  # the control: a spec has no checkpoint to run
    assert code == 0 and "runs_here" not in spec_plan


@pytest.mark.parametrize("name, layer", [("hf-bf16", "model.layers.{}."), ("m-q8_0.gguf", "blk.{}.")])
def test_the_next_blocks_bytes_are_read_ahead_while_a_block_is_made(files, monkeypatch, name, layer):
    import os

    from transformer_cli.gguf.header import read_header
    from transformer_cli.hf.checkpoint import Checkpoint
    from transformer_cli.model.transformer import Transformer

    path = files / name
    if path.is_dir():
        checkpoint = Checkpoint(path)
        where = {n: (t.data_start + t.entry.begin, t.entry.end - t.entry.begin) for n, t in checkpoint.tensors.items()}
    else:
        header = read_header(path)
        where = {n: (header.data_offset + t.offset, t.nbytes) for n, t in header.tensors.items()}
    asked: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, offset, length, advice: asked.append((offset, length)))
    spec = tfm.load(path).spec
    model = Transformer(spec, load_weights(path, spec), np.float32, keep_blocks=1)
    assert asked == []  # nothing read at build
    model.forward(IDS)
    for block in range(spec.N):  # block b + 1's bytes asked for when block b is made; block 0's when the last is
        expected = sorted(r for n, r in where.items() if n.startswith(layer.format((block + 1) % spec.N)))
        assert sorted(set(asked) & set(expected)) == expected, block
    assert set(asked) <= {r for n, r in where.items() if n.startswith(layer.split("{")[0])}  # blocks' bytes alone


# -- peak RSS within --max-memory, in subprocesses -------------------------------------------------------------------


@pytest.fixture(scope="module")
def big(files):
    return make_big(files / "big")


def _baseline(files, command: str, *args) -> int:
    """The command's peak on the small model of the same family: the interpreter, NumPy, tfm's modules."""
    np.save(files / "ids.npy", IDS[0])
    done = measured(command, files / "hf-bf16", "-i", files / "ids.npy", "--dtype", "float32", *args)
    assert done.code == 0, done.stderr
    return done.peak


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bf16", "q8_0.gguf"])
def test_run_keeps_its_peak_rss_within_max_memory_and_gives_the_logits_of_every_block_made_up_front(files, big, name):
    path, ids = big / name, np.load(big / "ids.npy")
    model = tfm.load(path)
    estimates = mode_estimates(model.spec, 1, ids.size, "float32", stored_form(load_weights(path, model.spec)))
    budget = just_above(estimates["streamed"])
    run = ("run", path, "-i", big / "ids.npy", "--dtype", "float32", "-o", big / "held.npy", "--force")
    done = measured(*run, "--max-memory", budget)
    assert done.code == 0, done.stderr
    assert "note: weights streamed:" in done.stderr
    beyond = done.peak - _baseline(files, "run")
    assert beyond <= int(budget[:-1]) * 1024, f"{beyond / 2**20:.1f} MiB beyond the start, over {budget}"
    assert beyond < estimates["resident"].total - 40 * 2**20  # (what every block in float32 would have held)
    assert np.array_equal(np.load(big / "held.npy"), model.transformer("float32").forward(ids))
    refused = measured(*run, "--max-memory", f"{estimates['streamed'].total // 2048}K")  # the control
    assert refused.code == 2 and refused.peak - _baseline(files, "run") < 16 * 2**20, refused.stderr


@pytest.mark.slow
def test_generate_stored_and_streamed_and_verify_streamed_keep_within_max_memory(files, big):
    path = big / "bf16"
    spec, held = tfm.load(path).spec, stored_form(load_weights(path, tfm.load(path).spec))
    stored = mode_estimates(spec, 1, 48 + 4, "float32", held)["stored"].total  # the prompt and 4 new tokens
    stored_budget = f"{stored // 2**20 + 2}M"
    runs = (("generate", ("-k", "4", "--json"), "70M"), ("generate", ("-k", "4", "--json"), stored_budget))
    for command, args, budget in (*runs, ("verify", ("--seq-len", "16", "--json"), None)):
        if command == "verify":
            args_in = ("--dtype", "float32", *args)
            refused = measured(command, path, *args_in, "--max-memory", "1K")
            least = re.search(r"needs about ([\d.]+) MiB", refused.stderr)
            assert refused.code == 2 and least, refused.stderr
            budget = f"{float(least.group(1)) * 1.02 + 1:.0f}M"
            free = measured(command, path, *args_in)
            done = measured(command, path, *args_in, "--max-memory", budget)
            base = measured(command, files / "hf-bf16", *args_in).peak
        else:
            args_in = ("-i", big / "ids.npy", "--dtype", "float32", *args)
            free = measured(command, path, *args_in)
            done = measured(command, path, *args_in, "--max-memory", budget)
            base = _baseline(files, command, *args)
        assert done.code == free.code, done.stderr
        data, unbounded = json.loads(done.stdout), json.loads(free.stdout)
        assert data["weights_mode"]["mode"] == ("stored" if budget == stored_budget else "streamed"), data[
            "weights_mode"
        ]
        beyond = done.peak - base
        assert beyond <= int(budget[:-1]) * 2**20, (
            f"{command}: {beyond / 2**20:.1f} MiB beyond the start, over {budget}"
        )
        if command == "generate":
            assert data["tokens"] == unbounded["tokens"]
        else:
            assert [c["observed"] for c in data["checks"]] == [c["observed"] for c in unbounded["checks"]]
