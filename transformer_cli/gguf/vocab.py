"""A Hugging Face folder's tokenizer in the GGUF file tfm writes from it, as llama.cpp's converter writes a
byte-level BPE vocabulary (TextModel.get_vocab_base, GPT-2's kind, which LLaMA 3, Qwen, gpt-oss, Falcon, StarCoder2,
OLMo 2 and GPT-NeoX use): `tokenizer.ggml.model` gpt2, every id's token (ids past the tokenizer's, up to the model's
vocabulary, as the converter's `[PAD{i}]`, unused), its type (the added tokens control when special, else
user-defined), the merges, the special ids and flags and the chat template (the gguf package's SpecialVocab), and
the pre-tokenizer where tfm recognises its regex (GPT-2's, LLaMA 3's, Qwen2's: llama.cpp's `gpt-2`, `llama-bpe`,
`qwen2`). The converter names the pre-tokenizer by hashing how the tokenizer splits a test text, which needs the
tokenizer itself; where the regex is another, the key is left out and llama.cpp splits by its default.

Other vocabularies (SentencePiece's, with byte fallback, WordPiece, Unigram) need the tokenizer's own library to
score their pieces as the converter does: the file is marked `no_vocab` (llama.cpp loads it, without text), and
so is a file written without a folder's tokenizer.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import SpecError

_WORDS, _REST = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
)
_SPLITS = {_WORDS + r"\p{N}{1,3}" + _REST: "llama-bpe", _WORDS + r"\p{N}" + _REST: "qwen2"}  # their Split regexes


def add_vocabulary(writer: Any, folder: Path | None, V: int) -> str:
    """Add the folder's tokenizer to `writer` (a gguf.GGUFWriter); returns what was written, for the user."""
    path = folder / "tokenizer.json" if folder is not None else None
    if folder is None or path is None or not path.is_file():  # (path None exactly when folder is)
        writer.add_tokenizer_model("no_vocab")
        return "no tokenizer (no tokenizer.json): the file is marked no_vocab"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path}: not a readable tokenizer.json ({exc})") from None
    data = data if isinstance(data, dict) else {}
    model, decoder = (part if isinstance(part := data.get(key), dict) else {} for key in ("model", "decoder"))
    kind, fallback = model.get("type"), bool(model.get("byte_fallback"))
    if kind != "BPE" or fallback or decoder.get("type") != "ByteLevel":
        writer.add_tokenizer_model("no_vocab")
        shown = "BPE with byte fallback" if kind == "BPE" and fallback else str(kind or "unknown")
        return f"tokenizer not written (tfm writes byte-level BPE vocabularies; {path.name}'s is {shown}): no_vocab"
    tokens, types = _tokens(path, model, data.get("added_tokens") or [], V)
    merges = model.get("merges") or []
    writer.add_tokenizer_model("gpt2")
    pre = _pre_tokenizer(data.get("pre_tokenizer"))
    if pre is not None:
        writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    import gguf

    gguf.SpecialVocab(folder, load_merges=False, n_vocab=V).add_to_gguf(writer, quiet=True)
    split = f"pre-tokenizer {pre}" if pre else "pre-tokenizer not recognised: llama.cpp splits by its default"
    return f"tokenizer: byte-level BPE, {len(tokens):,} tokens, {len(merges):,} merges, {split}"


def _tokens(path: Path, model: dict, added: list, V: int) -> tuple[list[str], list[int]]:
    """Each id's token and type up to V: the vocabulary's normal, added ones control (special) or user-defined,
    the ids no token has unused `[PAD{i}]` (the converter's padding)."""
    import gguf

    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not all(isinstance(i, int) for i in vocab.values()):
        raise SpecError(f"{path}: key 'model.vocab': expected an object of tokens to ids")
    by_id: dict[int, tuple[str, int]] = {i: (text, gguf.TokenType.NORMAL) for text, i in vocab.items()}
    for token in added:
        if not isinstance(token, dict) or not isinstance(token.get("id"), int) or "content" not in token:
            raise SpecError(f"{path}: key 'added_tokens': expected objects with an id and a content, got {token!r}")
        kind = gguf.TokenType.CONTROL if token.get("special") else gguf.TokenType.USER_DEFINED
        by_id[token["id"]] = (str(token["content"]), kind)
    past = [i for i in by_id if not 0 <= i < V]
    if past:
        raise SpecError(f"{path}: token id {max(past)} is past the model's vocabulary of {V} (vocab_size): the "
                        "tokenizer is not this model's")  # fmt: skip
    tokens = [by_id.get(i, (f"[PAD{i}]", gguf.TokenType.UNUSED)) for i in range(V)]
    return [text for text, _ in tokens], [int(kind) for _, kind in tokens]


def _pre_tokenizer(pre: Any) -> str | None:
    """llama.cpp's name for the tokenizer's split: ByteLevel with its regex (GPT-2's), or a Split by a known regex
    before a ByteLevel without one; None for any other."""
    if not isinstance(pre, dict):
        return None
    if pre.get("type") == "ByteLevel":
        return "gpt-2" if pre.get("use_regex", True) else None
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
    if not isinstance(steps, list) or len(steps) != 2:
        return None
    split, level = steps
    if split.get("type") != "Split" or level.get("type") != "ByteLevel" or level.get("use_regex", True):
        return None
    regex = (split.get("pattern") or {}).get("Regex")
    return _SPLITS.get(regex) if isinstance(regex, str) else None


__all__ = ["add_vocabulary"]
