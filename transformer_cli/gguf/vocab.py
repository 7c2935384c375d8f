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

from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..files import read_bounded
from ..io.safetensors_io import parse_json
from ..text import shown

MAX_TOKENIZER_BYTES = 64 << 20  # real tokenizer.json files: LLaMA 3's is 9 MB, Gemma 3's 33 MB
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
    data = read_json(path, "a tokenizer.json")
    model, decoder = (part if isinstance(part := data.get(key), dict) else {} for key in ("model", "decoder"))
    kind, fallback = model.get("type"), bool(model.get("byte_fallback"))
    if kind != "BPE" or fallback or decoder.get("type") != "ByteLevel":
        writer.add_tokenizer_model("no_vocab")
        shown = "BPE with byte fallback" if kind == "BPE" and fallback else str(kind or "unknown")
        return f"tokenizer not written (tfm writes byte-level BPE vocabularies; {path.name}'s is {shown}): no_vocab"
    tokens, types = _tokens(path, model, data.get("added_tokens") or [], V)
    merges = model.get("merges") or []
    if not isinstance(merges, list) or not all(isinstance(m, str) or _pair(m) for m in merges):
        raise SpecError(f"{path}: key 'model.merges': expected a list of merges ('a b' or [a, b])")
    _check_post_processor(path, data.get("post_processor"))
    writer.add_tokenizer_model("gpt2")
    pre = _pre_tokenizer(path, data.get("pre_tokenizer"))
    if pre is not None:
        writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    _special_tokens(writer, folder, V)
    split = f"pre-tokenizer {pre}" if pre else "pre-tokenizer not recognised: llama.cpp splits by its default"
    return f"tokenizer: byte-level BPE, {len(tokens):,} tokens, {len(merges):,} merges, {split}"


def _tokens(path: Path, model: dict, added: list, V: int) -> tuple[list[str], list[int]]:
    """Each id's token and type up to V: the vocabulary's normal, added ones control (special) or user-defined,
    the ids no token has unused `[PAD{i}]` (the converter's padding)."""
    import gguf

    if not isinstance(added, list):
        raise SpecError(f"{path}: key 'added_tokens': expected a list of tokens")
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
        raise SpecError(
            f"{path}: token id {max(past)} is past the model's vocabulary of {V} (vocab_size): the "
            "tokenizer is not this model's"
        )
    tokens = [by_id.get(i, (f"[PAD{i}]", gguf.TokenType.UNUSED)) for i in range(V)]
    return [text for text, _ in tokens], [int(kind) for _, kind in tokens]


def _pre_tokenizer(path: Path, pre: Any) -> str | None:
    """llama.cpp's name for the tokenizer's split: ByteLevel with its regex (GPT-2's), or a Split by a known regex
    before a ByteLevel without one; None for any other."""
    if not isinstance(pre, dict):
        return None
    if pre.get("type") == "ByteLevel":
        return "gpt-2" if pre.get("use_regex", True) else None
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
    if not isinstance(steps, list) or len(steps) != 2:
        return None
    if not all(isinstance(step, dict) for step in steps):
        raise SpecError(f"{path}: key 'pre_tokenizer.pretokenizers': expected a list of objects")
    split, level = steps
    if split.get("type") != "Split" or level.get("type") != "ByteLevel" or level.get("use_regex", True):
        return None
    pattern = split.get("pattern")
    regex = pattern.get("Regex") if isinstance(pattern, dict) else None
    return _SPLITS.get(regex) if isinstance(regex, str) else None


def read_json(path: Path, kind: str) -> Any:
    """A tokenizer's JSON file: a regular file of at most MAX_TOKENIZER_BYTES holding strict JSON, an object."""

    try:
        data = parse_json(read_bounded(path, MAX_TOKENIZER_BYTES, kind, SpecError))
    except ValueError as exc:
        raise SpecError(f"{path}: not JSON: {shown(str(exc), 160)}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _pair(merge: Any) -> bool:
    return isinstance(merge, list) and len(merge) == 2 and all(isinstance(part, str) for part in merge)


def _check_post_processor(path: Path, post: Any) -> None:
    """The post-processor's parts that llama.cpp's converter reads (the gguf package's SpecialVocab) are objects
    and lists where it expects them."""
    if post is None:
        return
    steps = post.get("processors", [post]) if isinstance(post, dict) else None
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        raise SpecError(f"{path}: key 'post_processor': expected an object (its processors a list of objects)")
    for step in steps:
        for key in ("single", "pair"):
            parts = step.get(key, [])
            if not isinstance(parts, list) or not all(_piece(part) for part in parts):
                raise SpecError(f"{path}: key 'post_processor.{key}': expected a list of template pieces (objects)")
        for key in ("cls", "sep"):
            if key in step and not (isinstance(step[key], list) and step[key]):
                raise SpecError(f"{path}: key 'post_processor.{key}': expected a [token, id] pair")


def _piece(part: Any) -> bool:
    """A template's piece: an object whose SpecialToken or Sequence, if any, is an object."""
    return isinstance(part, dict) and all(isinstance(part.get(k, {}), dict) for k in ("SpecialToken", "Sequence"))


def _special_tokens(writer: Any, folder: Path, V: int) -> None:
    """The special ids, their add_*_token flags and the chat template as the gguf package's SpecialVocab reads them
    (the files it reads checked first, each error naming its file); add_bos_token written false where the
    tokenizer adds no BOS, so that llama.cpp does not add one by the split's default."""
    import gguf

    for name, kind in (("tokenizer_config.json", "a tokenizer_config.json"), ("chat_template.json", "a chat template")):
        if (folder / name).exists():
            read_json(folder / name, kind)
    if (folder / "chat_template.jinja").exists():
        read_bounded(folder / "chat_template.jinja", MAX_TOKENIZER_BYTES, "a chat template", SpecError)
    try:
        special = gguf.SpecialVocab(folder, load_merges=False, n_vocab=V)
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError, OSError) as exc:
        raise SpecError(
            f"{folder}: llama.cpp's converter cannot read its special tokens (tokenizer_config.json, "
            f"config.json's *_token_id): {shown(str(exc), 160)}"
        ) from None
    special.add_to_gguf(writer, quiet=True)
    if "bos" not in special.add_special_token:
        writer.add_add_bos_token(False)


__all__ = ["MAX_TOKENIZER_BYTES", "add_vocabulary", "read_json"]
