"""`tfm generate FILE.gguf --prompt` on the GGUF file tfm wrote from a folder (issue 40, item 19a): the file's
byte-level BPE vocabulary read back as a tokenizer splits text into the folder's tokenizer.json's ids and decodes
them to the same text, and generating from the file equals generating from the folder."""

from __future__ import annotations

import json

import pytest
from conftest import invoke, one_line_error
from helpers_gguf_vocab import LLAMA3, QWEN2, TEXTS, _convert, _folder, _tokenizer

pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")
tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers library reads tokenizer.json (the text extra)")


def _as_llama3(folder, tok):
    """LLaMA 3's tokenizer.json as it is: words the vocabulary holds taken whole (ignore_merges), BOS added."""
    data = json.loads(tok.to_str())
    data["model"]["ignore_merges"] = True
    bos = {"id": "<|endoftext|>", "ids": [0], "tokens": ["<|endoftext|>"]}
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [
            {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
            {"Sequence": {"id": "B", "type_id": 1}},
        ],
        "special_tokens": {"<|endoftext|>": bos},
    }
    (folder / "tokenizer.json").write_text(json.dumps(data))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"})
    )
    return tokenizers.Tokenizer.from_str(json.dumps(data))


@pytest.mark.parametrize("split", [None, LLAMA3, QWEN2], ids=["gpt-2", "llama-bpe", "qwen2"])
def test_the_gguf_files_text_round_trip_equals_the_folders(tmp_path, runner, split):
    from transformer_cli.gguf.tokenizer import gguf_tokenizer

    tok = _tokenizer(split)
    folder, _ = _folder(tmp_path, tok)
    if split == LLAMA3:
        tok = _as_llama3(folder, tok)
    _convert(runner, folder, tmp_path / "m.gguf")
    theirs = gguf_tokenizer(tmp_path / "m.gguf")
    for text in TEXTS:
        ids = tok.encode(text).ids
        assert theirs.encode(text).ids == ids, text
        assert theirs.decode(ids, skip_special_tokens=True) == tok.decode(ids, skip_special_tokens=True), text
    if split == LLAMA3:
        assert theirs.encode("hello").ids[0] == 0  # the BOS
    for source in (folder, tmp_path / "m.gguf"):  # the same prompt ids, new tokens and text from both
        result = invoke(runner, "generate", source, "--prompt", TEXTS[0], "-k", "4", "--json", "--dtype", "float64")
        assert result.exit_code == 0, result.output
        said = {key: json.loads(result.stdout)[key] for key in ("prompt_tokens", "tokens", "stopped", "text")}
        if source == folder:
            expected = said
    assert said == expected and said["prompt_tokens"] == len(tok.encode(TEXTS[0]).ids)


def test_the_control_a_file_whose_merges_differ_splits_otherwise(tmp_path, runner):
    """The check can fail: the GGUF written from the same vocabulary with its merges reversed."""
    from transformer_cli.gguf.tokenizer import gguf_tokenizer

    tok = _tokenizer(LLAMA3)
    folder, _ = _folder(tmp_path, tok)
    data = json.loads((folder / "tokenizer.json").read_text())
    data["model"]["merges"] = data["model"]["merges"][::-1]
    (folder / "tokenizer.json").write_text(json.dumps(data))
    _convert(runner, folder, tmp_path / "m.gguf")
    theirs = gguf_tokenizer(tmp_path / "m.gguf")
    assert any(theirs.encode(t).ids != tok.encode(t).ids for t in TEXTS)


def test_a_gguf_file_without_a_vocabulary_refuses_text_in_one_line(tmp_path, runner):
    from tokenizers import Tokenizer, models

    folder, _ = _folder(tmp_path, _tokenizer(None))
    Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]")).save(str(folder / "tokenizer.json"))
    _convert(runner, folder, tmp_path / "m.gguf")
    error = one_line_error(invoke(runner, "generate", tmp_path / "m.gguf", "--prompt", "hello"))
    assert error == (
        f"error: --prompt: {tmp_path / 'm.gguf'} holds no vocabulary (tokenizer.ggml.model no_vocab); "
        "give token ids: --input"
    )
