"""GGUF files whose metadata and tensors disagree, or that lack what the model needs: each refused in one line
naming the file and what is missing, by every command alike (count says what run and generate will say)."""

from __future__ import annotations

import numpy as np
import pytest
from gguf_tiny import tensors, tiny_llama

from transformer_cli.cli import app

pytest.importorskip("gguf")


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32])
def test_integer_tensors_get_one_verdict_from_count_plan_run_and_generate(tmp_path, runner, dtype):
    from gguf import GGUFReader

    path = tiny_llama(tmp_path / "m.gguf", dtype=dtype)
    kind = {np.int8: "I8", np.int16: "I16", np.int32: "I32"}[dtype]
    assert {t.tensor_type.name for t in GGUFReader(path).tensors} == {kind}  # (the package reads them so)
    np.save(tmp_path / "ids.npy", np.array([[1, 2, 3]]))
    ids = ["--input", str(tmp_path / "ids.npy")]
    for command in (["count", str(path)], ["plan", str(path)], ["run", str(path), *ids, "-o", str(tmp_path / "y.npy")],
                    ["generate", str(path), *ids, "--max-new-tokens", "2", "-o", str(tmp_path / "g.npy")]):  # fmt: skip
        result = runner.invoke(app, command)
        assert result.exit_code == 2, (command, result.output)
        assert result.stderr.count("\n") == 1 and f"is of integer type {kind}, expected weights" in result.stderr
    assert not (tmp_path / "y.npy").exists() and not (tmp_path / "g.npy").exists()


def test_the_control_float_tensors_count_and_run(tmp_path, runner):
    path = tiny_llama(tmp_path / "m.gguf")
    np.save(tmp_path / "ids.npy", np.array([[1, 2, 3]]))
    counted = runner.invoke(app, ["count", str(path)])
    assert counted.exit_code == 0 and "every tensor fits" in counted.stdout
    ran = runner.invoke(app, ["run", str(path), "--input", str(tmp_path / "ids.npy"), "-o", str(tmp_path / "y.npy")])
    assert ran.exit_code == 0, ran.output


def test_no_vocabulary_size_anywhere_is_one_line(tmp_path, runner):
    """No {arch}.vocab_size, no tokenizer.ggml.tokens, no token_embd.weight: V is nowhere (a KeyError before)."""
    from transformer_cli.errors import SpecError
    from transformer_cli.gguf.model import spec_from_gguf

    held = tensors()
    del held["token_embd.weight"]
    path = tiny_llama(tmp_path / "m.gguf", held=held, vocab=False)
    with pytest.raises(SpecError):
        spec_from_gguf(path)
    result = runner.invoke(app, ["count", str(path)])
    assert result.exit_code == 2 and result.stderr == (
        f"error: {path}: the vocabulary size is not in the file: no llama.vocab_size, no tokenizer.ggml.tokens, no "
        "tensor token_embd.weight\n"
    )
    control = tiny_llama(tmp_path / "control.gguf", vocab=False)  # (the embedding's rows say it)
    assert spec_from_gguf(control).V == 12
