"""A GGUF file's byte-level BPE vocabulary (`tokenizer.ggml.model` gpt2, as gguf/vocab.py and llama.cpp's converter
write it) as a `tokenizers.Tokenizer`, for `tfm generate FILE.gguf --prompt`, read as llama.cpp reads it: every
id's token (but the unused `[PAD{i}]`), the merges, the control tokens special and the user-defined ones added, the
split `tokenizer.ggml.pre` names (llama-bpe also takes a word its vocabulary holds whole, ignoring the merges), and
the BOS and EOS the file says to add (llama-bpe adds BOS where the file does not say)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..text import shown
from .header import read_header
from .vocab import _SPLITS

KEYS = ("tokens", "token_type", "merges")
WHOLE = frozenset(f"tokenizer.ggml.{key}" for key in KEYS)
SPLITS: dict[str, str | None] = {"gpt-2": None} | {name: regex for regex, name in _SPLITS.items()}
IGNORE_MERGES = {"llama-bpe"}  # llama.cpp's LLAMA3 pre-type: ignore_merges, add_bos by default
CONTROL, USER_DEFINED, UNUSED = 3, 4, 5  # gguf.TokenType


def gguf_tokenizer(path: Path) -> Any:
    """The file's vocabulary as a `tokenizers.Tokenizer`; None when it holds none (`no_vocab`, or no key)."""
    meta = read_header(path, WHOLE).metadata
    model = meta.get("tokenizer.ggml.model")
    if model is None or model == "no_vocab":
        return None
    if model != "gpt2":
        raise SpecError(
            f"{path}: key 'tokenizer.ggml.model': {shown(str(model))}: tfm reads text through byte-level "
            "BPE vocabularies (gpt2) only; give token ids: --input"
        )
    pre = meta.get("tokenizer.ggml.pre")
    if pre not in SPLITS:
        told = "missing" if pre is None else shown(str(pre))
        raise SpecError(
            f"{path}: key 'tokenizer.ggml.pre': {told}, expected a split tfm knows ({', '.join(SPLITS)}); "
            "give token ids: --input"
        )
    tokens, types, merges = (
        _strings(meta, path, "tokens"),
        _ints(meta, path, "token_type"),
        _strings(meta, path, "merges"),
    )
    if len(types) != len(tokens):
        raise SpecError(f"{path}: key 'tokenizer.ggml.token_type': {len(types):,} types for {len(tokens):,} tokens")
    pairs = [tuple(m.split(" ")) for m in merges]
    if any(len(pair) != 2 for pair in pairs):
        raise SpecError(f"{path}: key 'tokenizer.ggml.merges': expected pairs 'a b' of tokens")
    return _build(path, meta, str(pre), tokens, types, pairs)


def _build(path: Path, meta: dict, pre: str, tokens: list[str], types: list[int], pairs: list) -> Any:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    def made() -> Any:
        vocab = {token: i for i, (token, kind) in enumerate(zip(tokens, types, strict=True)) if kind != UNUSED}
        tok = Tokenizer(models.BPE(vocab, pairs, ignore_merges=pre in IGNORE_MERGES))
        split = SPLITS[pre]
        level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=split is None)
        tok.pre_tokenizer = (
            level
            if split is None
            else pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(split), behavior="isolated"), level])
        )
        tok.decoder = decoders.ByteLevel()
        tok.add_special_tokens(
            [
                AddedToken(t, special=True, normalized=False)
                for t, kind in zip(tokens, types, strict=True)
                if kind == CONTROL
            ]
        )
        tok.add_tokens(
            [
                AddedToken(t, special=False, normalized=False)
                for t, kind in zip(tokens, types, strict=True)
                if kind == USER_DEFINED
            ]
        )
        tok.post_processor = _added(meta, pre, tokens)
        return tok

    return guarded(made, path, "its tokenizer metadata is not a vocabulary the tokenizers library builds")


def _added(meta: dict, pre: str, tokens: list[str]) -> Any:
    """The BOS before and the EOS after each text, where the file says to add them (as a TemplateProcessing)."""
    from tokenizers import processors

    ends = []
    for end, default in (("bos", pre in IGNORE_MERGES), ("eos", False)):
        token_id = meta.get(f"tokenizer.ggml.{end}_token_id")
        if (
            meta.get(f"tokenizer.ggml.add_{end}_token", default) is True
            and isinstance(token_id, int)
            and 0 <= token_id < len(tokens)
        ):
            ends.append({"id": end, "ids": [token_id], "tokens": [tokens[token_id]]})
    if not ends:
        return None
    names = [str(e["id"]) for e in ends]
    single = (["bos"] if "bos" in names else []) + ["$A"] + (["eos"] if "eos" in names else [])
    pair = single + [piece.replace("$A", "$B:1") for piece in single if piece != "bos"]
    return processors.TemplateProcessing(single=single, pair=pair, special_tokens=ends)


def _strings(meta: dict, path: Path, key: str) -> list[str]:
    value = meta.get(f"tokenizer.ggml.{key}")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SpecError(f"{path}: key 'tokenizer.ggml.{key}': expected an array of strings")
    return value


def _ints(meta: dict, path: Path, key: str) -> list[int]:
    value = meta.get(f"tokenizer.ggml.{key}")
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise SpecError(f"{path}: key 'tokenizer.ggml.{key}': expected an array of integers")
    return value


def guarded(call: Callable[[], Any], source: object, what: str) -> Any:
    """call(), the tokenizers library's errors as SpecError naming `source`: its Rust errors are Exceptions, but a
    panic (a regex the library cannot run) arrives as pyo3's PanicException, a BaseException, after Rust's panic
    hook wrote lines of its own to the process's stderr (held back here, so that the error stays one line)."""
    try:
        with _rust_stderr_held():
            return call()
    except Exception as exc:
        raise SpecError(f"{source}: {what} ({shown(str(exc) or type(exc).__name__, 160)})") from None
    except BaseException as exc:
        if type(exc).__name__ != "PanicException":
            raise  # Ctrl-C, SIGTERM, exit
        raise SpecError(f"{source}: {what} (the tokenizers library panicked: {shown(str(exc), 160)})") from None


@contextmanager
def _rust_stderr_held() -> Iterator[None]:
    """File descriptor 2 pointed at the null device for the block (Python's own sys.stderr is flushed first)."""
    try:
        sys.stderr.flush()
        saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError):  # no descriptor 2 (a service), or a closed sys.stderr
        yield
        return
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
