"""Broken and hostile Hugging Face folders through the command line: each is one `error:` line naming the file
and what was expected, exit 2, nothing written (the README's bad-input table has these rows)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import one_line_error

from transformer_cli.cli import app

TINY = Path(__file__).parents[2] / "examples" / "hf" / "tiny-llama" / "config.json"


def _folder(tmp_path: Path, runner, shards: bool = False) -> Path:
    folder = tmp_path / "m"
    args = ["init", str(TINY.parent), "-o", str(folder)]
    assert runner.invoke(app, args).exit_code == 0
    if shards:  # the same weights as shards and an index
        assert runner.invoke(app, ["convert", str(folder), "-o", str(tmp_path / "w.safetensors")]).exit_code == 0
        shutil.rmtree(folder)
        convert = ["convert", str(tmp_path / "w.safetensors"), "-o", str(folder), "--shard-size", "100K"]
        assert runner.invoke(app, convert).exit_code == 0
    return folder


def _config(folder: Path, change) -> None:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(change(config)))


def _index(folder: Path, change) -> None:
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    (folder / "model.safetensors.index.json").write_text(json.dumps(change(index)))


def _first_shard(index: dict) -> str:
    return sorted(set(index["weight_map"].values()))[0]


CASES = {
    "config not JSON": (False, lambda f: (f / "config.json").write_text("{oops"), "config.json: not JSON"),
    "config a list": (False, lambda f: (f / "config.json").write_text("[1]"), "expected a JSON object"),
    "model_type unsupported": (
        False,
        lambda f: _config(f, lambda c: c | {"model_type": "rwkv"}),
        "key 'model_type': \"rwkv\" is not supported",
    ),
    "a needed key missing": (
        False,
        lambda f: _config(f, lambda c: {k: v for k, v in c.items() if k != "hidden_size"}),
        "key 'hidden_size'",
    ),
    "rope type unknown": (
        False,
        lambda f: _config(
            f, lambda c: c | {"rope_parameters": {"rope_type": "mrope", "rope_theta": 10000.0, "factor": 4.0}}
        ),
        "mrope",
    ),
    "shard outside the folder": (
        True,
        lambda f: _index(f, lambda i: i | {"weight_map": {k: "../w.safetensors" for k in i["weight_map"]}}),
        "is not a file name inside the folder; refused",
    ),
    "shard missing": (
        True,
        lambda f: (f / "model-00002-of-00006.safetensors").unlink(),
        "shard model-00002-of-00006.safetensors is missing",
    ),
    "tensor in two shards": (
        True,
        lambda f: shutil.copy(f / "model-00001-of-00006.safetensors", f / "model-00002-of-00006.safetensors"),
        "is in two shards",
    ),
    "header past the end": (
        False,
        lambda f: (f / "model.safetensors").write_bytes((10**6).to_bytes(8, "little") + b"{}"),
        "runs past the end of the file",
    ),
    "checkpoint for another config": (
        False,
        lambda f: _config(f, lambda c: c | {"intermediate_size": 170}),
        "checkpoint does not fit its config.json: wrong shape",
    ),
}


@pytest.mark.parametrize("command", ["count", "run"])
@pytest.mark.parametrize("case", CASES)
def test_a_broken_folder_is_one_line_exit_2_and_nothing_written(runner, tmp_path, case, command):
    shards, damage, expected = CASES[case]
    folder = _folder(tmp_path, runner, shards)
    damage(folder)
    np.save(tmp_path / "ids.npy", np.arange(5))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    args = (
        ["count", str(folder)]
        if command == "count"
        else ["run", str(folder), "-i", str(tmp_path / "ids.npy"), "-o", str(tmp_path / "out.npy")]
    )
    result = runner.invoke(app, args)
    lines = [line for line in result.stderr.splitlines() if line]
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert expected in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_checkpoint_larger_than_the_memory_allowed_is_refused_before_reading(runner, tmp_path):
    folder = _folder(tmp_path, runner)
    np.save(tmp_path / "ids.npy", np.arange(5))
    result = runner.invoke(app, ["run", str(folder), "-i", str(tmp_path / "ids.npy"), "--max-memory", "100K"])
    assert result.exit_code == 2 and "more than the --max-memory of 100 KiB" in result.stderr, result.stderr


def test_an_output_folder_that_exists_is_kept_without_force(runner, tmp_path):
    folder = _folder(tmp_path, runner)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("keep")
    assert runner.invoke(app, ["convert", str(folder), "-o", str(tmp_path / "w.safetensors")]).exit_code == 0
    result = runner.invoke(app, ["convert", str(tmp_path / "w.safetensors"), "-o", str(tmp_path / "taken")])
    assert result.exit_code == 2 and "already exists; pass --force" in result.stderr
    assert (tmp_path / "taken" / "mine.txt").read_text() == "keep"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left behind


# -- reliability round 3: links, counts before lists, absurd configs, stored configs ----------------------------


@pytest.mark.parametrize("link", ["dangling", "loop"])
@pytest.mark.parametrize("command", ["run", "attention", "verify"])
def test_a_checkpoint_link_to_nothing_is_an_error_never_seeded_weights(runner, tmp_path, link, command):
    folder = _folder(tmp_path, runner)
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").symlink_to("nowhere.safetensors" if link == "dangling" else "model.safetensors")
    np.save(tmp_path / "ids.npy", np.arange(5))
    args = [command, str(folder)] + (["-i", str(tmp_path / "ids.npy")] if command != "verify" else [])
    error = one_line_error(runner.invoke(app, args))
    said = "which does not exist" if link == "dangling" else "is a symbolic link in a loop"
    assert "m/model.safetensors: is a symbolic link" in error and said in error


def test_a_shard_linked_to_a_foreign_file_is_refused_without_echoing_it(runner, tmp_path):
    folder = _folder(tmp_path, runner, shards=True)
    secret = tmp_path / "passwd"
    secret.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    shard = folder / "model-00002-of-00006.safetensors"
    shard.unlink()
    shard.symlink_to(secret)
    error = one_line_error(runner.invoke(app, ["count", str(folder)]))
    assert "model-00002-of-00006.safetensors: not a valid .safetensors file: its first 8 bytes are not" in error
    number = int.from_bytes(secret.read_bytes()[:8], "little")
    assert f"{number:,}" not in error and str(number) not in error and "root:x" not in error


def _layers(folder: Path, n: int) -> None:
    _config(folder, lambda c: c | {"num_hidden_layers": n})


def test_a_config_of_far_more_blocks_than_its_checkpoint_is_told_from_the_counts(runner, tmp_path):
    """10^6 blocks beside a 2-block checkpoint: refused from the counts, holding a few MB (building every
    expected tensor first took 3.5 GB)."""
    import tracemalloc

    folder = _folder(tmp_path, runner)
    _layers(folder, 10**6)
    tracemalloc.start()
    try:
        error = one_line_error(runner.invoke(app, ["count", str(folder)]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "it holds 21 tensors, the config's model (1,000,000 blocks) has 9,000,003" in error
    assert peak < 50 << 20, peak


def test_init_of_a_billion_blocks_is_refused_by_the_estimate_at_once(runner, tmp_path):
    import tracemalloc

    config = tmp_path / "config.json"
    config.write_text(json.dumps(json.loads((TINY).read_text()) | {"num_hidden_layers": 10**9}))
    tracemalloc.start()
    try:
        result = runner.invoke(app, ["init", str(config), "-o", str(tmp_path / "out"), "--max-memory", "1G"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "more than the --max-memory of 1 GiB" in one_line_error(result)
    assert peak < 50 << 20, peak
    assert not (tmp_path / "out").exists()


def test_a_shard_name_too_long_for_the_file_system_is_one_line(runner, tmp_path):
    folder = _folder(tmp_path, runner, shards=True)
    first = _first_shard(json.loads((folder / "model.safetensors.index.json").read_text()))
    long = "a" * 300 + ".safetensors"
    _index(folder, lambda i: i | {"weight_map": {k: long if v == first else v for k, v in i["weight_map"].items()}})
    np.save(tmp_path / "ids.npy", np.arange(5))
    for args in (
        ["count", str(folder)],
        ["run", str(folder), "-i", str(tmp_path / "ids.npy")],
        ["convert", str(folder), "-o", str(tmp_path / "out.safetensors")],
    ):
        assert "cannot read: File name too long" in one_line_error(runner.invoke(app, args))


@pytest.mark.parametrize("buckets", [1, 2, 3])
def test_t5_with_too_few_buckets_is_refused_by_every_command(runner, tmp_path, buckets):
    folder = tmp_path / "t5"
    folder.mkdir()
    config = json.loads((TINY.parent.parent / "t5-small" / "config.json").read_text())
    config |= {
        "relative_attention_num_buckets": buckets,
        "num_layers": 1,
        "num_decoder_layers": 1,
        "d_model": 16,
        "d_ff": 32,
        "num_heads": 2,
        "d_kv": 8,
        "vocab_size": 50,
    }
    (folder / "config.json").write_text(json.dumps(config))
    for args in (["count", str(folder)], ["init", str(folder), "-o", str(tmp_path / "w.npz")]):
        error = one_line_error(runner.invoke(app, args))
        assert f"key 'relative_attention_num_buckets': got {buckets}, expected at least 4" in error


def test_a_tfm_spec_with_too_few_relative_buckets_is_refused(runner, tmp_path):
    spec = tmp_path / "rel.yaml"
    base = "N: 1\nH: 2\nm: 4\nd: 8\nr: 16\npositional: relative\nrel_max_distance: 8\n"
    spec.write_text(base + "rel_buckets: 3\n")
    assert "key 'rel_buckets': got 3, expected at least 4" in one_line_error(runner.invoke(app, ["count", str(spec)]))
    spec.write_text(base + "rel_buckets: 1\nmask: causal\n")
    assert "expected at least 2 (a causal stack" in one_line_error(runner.invoke(app, ["count", str(spec)]))
    spec.write_text(base + "rel_buckets: 2\nmask: causal\n")
    np.save(tmp_path / "x.npy", np.ones((8, 5)))
    assert runner.invoke(app, ["run", str(spec), "-i", str(tmp_path / "x.npy")]).exit_code == 0


def _stored(tmp_path: Path, runner, text: str) -> Path:
    pytest.importorskip("safetensors", reason="the safetensors package (the test extra) is the reference here")
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    folder = _folder(tmp_path, runner)
    weights = tmp_path / "w.safetensors"
    assert runner.invoke(app, ["convert", str(folder), "-o", str(weights)]).exit_code == 0
    with safe_open(str(weights), "np") as handle:
        metadata = handle.metadata()
    out = tmp_path / "stored.safetensors"
    save_file(load_file(str(weights)), str(out), metadata | {"hf_config": text})
    return out


STORED = {
    "not JSON": ("{oops", "metadata 'hf_config': not JSON: Expecting property name"),
    "NaN": ('{"a": NaN}', "metadata 'hf_config': not JSON: NaN is not JSON"),
    "a duplicate key": ('{"model_type": "llama", "model_type": "llama"}', "key 'model_type' appears twice"),
    "deep nesting": ("[" * 100_000 + "]" * 100_000, "metadata 'hf_config': not JSON: nested too deeply"),
    "null": ("null", "expected a JSON object of config keys, got a JSON null"),
    "a number": ("3", "expected a JSON object of config keys, got a JSON number"),
    "a list": ("[1]", "expected a JSON object of config keys, got a JSON array"),
    "a string": ('"x"', "expected a JSON object of config keys, got a JSON string"),
}


@pytest.mark.parametrize("case", STORED)
def test_a_stored_config_that_is_not_a_config_object_is_one_line(runner, tmp_path, case):
    text, said = STORED[case]
    weights = _stored(tmp_path, runner, text)
    error = one_line_error(runner.invoke(app, ["convert", str(weights), "-o", str(tmp_path / "out")]))
    assert said in error, error
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option", [["--shard-size", "1M"], ["--config", str(TINY)]])
def test_options_for_writing_a_folder_are_refused_when_reading_one(runner, tmp_path, option):
    folder = _folder(tmp_path, runner)
    error = one_line_error(runner.invoke(app, ["convert", str(folder), "-o", str(tmp_path / "w.safetensors"), *option]))
    assert f"{option[0]}: applies only when writing a Hugging Face folder" in error
    assert not (tmp_path / "w.safetensors").exists()


def test_a_bad_shard_size_names_its_option(runner, tmp_path):
    error = one_line_error(
        runner.invoke(app, ["convert", "w.safetensors", "-o", str(tmp_path / "d"), "--shard-size", "12Q"])
    )
    assert error == "error: --shard-size: got '12Q', expected a size such as 512M, 1.5G or 2GB"


@pytest.mark.parametrize("kind", ["linear", "dynamic", "yarn", "longrope"])
def test_a_scaled_rope_is_counted_planned_and_run(runner, tmp_path, kind):
    """Every rope type transformers knows counts as the plain one (no parameters), plans to its stated context and
    runs (the logits against transformers: tests/formats/test_hf_2026.py)."""
    folder = _folder(tmp_path, runner)
    plain = runner.invoke(app, ["count", str(folder), "--json"])
    scaling = {"rope_type": kind, "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 64}
    if kind == "longrope":
        scaling |= {"short_factor": [1.0] * 8, "long_factor": [2.0] * 8}
    _config(folder, lambda c: c | {"rope_parameters": scaling})
    counted = runner.invoke(app, ["count", str(folder), "--json"])
    assert counted.exit_code == 0 and not counted.stderr, counted.stderr
    total = lambda result: json.loads(result.stdout)["specs"][0]["total"]  # noqa: E731
    assert total(counted) == total(plain)
    planned = runner.invoke(app, ["plan", str(folder), "--memory", "1G", "--json"])
    assert planned.exit_code == 0, planned.stderr
    cap = json.loads(planned.stdout)["fits"]["fused_attention"]["context_cap"]
    assert cap == (128 if kind == "longrope" else 256)  # longrope states its own; the others max(128, 4 x 64)
    np.save(tmp_path / "ids.npy", np.arange(5))
    for args in (["run", str(folder), "-i", str(tmp_path / "ids.npy")], ["verify", str(folder)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)


def test_longrope_factors_of_the_wrong_length_name_the_key(runner, tmp_path):
    folder = _folder(tmp_path, runner)
    scaling = {"rope_type": "longrope", "short_factor": [1.0] * 8, "long_factor": [2.0] * 7}
    _config(folder, lambda c: c | {"rope_parameters": scaling, "original_max_position_embeddings": 32})
    error = one_line_error(runner.invoke(app, ["count", str(folder)]))
    assert error.endswith(
        "key 'rope_parameters.long_factor': got [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0], expected a "
        "list of 8 positive numbers"
    ), error
