"""Issue 42: a checkpoint run in the memory a user allows. Under a --max-memory that the float32 copy does not fit,
the weights are held as stored (each block upcast when it runs) or streamed from the file block by block, and the
numbers are the ones of the run that holds every block in float32: bit for bit, for every format tfm reads (a
Hugging Face folder in float32, bfloat16, float16, sharded, bitsandbytes int8 and FP8; GGUF files of f16, q8_0, q4_0
and Q4_K blocks). Each case forces the mode by a budget just above its estimate, and a budget below the streamed
estimate is refused before anything is read. Peak RSS against the budget is checked in subprocesses below."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from gguf_files import write_random_quantised
from quantized_files import bitsandbytes_folder, float_llama, fp8_folder
from rss import tfm as measured

import transformer_cli as tfm
from transformer_cli.analysis.memory import MemoryLimitError
from transformer_cli.analysis.modes import Mode, build, mode_estimates, stored_form
from transformer_cli.model.attention_maps import block_weights
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

KEYS = dict(
    num_hidden_layers=4, hidden_size=256, intermediate_size=512, tie_word_embeddings=False
)  # (Q4_K: rows of 256)
IDS = np.random.default_rng(4).integers(0, 97, size=(2, 9))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("modes")
    source = float_llama(root / "hf", **KEYS)
    tfm.convert(source, root / "hf-bf16", dtype="bfloat16")
    tfm.convert(source, root / "hf-f16", dtype="float16")
    tfm.convert(root / "hf-bf16", root / "hf-sharded", shard_size="300K")
    bitsandbytes_folder(source, root / "hf-int8", load_in_8bit=True)
    fp8_folder(source, root / "hf-fp8", block=32)
    for kind in ("f16", "q8_0", "q4_0"):
        tfm.convert(source, root / f"m-{kind}.gguf", gguf_type=kind)
    write_random_quantised(transformers.AutoModelForCausalLM.from_pretrained(source), root / "m-q4_k.gguf", "Q4_K")
    return root


FORMATS = ["hf", "hf-bf16", "hf-f16", "hf-sharded", "hf-int8", "hf-fp8", "m-f16.gguf", "m-q8_0.gguf"]
FORMATS += ["m-q4_0.gguf", "m-q4_k.gguf"]


def _estimates(path):
    model = tfm.load(path)
    return mode_estimates(model.spec, *IDS.shape, "float32", stored_form(load_weights(path, model.spec)))


def _budget(estimate) -> str:
    return f"{estimate.total // 1024 + 4}K"  # just above the mode's figure (4 KiB: the rounding to KiB)


@pytest.mark.parametrize("name", FORMATS)
def test_the_stored_and_the_streamed_pass_give_the_resident_one_bit_for_bit(files, name):
    path = files / name
    model = tfm.load(path)
    estimates = _estimates(path)
    expected = model.transformer("float32").forward(IDS)  # every block prepared up front, from the file
    for mode in ("resident", "stored", "streamed"):
        built = build(model.spec, load_weights(path, model.spec), "float32", Mode(mode, estimates[mode], ""))
        assert np.array_equal(built.forward(IDS), expected), mode
    run = tfm.load(path).run(IDS, dtype="float32")  # one pass: streamed, whatever the memory (analysis/modes.py)
    assert run.mode.name == "streamed" and run.mode.why.startswith("one pass, ")
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
        code, timed, stderr = _invoke(*bench, "--max-memory", _budget(estimates[mode]))
        assert code == 0 and timed["weights_mode"]["mode"] == mode, stderr
    one = mode_estimates(
        tfm.load(path).spec, *IDS.shape, "float32", stored_form(load_weights(path, tfm.load(path).spec))
    )
    assert tfm.load(path).run(IDS, dtype="float32", max_memory=_budget(one["resident"])).mode.name == "streamed"


def test_a_run_says_its_mode_on_stderr_and_in_json(files):
    path = files / "hf-bf16"
    np.save(files / "ids.npy", IDS)
    budget = _budget(_estimates(path)["streamed"])
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
    got = tfm.load(path).generate(IDS, 5, dtype="float32", max_memory=_budget(prompt_and_new["streamed"]))
    assert got.weights_mode["mode"] == "streamed"
    assert np.array_equal(got.sequences, expected.sequences)


def test_a_streamed_model_keeps_as_many_upcast_blocks_as_the_room_holds(files):
    from transformer_cli.analysis.modes import Mode

    estimate = _estimates(files / "hf-bf16")["streamed"]
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
    code, free, stderr = _invoke(*attention)  # one pass: streamed, whatever the memory
    assert code == 0 and free["weights_mode"]["mode"] == "streamed" and "note: weights streamed: one pass" in stderr
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
    for mode, budget in (("resident", None), ("streamed", _budget(estimates["streamed"])), (None, "1K")):
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

BIG = dict(  # 12 blocks of 4.2M parameters: 200 MB in float32, 100 MB as bfloat16; the embedding and head 1 MB
    model_type="llama",
    vocab_size=512,
    hidden_size=512,
    intermediate_size=2048,
    num_hidden_layers=12,
    num_attention_heads=8,
    num_key_value_heads=4,
    max_position_embeddings=256,
    rms_norm_eps=1e-5,
)


@pytest.fixture(scope="module")
def big(files):
    root = files / "big"
    root.mkdir()
    (root / "config.json").write_text(json.dumps(BIG))
    tfm.init(root / "config.json", root / "f32", seed=1)
    tfm.convert(root / "f32", root / "bf16", dtype="bfloat16")
    tfm.convert(root / "f32", root / "q8_0.gguf", gguf_type="q8_0")
    np.save(root / "ids.npy", np.random.default_rng(5).integers(0, 512, size=48))
    return root


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
    budget = _budget(estimates["streamed"])
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


@pytest.mark.parametrize("name, in_place", [("hf-bf16", True), ("hf-sharded", True), ("hf-f16", False)])
def test_a_blocks_bfloat16_tensors_are_decoded_once_into_their_stacks_and_the_memory_of_blocks_dropped(
    files, monkeypatch, name, in_place
):
    """W_Q over W_K over W_V and W1 over W3: each bfloat16 tensor decoded from the file's bytes straight into its
    rows, never made as an array of its own first and copied (issue 47); the others into memory a dropped block
    held. The same numbers as stacking the tensors read one by one. W_O, which the file's layout makes a transposed
    view, is read as before; the control: float16 tensors are read and copied in (nothing to decode in place)."""
    from transformer_cli.hf.weights import CheckpointWeights

    path = files / name
    spec = tfm.load(path).spec
    asked = []
    original = CheckpointWeights.__getitem__
    monkeypatch.setattr(CheckpointWeights, "__getitem__", lambda self, key: asked.append(key) or original(self, key))
    model = build(spec, load_weights(path, spec), "float32", Mode("streamed", _estimates(path)["streamed"], ""))
    W1 = model.weights.block(1)[1].W1
    read = {key for key in asked if key.startswith("blocks.1.")}
    if in_place:
        assert read == {"blocks.1.attention.W_O"}
    else:
        assert {"blocks.1.ff.W1", "blocks.1.ff.W3", "blocks.1.ff.W2", "blocks.1.attention.W_Q"} <= read
    plain = load_weights(path, spec)
    assert np.array_equal(W1, np.concatenate([plain["blocks.1.ff.W1"], plain["blocks.1.ff.W3"]]).astype(np.float32))


def test_the_memory_of_a_dropped_block_is_written_again_but_never_while_the_block_is_held(files):
    """A streamed model decodes each block into the memory of blocks dropped: after two passes it holds two blocks'
    arrays, not one per block made. A block someone still holds (a thread's part of the batch, a check) is not
    written over: its arrays are the same after the passes made and dropped every other block again."""
    path = files / "hf-bf16"
    spec = tfm.load(path).spec
    model = build(spec, load_weights(path, spec), "float32", Mode("streamed", _estimates(path)["streamed"], ""))
    held = model.weights.block(1)  # held here, as a thread of the pass would
    before = [a.copy() for a in (held[0].W_qkv, held[1].W1, held[1].W2)]
    expected = tfm.load(path).transformer("float32").forward(IDS)
    for _ in range(2):
        assert np.array_equal(model.forward(IDS), expected)
    assert all(np.array_equal(a, b) for a, b in zip(before, (held[0].W_qkv, held[1].W1, held[1].W2), strict=True))
    buffers = model.weights.buffers
    per_block = sum(a.nbytes for a in (held[0].W_qkv, held[1].W1, held[1].W2))
    assert model.weights.prepared > 2 * spec.N and sum(b.nbytes for b in buffers.held) <= 3 * per_block + 2**20
