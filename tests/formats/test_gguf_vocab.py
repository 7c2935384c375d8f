"""The tokenizer in the GGUF file tfm writes from a folder: the byte-level BPE vocabulary, merges, token types and
pre-tokenizer as llama.cpp's converter writes them, checked by the independent reader of such files, transformers'
GGUF tokenizer (`AutoTokenizer.from_pretrained(folder, gguf_file=...)`): it must split text into the same ids as
the folder's own tokenizer.json does (the `tokenizers` library)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers_gguf_vocab import LLAMA3, QWEN2, TEXTS, _convert, _folder, _tokenizer

from transformer_cli.cli import app

pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")
tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers library reads tokenizer.json (the text extra)")


def _theirs(folder, name):
    import transformers

    return transformers.AutoTokenizer.from_pretrained(str(folder), gguf_file=name)


@pytest.mark.parametrize(("split", "pre"), [(None, "gpt-2"), (LLAMA3, "llama-bpe"), (QWEN2, "qwen2")])
def test_the_files_tokenizer_splits_text_as_the_folders_does(tmp_path, runner, split, pre):
    import gguf

    tok = _tokenizer(split)
    folder, V = _folder(tmp_path, tok)
    said = _convert(runner, folder, folder / "m.gguf")
    assert f"byte-level BPE, {V:,} tokens" in said and f"pre-tokenizer {pre}" in said
    reader = gguf.GGUFReader(folder / "m.gguf")
    fields = {name: reader.fields[name].contents() for name in reader.fields if name.startswith("tokenizer.")}
    assert fields["tokenizer.ggml.model"] == "gpt2" and fields["tokenizer.ggml.pre"] == pre
    vocab = {i: t for t, i in tok.get_vocab().items()}
    assert fields["tokenizer.ggml.tokens"] == [vocab.get(i, f"[PAD{i}]") for i in range(V)]
    types = fields["tokenizer.ggml.token_type"]
    assert types[0] == gguf.TokenType.CONTROL and types[-1] == gguf.TokenType.UNUSED
    assert set(types[1:-3]) == {gguf.TokenType.NORMAL}
    merges = json.loads(tok.to_str())["model"]["merges"]
    assert fields["tokenizer.ggml.merges"] == [" ".join(m) if isinstance(m, list) else m for m in merges]
    assert fields["tokenizer.ggml.eos_token_id"] == 0
    theirs = _theirs(folder, "m.gguf")
    for text in TEXTS:
        assert theirs(text, add_special_tokens=False)["input_ids"] == tok.encode(text).ids, text


def test_the_control_merges_out_of_order_split_text_otherwise(tmp_path, runner):
    """The check can fail: the same vocabulary with its merges' priorities reversed makes other ids."""
    tok = _tokenizer(LLAMA3)
    folder, _ = _folder(tmp_path, tok)
    data = json.loads((folder / "tokenizer.json").read_text())
    data["model"]["merges"] = data["model"]["merges"][::-1]
    (folder / "tokenizer.json").write_text(json.dumps(data))
    _convert(runner, folder, folder / "m.gguf")
    theirs = _theirs(folder, "m.gguf")
    assert any(theirs(t, add_special_tokens=False)["input_ids"] != tok.encode(t).ids for t in TEXTS)


def test_a_vocabulary_tfm_does_not_write_is_marked_no_vocab_and_said(tmp_path, runner):
    import gguf
    from tokenizers import Tokenizer, models

    tok = _tokenizer(None)
    folder, _ = _folder(tmp_path, tok)
    Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]")).save(str(folder / "tokenizer.json"))
    said = _convert(runner, folder, folder / "m.gguf")
    assert "tokenizer not written (tfm writes byte-level BPE vocabularies; tokenizer.json's is WordPiece)" in said
    reader = gguf.GGUFReader(folder / "m.gguf")
    assert reader.fields["tokenizer.ggml.model"].contents() == "no_vocab"
    assert "tokenizer.ggml.tokens" not in reader.fields


def test_a_tokenizer_larger_than_the_model_is_refused_in_one_line_nothing_written(tmp_path, runner):
    tok = _tokenizer(None)
    folder, V = _folder(tmp_path, tok, extra=-5)
    result = runner.invoke(app, ["convert", str(folder), "-o", str(tmp_path / "m.gguf")])
    assert result.exit_code == 2 and f"is past the model's vocabulary of {V}" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "m.gguf").exists()
    assert np.all([p.name != "m.gguf" for p in folder.iterdir()])
