"""Broken and hostile Hugging Face folders through the command line: each is one `error:` line naming the file
and what was expected, exit 2, nothing written (the README's bad-input table has these rows)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from transformer_cli.cli import app

TINY = Path(__file__).parent.parent / "examples" / "hf" / "tiny-llama" / "config.json"


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
    "model_type unsupported": (False, lambda f: _config(f, lambda c: c | {"model_type": "mamba"}),
                               "key 'model_type': \"mamba\" is not supported"),
    "a needed key missing": (False, lambda f: _config(f, lambda c: {k: v for k, v in c.items() if k != "hidden_size"}),
                             "key 'hidden_size'"),
    "rope type not implemented": (False, lambda f: _config(f, lambda c: c | {"rope_parameters": {
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0}}), "yarn"),
    "shard outside the folder": (True, lambda f: _index(f, lambda i: i | {"weight_map": {
        k: "../w.safetensors" for k in i["weight_map"]}}), "is not a file name inside the folder; refused"),
    "shard missing": (True, lambda f: (f / "model-00002-of-00006.safetensors").unlink(),
                      "shard model-00002-of-00006.safetensors is missing"),
    "tensor in two shards": (True, lambda f: shutil.copy(f / "model-00001-of-00006.safetensors",
                                                         f / "model-00002-of-00006.safetensors"), "is in two shards"),
    "header past the end": (False, lambda f: (f / "model.safetensors").write_bytes(
        (10**6).to_bytes(8, "little") + b"{}"), "runs past the end of the file"),
    "checkpoint for another config": (False, lambda f: _config(f, lambda c: c | {"intermediate_size": 170}),
                                      "checkpoint does not fit its config.json: wrong shape"),
}  # fmt: skip


@pytest.mark.parametrize("command", ["count", "run"])
@pytest.mark.parametrize("case", CASES)
def test_a_broken_folder_is_one_line_exit_2_and_nothing_written(runner, tmp_path, case, command):
    shards, damage, expected = CASES[case]
    folder = _folder(tmp_path, runner, shards)
    damage(folder)
    np.save(tmp_path / "ids.npy", np.arange(5))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    args = ["count", str(folder)] if command == "count" else ["run", str(folder), "-i", str(tmp_path / "ids.npy"),
                                                              "-o", str(tmp_path / "out.npy")]  # fmt: skip
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
