"""`tfm convert`'s outputs (issue 40, items 10 and 20): a folder written over keeps the user's own files byte for
byte, and an output named as a file `convert` does not write is refused, not made a folder of that name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import invoke, one_line_error
from helpers_folder_outputs import snapshot

TINY = Path(__file__).parents[2] / "examples" / "hf" / "tiny-llama"


@pytest.fixture
def source(runner, tmp_path) -> Path:
    """The tiny LLaMA as a Hugging Face folder with a README.md and notes.txt of its own."""
    folder = tmp_path / "src"
    assert invoke(runner, "init", TINY, "-o", folder).exit_code == 0
    (folder / "README.md").write_text("the source's readme\n")
    (folder / "notes.txt").write_text("the source's notes\n")
    (folder / "generation_config.json").write_text('{"eos_token_id": 2}\n')
    return folder


def _users(folder: Path) -> dict[str, str]:
    folder.mkdir()
    (folder / "README.md").write_bytes(b"my readme \x00\xff\n")
    (folder / "notes.txt").write_bytes(b"my notes\r\n")
    (folder / "generation_config.json").write_text('{"eos_token_id": 7}\n')
    return snapshot(folder)


def test_a_folder_converted_into_a_users_folder_keeps_the_users_files(runner, tmp_path, source):
    out = tmp_path / "out"
    mine = _users(out)
    result = invoke(runner, "convert", source, "-o", out, "--force")
    assert result.exit_code == 0, result.output
    after = snapshot(out)
    assert {name: after[name] for name in mine} == mine  # byte for byte
    assert sorted(after) == ["README.md", "config.json", "generation_config.json", "model.safetensors", "notes.txt"]
    for name in mine:
        assert f"kept {out / name}: the output folder's own file, not replaced by the source's" in result.stderr
    assert "README.md" not in result.stdout.replace("\n", "")  # 'wrote' names only what was written
    assert invoke(runner, "count", out).exit_code == 0


def test_a_source_file_the_output_lacks_is_copied(runner, tmp_path, source):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = invoke(runner, "convert", source, "-o", out, "--force", "--json")
    assert result.exit_code == 0, result.output
    assert (out / "README.md").read_bytes() == (source / "README.md").read_bytes()
    assert (out / "notes.txt").read_text() == "mine"
    said = json.loads(result.stdout)
    assert str(out / "README.md") in said["written"] and said["kept"] == [str(out / "notes.txt")]


def test_tfms_file_converted_into_a_users_folder_keeps_its_generation_config(runner, tmp_path, source):
    weights = tmp_path / "w.safetensors"
    assert invoke(runner, "convert", source, "-o", weights).exit_code == 0
    out = tmp_path / "out"
    mine = _users(out)
    result = invoke(runner, "convert", weights, "-o", out, "--force", "--json")
    assert result.exit_code == 0, result.output
    assert {name: snapshot(out)[name] for name in mine} == mine
    assert f"kept {out / 'generation_config.json'}" in result.stderr


@pytest.mark.parametrize("name", ["out.txt", "model.bin", "weights.PT", "x.json"])
def test_an_output_named_as_a_file_convert_does_not_write_is_refused(runner, tmp_path, source, name):
    before = snapshot(tmp_path)
    error = one_line_error(invoke(runner, "convert", source, "-o", tmp_path / name))
    suffix = Path(name).suffix
    assert error == (
        f"error: {tmp_path / name}: tfm convert writes a folder (a new one named without an extension "
        f"such as '{suffix}', or an existing one), or a .safetensors, .npz or .gguf file"
    )
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Qwen2.5-7B", "plain"])
def test_a_folder_name_with_a_dot_is_a_folder(runner, tmp_path, source, name):
    assert invoke(runner, "convert", source, "-o", tmp_path / name).exit_code == 0
    assert (tmp_path / name / "model.safetensors").is_file()


def test_an_existing_folder_of_any_name_is_written_into(runner, tmp_path, source):
    out = tmp_path / "model.bin"
    out.mkdir()
    assert invoke(runner, "convert", source, "-o", out, "--force").exit_code == 0
    assert (out / "model.safetensors").is_file()


@pytest.mark.parametrize("name", ["again.npz", "again.safetensors"])
def test_tfms_file_to_tfms_file_is_refused_not_made_a_folder(runner, tmp_path, source, name):
    weights = tmp_path / "w.safetensors"
    assert invoke(runner, "convert", source, "-o", weights).exit_code == 0
    before = snapshot(tmp_path)
    error = one_line_error(invoke(runner, "convert", weights, "-o", tmp_path / name))
    assert error == (
        f"error: {tmp_path / name}: tfm's weights file is written from a Hugging Face folder or a GGUF "
        f"file; from {weights} tfm convert writes a folder or a .gguf file"
    )
    assert snapshot(tmp_path) == before
