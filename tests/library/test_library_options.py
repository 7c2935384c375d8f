"""One validation for both doors: a bad option is the same one line from `tfm COMMAND` (exit 2) and from the
library (an OptionError, a TfmError), because both call the checks below the CLI; an unknown keyword names itself
and the names the call takes; and generate's notes, warnings and JSON say what the library's Generation holds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import invoke, one_line_error

import transformer_cli as tfm

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "examples" / "hf" / "tiny-llama"  # V = 256, rope, max_position_embeddings 128
LEARNED = "N: 1\nH: 2\nm: 4\nd: 8\nr: 16\nV: 50\npositional: learned\nmax_len: 12\nmask: causal\nnorm: pre\n"
PROMPTS = np.array([[1, 2, 3], [4, 5, 6]])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("lib") / "llama"
    tfm.init(LLAMA, path, seed=3)
    np.save(path.parent / "ids.npy", PROMPTS)
    return path


def both(runner, args, call, message, error=tfm.OptionError):
    """`tfm ARGS` exits 2 with `error: MESSAGE` as its one line, and call() raises `error` with MESSAGE."""
    assert one_line_error(invoke(runner, *args)) == f"error: {message}"
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value) == message and caught.value.exit_code == tfm.ExitCode.BAD_INPUT


@pytest.mark.parametrize(
    ("args", "call", "message"),
    [
        (["count", "{f}", "-n", 0], lambda m: m.costs(seq_len=0), "--seq-len 0: expected 1 or more"),
        (["count", "{f}", "-n", 8, "-b", -1], lambda m: m.costs(batch=-1, seq_len=8), "--batch -1: expected 1 or more"),
        (["count", "{f}", "-n", 8, "-b", 0], lambda m: m.costs(b=0, n=8), "--batch 0: expected 1 or more"),
        (
            ["sample", "{f}", "-n", 0, "-o", "{d}/s.npy"],
            lambda m: m.sample(seq_len=0),
            "--seq-len 0: expected 1 or more",
        ),
        (
            ["sample", "{f}", "-b", 0, "-o", "{d}/s.npy"],
            lambda m: m.sample(4, batch=0),
            "--batch 0: expected 1 or more",
        ),
        (["plan", "{f}", "-n", 0, "--no-chart"], lambda m: m.plan(seq_len=0), "--seq-len 0: expected 1 or more"),
        (["plan", "{f}", "--zero", 5, "--no-chart"], lambda m: m.plan(zero=5), "--zero 5: expected from 0 to 3"),
        (
            ["plan", "{f}", "--lora-rank", 0, "--no-chart"],
            lambda m: m.plan(lora_rank=0),
            "--lora-rank 0: expected 1 or more",
        ),
        (
            ["generate", "{f}", "-i", "{ids}", "--temperature", -1],
            lambda m: m.generate(PROMPTS, temperature=-1),
            "--temperature -1.0: expected a finite number, 0 or more",
        ),
        (
            ["generate", "{f}", "-i", "{ids}", "--temperature", "nan"],
            lambda m: m.generate(PROMPTS, temperature=float("nan")),
            "--temperature nan: expected a finite number, 0 or more",
        ),
        (
            ["generate", "{f}", "-i", "{ids}", "--temperature", 1, "--top-p", 2],
            lambda m: m.generate(PROMPTS, temperature=1, top_p=2),
            "--top-p 2.0: expected a finite number, from 0 to 1",
        ),
        (
            ["generate", "{f}", "-i", "{ids}", "--top-k", 0],
            lambda m: m.generate(PROMPTS, top_k=0),
            "--top-k 0: expected 1 or more",
        ),
        (
            ["generate", "{f}", "-i", "{ids}", "--seed", -1],
            lambda m: m.generate(PROMPTS, seed=-1),
            "--seed -1: expected 0 or more",
        ),
        (
            ["generate", "{f}", "-i", "{ids}", "-k", 0],
            lambda m: m.generate(PROMPTS, 0),
            "--max-new-tokens 0: expected 1 or more",
        ),
        (
            ["generate", "{f}", "-i", "{ids}", "--stop", 2**70],
            lambda m: m.generate(PROMPTS, stop=[2**70]),
            f"--stop {2**70}: expected a token id of the model, 0 .. 255",
        ),
        (
            ["generate", "{f}", "-i", "{ids}", "--stop", 256],
            lambda m: m.generate(PROMPTS, stop=[7, 256]),
            "--stop 256: expected a token id of the model, 0 .. 255",
        ),
    ],
    ids=lambda v: " ".join(map(str, v)) if isinstance(v, list) else "",
)
def test_a_bad_option_is_one_line_from_either_door(runner, folder, args, call, message):
    args = [str(a).format(f=folder, ids=folder.parent / "ids.npy", d=folder.parent) for a in args]
    both(runner, args, lambda: call(tfm.load(folder)), message)


def test_a_size_of_zero_is_refused_from_either_door(runner, folder, tmp_path):
    line = one_line_error(invoke(runner, "convert", folder, "-o", tmp_path / "a", "--shard-size", "0B"))
    assert line == "error: --shard-size: got '0B', expected a positive size"
    with pytest.raises(tfm.OptionError, match=r"^--shard-size: got 0, expected a positive size"):
        tfm.convert(folder, tmp_path / "b", shard_size=0)  # (it wrote one shard a tensor)
    with pytest.raises(tfm.OptionError, match=r"^--memory: got -1, expected a positive size"):
        tfm.load(folder).plan(memory=-1)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda m: m.plan(memroy="80G"),
            "Model.plan: unknown option 'memroy' (did you mean 'memory'?); it takes "
            "seq_len, batch, source_len, weights, kv_dtype, memory, optimizer,",  # (llama.cpp's flags after)
        ),
        (
            lambda m: m.costs(seq=8),
            "Model.costs: unknown option 'seq' (did you mean 'seq_len'?); it takes batch, seq_len, dtype, source_len",
        ),
        (
            lambda m: m.generate(PROMPTS, temprature=1),
            "Model.generate: unknown option 'temprature' (did you mean "
            "'temperature'?); it takes prompt, max_new_tokens, temperature,",
        ),
        (lambda m: m.costs(n=8, seq_len=8), "Model.costs: 'n' and 'seq_len' are one option (seq_len)"),
        (
            lambda m: tfm.convert(m.path, "x.safetensors", shard=1),
            "convert: unknown option 'shard' (did you mean 'shard_size'?); it takes source, output, config,",
        ),
        (lambda m: tfm.load(m.path, wieghts="w.npz"), "load: unknown option 'wieghts' (did you mean 'weights'?)"),
    ],
)
def test_an_unknown_keyword_names_itself_and_the_accepted_names(folder, call, message):
    with pytest.raises(tfm.OptionError) as caught:
        call(tfm.load(folder))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_the_old_names_b_and_n_still_work(folder):
    model = tfm.load(folder)
    assert model.costs(b=2, n=8).to_dict() == model.costs(batch=2, seq_len=8).to_dict() == model.costs(2, 8).to_dict()
    assert model.costs(2, 8).to_dict() != model.costs(8, 2).to_dict()  # (the control: the order is batch, seq_len)
    assert np.array_equal(model.sample(n=4, b=2, seed=1), model.sample(seq_len=4, batch=2, seed=1))


def test_no_prompt_is_one_line_from_either_door(runner, folder, tmp_path):
    np.save(tmp_path / "none.npy", np.zeros((0, 3), dtype=np.int64))
    line = one_line_error(invoke(runner, "generate", folder, "-i", tmp_path / "none.npy"))
    assert line == f"error: {tmp_path / 'none.npy'}: no prompt in shape (0, 3) (at least one sequence of (b, p))"
    with pytest.raises(tfm.SpecError, match=r"^the prompt: no prompt in shape \(0, 3\)"):
        tfm.load(folder).generate(np.zeros((0, 3), dtype=np.int64))


def test_a_config_s_stop_or_padding_token_past_the_vocabulary_is_refused(runner, folder, tmp_path):
    """The first sequence stops at once (its first token is the eos) while the second goes on, padded with
    pad_token_id 300 of a vocabulary of 256 (an IndexError from the embedding before); a stop id of 2^70 in the
    config (an OverflowError)."""
    import shutil

    model = tfm.load(folder)
    first = int(model.generate(PROMPTS, 1).tokens[0, 0])
    for key, value in (("pad_token_id", 300), ("eos_token_id", 2**70)):
        copy = tmp_path / key
        shutil.copytree(folder, copy)
        (copy / "generation_config.json").write_text(json.dumps({"eos_token_id": first, key: value}))
        message = f"{copy}: {key} {value}: expected a token id of the model, 0 .. 255"
        both(
            runner,
            ["generate", copy, "-i", folder.parent / "ids.npy", "-k", 3],
            lambda c=copy: tfm.load(c).generate(PROMPTS, 3),
            message,
        )


def test_tokens_past_the_context_are_warned_of_and_refused_past_learned_positions(runner, folder, tmp_path):
    result = invoke(runner, "generate", folder, "-i", folder.parent / "ids.npy", "-k", 130)
    assert result.exit_code == 0
    warning = (
        "warning: --max-new-tokens 130: the prompt's 3 tokens and 130 new ones make 133 positions, beyond "
        "llama's own context of 128 (context: max_position_embeddings); the tokens past it come from a model "
        "run beyond it"
    )
    assert warning in result.stderr.splitlines()
    assert tfm.load(folder).generate(PROMPTS, 130).notes == [warning]
    assert tfm.load(folder).generate(PROMPTS, 125).notes == []  # (the control: 128 positions fit)
    (tmp_path / "gpt.yaml").write_text(LEARNED)
    message = (
        "--max-new-tokens 10: the prompt's 3 tokens and 10 new ones make 13 positions, beyond the 12 learned "
        "positions of gpt (max_len)"
    )
    both(
        runner,
        ["generate", tmp_path / "gpt.yaml", "-i", folder.parent / "ids.npy", "-k", 10],
        lambda: tfm.load(tmp_path / "gpt.yaml").generate(PROMPTS, 10),
        message,
    )
    assert tfm.load(tmp_path / "gpt.yaml").generate(PROMPTS, 9).tokens.shape == (2, 9)  # 12 positions: fits


def test_top_k_or_top_p_without_a_temperature_is_greedy_and_says_so(runner, folder):
    model = tfm.load(folder)
    greedy = model.generate(PROMPTS, 4)
    note = (
        "note: --top-k 5 applies only to sampling (--temperature above 0): these tokens are greedy, as "
        "transformers' generate leaves them without do_sample"
    )
    made = model.generate(PROMPTS, 4, top_k=5)
    assert made.notes == [note] and np.array_equal(made.tokens, greedy.tokens)
    result = invoke(runner, "generate", folder, "-i", folder.parent / "ids.npy", "-k", 4, "--top-k", 5, "--json")
    assert note in result.stderr.splitlines() and json.loads(result.stdout)["notes"] == [note]
    assert "--top-k 5 and --top-p 0.5 apply only" in model.generate(PROMPTS, 4, top_k=5, top_p=0.5).notes[0]
    sampled = model.generate(PROMPTS, 4, temperature=1.0, top_k=5, seed=1)  # (the control: sampled, no note)
    assert sampled.notes == [] and not np.array_equal(sampled.tokens, greedy.tokens)


def test_generate_json_names_its_spec_and_its_tokens_are_the_generation_s(runner, folder, tmp_path):
    model = tfm.load(folder)
    result = invoke(
        runner, "generate", folder, "-i", folder.parent / "ids.npy", "-k", 3, "--json", "-o", tmp_path / "out.npy"
    )
    shown = json.loads(result.stdout)
    assert shown["name"] == model.spec.label == "llama" and shown["spec"] == model.spec.to_dict()
    made = model.generate(PROMPTS, 3)
    assert shown["tokens"] == made.tokens.tolist() and made.tokens.shape == (2, 3)
    assert np.array_equal(np.load(tmp_path / "out.npy"), made.sequences) and made.sequences.shape == (2, 6)


def test_tfm_generate_takes_a_loaded_model(folder):
    model = tfm.load(folder)
    made = tfm.generate(model, PROMPTS, 5)
    assert np.array_equal(made.tokens, model.generate(PROMPTS, 5).tokens)
    with pytest.raises(tfm.OptionError, match="takes the model's own padding token"):
        tfm.generate(model, PROMPTS, 5, pad=0)
