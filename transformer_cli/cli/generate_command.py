"""`tfm generate`: continue prompts token by token with the key/value cache (model/generate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..errors import SpecError
from .common import (
    EXIT_CODES,
    RUN_DTYPE,
    DType,
    ForceOpt,
    JsonOpt,
    MaxMemoryOpt,
    RunDTypeOpt,
    SpecArg,
    WeightsOpt,
    app,
    err,
    handled,
    load,
    out,
    print_json,
    weights_of,
)


@app.command(epilog=EXIT_CODES)
def generate(
    spec_path: SpecArg = None,
    input_path: Annotated[
        Optional[Path], typer.Option("--input", "-i", help="The prompts' token ids .npy, (p,) or (b, p).")
    ] = None,
    prompt: Annotated[
        Optional[str], typer.Option("--prompt", help="The prompt as text (the folder's tokenizer.json encodes it).")
    ] = None,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", "-k", help="Tokens to add at most.")] = 16,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write the sequences .npy (b, p + new), int64.")
    ] = None,
    temperature: Annotated[
        float, typer.Option("--temperature", help="Sample at this temperature [default: 0, greedy].")
    ] = 0.0,
    top_k: Annotated[
        Optional[int], typer.Option("--top-k", help="Sample from the k likeliest (with --temperature).")
    ] = None,
    top_p: Annotated[
        Optional[float], typer.Option("--top-p", help="Sample from the likeliest reaching p (with --temperature).")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", "-s", help="Seed of the sampling (and of seeded weights).")] = 0,
    stop: Annotated[
        Optional[list[int]],
        typer.Option("--stop", help="A stop token id (repeatable) [default: the model's eos_token_id]."),
    ] = None,
    weights: WeightsOpt = None,
    dtype: RunDTypeOpt = None,
    max_memory: MaxMemoryOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Generate tokens after prompts: greedy by default, or sampled (--temperature, --top-k, --top-p, --seed).

    The prompt goes through the parallel pass once, then each new token through the key/value cache; a sequence
    stops at the model's stop tokens (its generation_config.json or config.json eos_token_id, or --stop) and is
    padded after. On a terminal the tokens are printed as they come. With a tokenizer.json in the folder (or a
    GGUF file's byte-level BPE vocabulary), --prompt takes text and the text is printed back; --input's token ids
    come back as ids (the tokenizer is not read). An encoder-decoder reads --input as its source.

    \b
    Examples:
      tfm generate ./tiny-llama --input ids.npy --max-new-tokens 20 -o out.npy
      tfm generate ./tiny-llama --prompt "Once upon a time" -k 30 --temperature 0.8 --top-p 0.9 --seed 1
    """
    from ..api.models import Model
    from ..io.arrays import save_npy
    from ..io.outputs import check_output_path
    from ..options import count
    from ..tasks.generation import decode, tokenizer_file
    from ..tasks.generation import tokenizer as read_tokenizer
    from ..text import escaped as shown
    from .common import check_npy_output, spec_json

    with handled(json_out):
        spec, source = load(spec_path, weights)
        weights = weights_of(spec_path, weights)
        dtype = dtype or (DType.float32 if weights is not None and weights.is_dir() else RUN_DTYPE)
        check_npy_output(output)
        if output is not None:
            check_output_path(output, [p for p in (spec_path, input_path, weights) if p], force)
        # text in, text out: token ids given, the tokenizer is never read (it may be large, or not this model's)
        tokenizer = read_tokenizer(spec_path) if prompt is not None and input_path is None else None
        ids = _prompts(input_path, prompt, tokenizer, spec, tokenizer_file(spec_path))
        count(max_new_tokens, "max-new-tokens")  # (before the estimate; the library checks it as generate does)
        model = Model(spec, source, spec_path, weights, seed)
        streaming = out.is_terminal and not json_out and ids.shape[0] == 1
        result = model.generate(
            ids,
            max_new_tokens,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
            stop=list(stop) if stop else None,
            dtype=dtype.value,
            say=_say,
            max_memory=max_memory,
            on_token=(lambda t: _print_token(t, tokenizer, tokenizer_file(spec_path))) if streaming else None,
        )
        if output is not None:
            save_npy(output, result.sequences, overwrite=force)
        texts = (
            None
            if tokenizer is None
            else [decode(tokenizer, row.tolist(), tokenizer_file(spec_path)) for row in result.tokens]
        )
    if streaming:
        out.print()
    data: dict[str, Any] = spec_json(spec) | result.to_dict()  # (what Model.generate returns)
    data |= {"output": str(output) if output else None, "notes": data.pop("notes")}  # the file written, then notes
    if texts is not None:
        data["text"] = texts
    if json_out:
        print_json(data)
        return
    if not streaming:
        for i, row in enumerate(result.tokens):
            shown_row = texts[i] if texts is not None else " ".join(str(int(t)) for t in row)
            out.print(shown(shown_row), highlight=False, soft_wrap=True)
    why = "a stop token" if result.stopped.all() else f"{data['new_tokens']} new tokens"
    err.print(f"{ids.shape[0]} sequence(s), {result.prompt} prompt tokens, ended at {why}", highlight=False)
    if output is not None:
        out.print(f"wrote {shown(output)}", highlight=False)


def _say(note: str) -> None:
    from ..text import escaped as shown

    err.print(shown(note), soft_wrap=True, highlight=False)


def _print_token(token, tokenizer, source) -> None:
    from ..tasks.generation import decode

    piece = decode(tokenizer, [int(token[0])], source) if tokenizer is not None else f"{int(token[0])} "
    out.file.write(piece)
    out.file.flush()


def _prompts(input_path: Path | None, prompt: str | None, tokenizer, spec, source):
    """The prompts (b, p) as int64 ids: the .npy's (its header checked before its data is read), or the text's."""
    import numpy as np

    from ..io.arrays import open_npy, peek_npy
    from ..tasks.generation import check_prompts, encode

    if (input_path is None) == (prompt is None):
        raise SpecError("give the prompt as token ids (--input ids.npy) or as text (--prompt), one of the two")
    if prompt is not None:
        return check_prompts(np.asarray([encode(tokenizer, prompt, source)], dtype=np.int64), spec, "--prompt")
    assert input_path is not None
    header = peek_npy(input_path)
    if not np.issubdtype(header.dtype, np.integer) or len(header.shape) not in (1, 2):
        raise SpecError(f"{input_path}: expected integer token ids (p,) or (b, p), got {header.dtype} {header.shape}")
    return check_prompts(np.asarray(open_npy(input_path)), spec, str(input_path))
