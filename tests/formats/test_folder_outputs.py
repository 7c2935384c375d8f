"""Writing Hugging Face folders (`tfm convert ... -o FOLDER`, `tfm init CONFIG -o FOLDER`): nothing a user owns
is lost. Each data-loss case of the reliability round is here as it was found, with the user's files checked
byte for byte afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import invoke, one_line_error
from helpers_folder_outputs import snapshot

from transformer_cli.io import outputs

TINY = Path(__file__).parents[2] / "examples" / "hf" / "tiny-llama"


@pytest.fixture
def weights(runner, tmp_path) -> Path:
    """tfm's weights file of the tiny LLaMA (with its config.json in the metadata), beside nothing else."""
    folder = tmp_path / "made"
    assert invoke(runner, "init", TINY, "-o", folder).exit_code == 0
    out = tmp_path / "w.safetensors"
    assert invoke(runner, "convert", folder, "-o", out).exit_code == 0
    return out


def loads(runner, folder: Path) -> bool:
    return invoke(runner, "count", folder).exit_code == 0


# -- 1. replacing a folder keeps what tfm did not write ------------------------------------------------------


def _user_folder(folder: Path) -> None:
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("mine")
    (folder / "sub" / "a.bin").write_bytes(b"\x00\x01")
    (folder / "tokenizer.json").write_text("{}")
    (folder / "model-00001-of-00003.safetensors").write_bytes(b"old shard")  # an earlier checkpoint's, stale
    (folder / "model.safetensors.index.json").write_text("{}")


def test_force_into_a_folder_keeps_every_file_tfm_does_not_write(runner, tmp_path, weights):
    folder = tmp_path / "d"
    _user_folder(folder)
    kept = {k: v for k, v in snapshot(folder).items() if not k.startswith("model")}
    assert invoke(runner, "convert", weights, "-o", folder, "--force").exit_code == 0
    after = snapshot(folder)
    assert {k: v for k, v in after.items() if k in kept} == kept  # byte for byte
    assert sorted(set(after) - set(kept)) == ["config.json", "model.safetensors"]  # the stale shard and index gone
    assert loads(runner, folder)


def test_shards_replace_a_single_file_and_back(runner, tmp_path, weights):
    folder = tmp_path / "d"
    assert invoke(runner, "convert", weights, "-o", folder, "--shard-size", "100K").exit_code == 0
    (folder / "notes.txt").write_text("mine")
    shards = sorted(p.name for p in folder.glob("model-*"))
    assert len(shards) > 1
    assert invoke(runner, "convert", weights, "-o", folder, "--force").exit_code == 0
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors", "notes.txt"]
    assert invoke(runner, "convert", weights, "-o", folder, "--force", "--shard-size", "100K").exit_code == 0
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json",
        *shards,
        "model.safetensors.index.json",
        "notes.txt",
    ]
    assert loads(runner, folder)


def test_init_replaces_a_folder_it_wrote_and_keeps_the_rest(runner, tmp_path):
    folder = tmp_path / "m"
    assert invoke(runner, "init", TINY, "-o", folder).exit_code == 0
    (folder / "notes.txt").write_text("mine")
    assert invoke(runner, "init", TINY, "-o", folder, "--seed", "3", "--force").exit_code == 0
    assert (folder / "notes.txt").read_text() == "mine" and loads(runner, folder)


def test_a_folder_where_tfm_writes_a_file_is_refused_and_left_alone(runner, tmp_path, weights):
    folder = tmp_path / "d"
    (folder / "config.json").mkdir(parents=True)
    (folder / "config.json" / "inside").write_text("mine")
    before = snapshot(tmp_path)
    error = one_line_error(invoke(runner, "convert", weights, "-o", folder, "--force"))
    assert "d/config.json: is a directory" in error
    assert snapshot(tmp_path) == before


# -- 2. the output is never an input ---------------------------------------------------------------------


def test_the_source_as_the_output_is_refused(runner, tmp_path, weights):
    before = snapshot(tmp_path)
    error = one_line_error(invoke(runner, "convert", weights, "-o", weights, "--force"))
    assert "w.safetensors: is also an input of this command" in error
    assert snapshot(tmp_path) == before


def test_a_folder_holding_the_source_is_refused(runner, tmp_path, weights):
    holder = tmp_path / "h"
    holder.mkdir()
    source = holder / "w.safetensors"
    weights.rename(source)
    before = snapshot(tmp_path)
    error = one_line_error(invoke(runner, "convert", source, "-o", holder, "--force"))
    assert "h: holds" in error and "an input of this command" in error
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("through_link", [False, True])
def test_the_checkpoint_being_read_as_the_output_is_refused(runner, tmp_path, through_link):
    folder = tmp_path / "c"
    assert invoke(runner, "init", TINY, "-o", folder).exit_code == 0
    source = folder
    if through_link:
        source = tmp_path / "link"
        source.symlink_to(folder)
    before = snapshot(tmp_path)
    error = one_line_error(invoke(runner, "convert", source, "-o", folder / "model.safetensors", "--force"))
    assert "c/model.safetensors: is also an input of this command" in error
    assert snapshot(tmp_path) == before


def test_an_output_beside_a_models_files_is_allowed(runner, tmp_path):
    folder = tmp_path / "c"
    assert invoke(runner, "init", TINY, "-o", folder).exit_code == 0
    np.save(tmp_path / "ids.npy", np.arange(4))
    assert invoke(runner, "run", folder, "-i", tmp_path / "ids.npy", "-o", folder / "logits.npy").exit_code == 0
    assert invoke(runner, "convert", folder, "-o", folder / "tfm.safetensors").exit_code == 0


# -- 3. what is not a folder is never replaced by one ------------------------------------------------------


def test_a_fifo_a_file_or_a_dangling_link_is_not_replaced_by_a_folder(runner, tmp_path, weights):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_text("mine")
    (tmp_path / "dangling").symlink_to("nowhere")
    before = snapshot(tmp_path)
    for name, said in [
        ("fifo", "is a FIFO (named pipe), expected a folder"),
        ("file", "is a regular file, expected a folder"),
        ("dangling", "is a symbolic link to nothing (or a loop), expected a folder"),
    ]:
        assert said in one_line_error(invoke(runner, "convert", weights, "-o", tmp_path / name, "--force"))
    assert snapshot(tmp_path) == before


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_node_is_not_replaced_by_a_folder(runner, tmp_path, weights):
    device = tmp_path / "null"
    os.mknod(device, 0o666 | 0o020000, os.makedev(1, 3))  # a character device, as /dev/null
    link = tmp_path / "devlink"
    link.symlink_to(device)
    for out in (device, link):
        assert "character device, expected a folder" in one_line_error(
            invoke(runner, "convert", weights, "-o", out, "--force")
        )
    assert device.is_char_device() and link.is_symlink()


# -- 4. no value is silently turned into inf ---------------------------------------------------------------


def _scaled(weights: Path, out: Path, factor: float) -> None:
    pytest.importorskip("safetensors", reason="the safetensors package (the test extra) is the reference here")
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file

    with safe_open(str(weights), "np") as handle:
        metadata = handle.metadata()
    tensors = load_file(str(weights))
    tensors["blocks.1.ff.W2"] = tensors["blocks.1.ff.W2"] * factor
    save_file(tensors, str(out), metadata)


def test_float16_beyond_its_range_is_refused_naming_the_tensor(runner, tmp_path, weights):
    big = tmp_path / "big.safetensors"
    _scaled(weights, big, 1e6)
    error = one_line_error(invoke(runner, "convert", big, "-o", tmp_path / "f16", "--dtype", "float16"))
    assert "model.layers.1.mlp.down_proj.weight: holds" in error and "beyond float16's largest value (65,504)" in error
    assert not (tmp_path / "f16").exists()
    folder = tmp_path / "f32"
    assert invoke(runner, "convert", big, "-o", folder).exit_code == 0  # float32 holds it
    error = one_line_error(invoke(runner, "convert", folder, "-o", tmp_path / "back.safetensors", "--dtype", "float16"))
    assert "tfm's tensor blocks.1.ff.W2: holds" in error
    assert not (tmp_path / "back.safetensors").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_float16_within_its_range_converts(runner, tmp_path, weights):
    folder = tmp_path / "f16"
    assert invoke(runner, "convert", weights, "-o", folder, "--dtype", "float16").exit_code == 0
    assert loads(runner, folder)


# -- 9, 10. interrupted and racing writers leave nothing behind --------------------------------------------


def _files(names: list[str]) -> list[tuple[str, outputs.Writer]]:
    return [(name, lambda handle, name=name: handle.write(name.encode())) for name in names]


def _stale(name: str) -> bool:
    return name.startswith("model")


def test_an_interrupt_while_writing_leaves_the_old_folder_as_it_was(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "model.safetensors").write_text("old")
    (folder / "notes.txt").write_text("mine")
    before = snapshot(tmp_path)

    def interrupted(handle):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        outputs.write_folder(folder, [*_files(["config.json"]), ("model.safetensors", interrupted)], _stale, True)
    assert snapshot(tmp_path) == before


def test_ctrl_c_while_the_files_are_moved_into_place_waits_for_the_last_one(tmp_path, monkeypatch):
    """A real SIGINT, delivered at the first rename: the folder then holds the whole new checkpoint and no stale
    or temporary file, and the interrupt is raised once it is done."""
    folder = tmp_path / "d"
    folder.mkdir()
    for name in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "notes.txt"):
        (folder / name).write_text("old")
    replace = os.replace
    sent = []

    def replace_after_a_signal(src, dst):
        if not sent:
            sent.append(True)
            signal.raise_signal(signal.SIGINT)
        replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_after_a_signal)
    with pytest.raises(KeyboardInterrupt):
        outputs.write_folder(folder, _files(["config.json", "model.safetensors"]), _stale, True)
    assert sent
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["config.json", "d", "model.safetensors", "notes.txt"]
    assert (folder / "model.safetensors").read_text() == "model.safetensors"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


def test_racing_writers_with_force_all_finish_and_leave_no_temporary_folder(tmp_path, weights):
    folder = tmp_path / "d"
    command = [sys.executable, "-m", "transformer_cli", "convert", str(weights), "-o", str(folder), "--force"]
    procs = [
        subprocess.Popen(
            [*command, *(["--shard-size", "100K"] if i % 2 else [])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert [code for code, _ in results] == [0, 0, 0, 0], results
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "made", "w.safetensors"]
    names = sorted(p.name for p in folder.iterdir())
    assert not [n for n in names if n.startswith(".")], names
    single = names == ["config.json", "model.safetensors"]
    sharded = "model.safetensors.index.json" in names and "model.safetensors" not in names
    assert single or sharded, names  # one writer's whole checkpoint, never a mix of two
    if sharded:
        index = json.loads((folder / "model.safetensors.index.json").read_text())
        assert sorted(set(index["weight_map"].values())) == [n for n in names if n.startswith("model-")]


# -- 13, 21. long names and full disks name the output -------------------------------------------------------


@pytest.mark.parametrize("length", [240, 250])
def test_a_long_output_name_is_written(runner, tmp_path, weights, length):
    folder = tmp_path / ("o" * length)
    assert invoke(runner, "convert", weights, "-o", folder).exit_code == 0
    assert loads(runner, folder)
    assert invoke(runner, "init", TINY, "-o", tmp_path / ("i" * length)).exit_code == 0


def test_a_full_disk_names_the_output_folder(runner, weights, small_disk):
    folder = small_disk / "m"
    error = one_line_error(invoke(runner, "convert", weights, "-o", folder))  # 483 KiB of weights
    assert error == f"error: {folder}: cannot write model.safetensors: No space left on device"
    assert list(small_disk.iterdir()) == []
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    error = one_line_error(invoke(runner, "convert", weights, "-o", folder, "--force"))
    assert "m: cannot write model.safetensors: No space left on device" in error
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
