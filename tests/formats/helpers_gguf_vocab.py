"""Tokenizer folders (Llama 3's and Qwen2's byte-level BPE) and their conversion to GGUF: what the GGUF vocabulary and
text tests share."""

from __future__ import annotations

import json

from transformer_cli.cli import app

TEXTS = [
    "Hello world, 12345 tokens!",
    "  two spaces\nand a new line",
    "ünïcödé and émoji 🙂",
    "x<|endoftext|>y",
    "numbers 2026 and 31415926",
]


CORPUS = [
    f"the {w} number {n} is {n * 7} and {n * 31} words, hello world" for n in range(300) for w in ("big", "small")
]


LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)  # LLaMA 3's split, as its tokenizer.json has it


QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")


def _tokenizer(split: str | None):
    """A byte-level BPE trained here: GPT-2's split (ByteLevel's regex), or a Split by `split` before it."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=split is None)
    tok.pre_tokenizer = (
        level
        if split is None
        else pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(split), behavior="isolated"), level])
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def _folder(tmp_path, tok, extra: int = 3):
    """A GPT-2 folder whose vocabulary is the tokenizer's and `extra` ids more (the converter pads those)."""
    import torch
    import transformers

    V = tok.get_vocab_size() + extra
    cfg = transformers.GPT2Config(
        vocab_size=V, n_embd=32, n_layer=1, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    torch.manual_seed(0)
    folder = tmp_path / "hf"
    transformers.GPT2LMHeadModel(cfg).save_pretrained(folder)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    return folder, V


def _convert(runner, folder, out):
    result = runner.invoke(app, ["convert", str(folder), "-o", str(out), "--type", "f32"])
    assert result.exit_code == 0, result.output
    return result.stdout
