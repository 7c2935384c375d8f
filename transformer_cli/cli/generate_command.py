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
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", "-k", min=1, help="Tokens to add at most.")] = 16,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write the sequences .npy (b, p + new), int64.")
    ] = None,
    temperature: Annotated[
        float, typer.Option("--temperature", min=0.0, help="Sample at this temperature [default: 0, greedy].")
    ] = 0.0,
    top_k: Annotated[Optional[int], typer.Option("--top-k", min=1, help="Sample from the k likeliest.")] = None,
    top_p: Annotated[
        Optional[float], typer.Option("--top-p", min=0.0, max=1.0, help="Sample from the likeliest reaching p.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", "-s", min=0, help="Seed of the sampling (and of seeded weights).")] = 0,
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
    padded after. On a terminal the tokens are printed as they come. With a tokenizer.json in the folder,
    --prompt takes text and the text is printed back. An encoder-decoder reads --input as its source.

    \b
    Examples:
      tfm generate ./tiny-llama --input ids.npy --max-new-tokens 20 -o out.npy
      tfm generate ./tiny-llama --prompt "Once upon a time" -k 30 --temperature 0.8 --top-p 0.9 --seed 1
    """
    from ..analysis.memory import check_memory
    from ..io.arrays import save_npy
    from ..io.outputs import check_output_path
    from ..model.generate import Sampling
    from ..text import escaped as shown
    from .common import check_npy_output

    with handled(json_out):
        spec, _ = load(spec_path, weights)
        weights = weights_of(spec_path, weights)
        dtype = dtype or (DType.float32 if weights is not None and weights.is_dir() else RUN_DTYPE)
        check_npy_output(output)
        if output is not None:
            check_output_path(output, [p for p in (spec_path, input_path, weights) if p], force)
        tokenizer = _tokenizer(spec_path) if prompt is not None or (spec_path and _has_tokenizer(spec_path)) else None
        ids = _prompts(input_path, prompt, tokenizer, spec)
        check_memory(_estimate(spec, ids.shape, max_new_tokens, dtype.value), max_memory, "this generation")
        config = _generation_config(spec_path, weights)
        stops = list(stop) if stop else _ids(config.get("eos_token_id"))
        sampling = Sampling(temperature, top_k, top_p, seed)
        streaming = out.is_terminal and not json_out and ids.shape[0] == 1
        result = _generate(spec, weights, seed, dtype.value, ids, max_new_tokens, stops, config, sampling,
                           (lambda t: _print_token(t, tokenizer)) if streaming else None)  # fmt: skip
        if output is not None:
            save_npy(output, result.tokens, overwrite=force)
    if streaming:
        out.print()
    data: dict[str, Any] = {"prompt_tokens": result.prompt, "new_tokens": int(result.new_tokens.shape[1]),
                            "stop_tokens": stops, "stopped": result.stopped.tolist(),
                            "tokens": result.new_tokens.tolist(),
                            "output": str(output) if output else None}  # fmt: skip
    if tokenizer is not None:
        data["text"] = [tokenizer.decode(row.tolist(), skip_special_tokens=True) for row in result.new_tokens]
    if json_out:
        print_json(data)
        return
    if not streaming:
        for i, row in enumerate(result.new_tokens):
            shown_row = data["text"][i] if tokenizer is not None else " ".join(str(int(t)) for t in row)
            out.print(shown(shown_row), highlight=False, soft_wrap=True)
    why = "a stop token" if result.stopped.all() else f"{data['new_tokens']} new tokens"
    err.print(f"{ids.shape[0]} sequence(s), {result.prompt} prompt tokens, ended at {why}", highlight=False)
    if output is not None:
        out.print(f"wrote {shown(output)}", highlight=False)


def _estimate(spec, shape: tuple[int, int], new: int, dtype: str):
    """At most a forward pass over the prompt and every new token (the prefill's peak bounds it; the cache is one
    block's keys and values per block)."""
    from ..analysis.memory import estimate_encoder_decoder, estimate_forward
    from ..spec.stacks import encoder

    b, p = shape
    if encoder(spec) is None:
        return estimate_forward(spec, b, p + new, dtype)
    return estimate_encoder_decoder(spec, b, p, new + 1, dtype)


def _generate(spec, weights, seed, dtype, ids, max_new_tokens, stops, config, sampling, on_token):
    import numpy as np

    from ..model.generate import generate
    from ..model.runner import get_weights
    from ..model.transformer import Transformer
    from ..spec.stacks import encoder

    loaded, _ = get_weights(spec, weights, seed)
    pad = config.get("pad_token_id")
    pad = pad if isinstance(pad, int) else None
    if encoder(spec) is None:
        return generate(Transformer(spec, loaded, np.dtype(dtype)), ids, max_new_tokens, stops, pad, sampling,
                        on_token)  # fmt: skip
    from ..model.encoder_decoder import EncoderDecoder

    model = EncoderDecoder(spec, loaded, np.dtype(dtype))
    start = config.get("decoder_start_token_id")
    if not isinstance(start, int):
        raise SpecError(f"{spec.label}: an encoder-decoder generates from decoder_start_token_id, which its config "
                        "does not give")  # fmt: skip
    memory = model.encode(ids)
    begin = np.full((ids.shape[0], 1), start, dtype=np.int64)
    return generate(model.decoder, begin, max_new_tokens, stops, pad, sampling, on_token, memory)


def _print_token(token, tokenizer) -> None:
    piece = (
        tokenizer.decode([int(token[0])], skip_special_tokens=True) if tokenizer is not None else f"{int(token[0])} "
    )
    out.file.write(piece)
    out.file.flush()


def _ids(value: Any) -> list[int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    return []


def _generation_config(spec_path: Path | None, weights: Path | None) -> dict[str, Any]:
    """The stop, padding and start tokens the model's files give: a folder's generation_config.json over its
    config.json, the configs a tfm .safetensors keeps, a GGUF file's tokenizer.ggml ids."""
    from ..files import read_bounded
    from ..hf.config import MAX_CONFIG_BYTES, stored_config

    for path in (spec_path, weights):
        if path is None:
            continue
        if path.is_dir():
            found: dict[str, Any] = {}
            for name in ("config.json", "generation_config.json"):
                file = path / name
                if file.is_file():
                    text = read_bounded(file, MAX_CONFIG_BYTES, f"a {name}", SpecError).decode("utf-8", "replace")
                    found |= stored_config(text, str(file))
            return found
        if path.suffix.lower() == ".gguf":
            from ..gguf.header import read_header

            meta = read_header(path).metadata
            return {key: meta.get(f"tokenizer.ggml.{name}") for key, name in
                    (("eos_token_id", "eos_token_id"), ("pad_token_id", "padding_token_id"))}  # fmt: skip
        if path.suffix.lower() == ".safetensors":
            from ..io.safetensors_io import peek

            kept = peek(path)[1]
            found = {}
            for key in ("hf_config", "hf_generation_config"):
                if key in kept:
                    found |= stored_config(kept[key], f"{path}: metadata '{key}'")
            return found
    return {}


def _has_tokenizer(spec_path: Path) -> bool:
    return spec_path.is_dir() and (spec_path / "tokenizer.json").is_file()


def _tokenizer(spec_path: Path | None):
    """The folder's tokenizer.json, read by the tokenizers library."""
    if spec_path is None or not _has_tokenizer(spec_path):
        raise SpecError(f"--prompt: {spec_path or 'the built-in spec'} has no tokenizer.json; give token ids: --input")
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise SpecError("--prompt: text needs the tokenizers library: pip install 'tfm[text]'") from None
    try:
        return Tokenizer.from_file(str(spec_path / "tokenizer.json"))
    except Exception as e:  # (the library's own message: a Rust error as an Exception)
        raise SpecError(f"{spec_path / 'tokenizer.json'}: not a tokenizer the tokenizers library reads ({e})") from None


def _prompts(input_path: Path | None, prompt: str | None, tokenizer, spec):
    """The prompts (b, p) as int64 ids: the .npy's (checked against V) or the encoded text."""
    import numpy as np

    from ..io.arrays import open_npy, peek_npy

    if (input_path is None) == (prompt is None):
        raise SpecError("give the prompt as token ids (--input ids.npy) or as text (--prompt), one of the two")
    if prompt is not None:
        ids = np.asarray([tokenizer.encode(prompt).ids], dtype=np.int64)
    else:
        assert input_path is not None
        header = peek_npy(input_path)
        if not np.issubdtype(header.dtype, np.integer) or len(header.shape) not in (1, 2):
            raise SpecError(f"{input_path}: expected integer token ids (p,) or (b, p), got {header.dtype} "
                            f"{header.shape}")  # fmt: skip
        ids = np.asarray(open_npy(input_path), dtype=np.int64)
        ids = ids[None] if ids.ndim == 1 else ids
    if ids.shape[1] == 0:
        raise SpecError(f"{input_path or '--prompt'}: the prompt is empty (at least one token)")
    vocabulary = spec.V_src or spec.V
    if vocabulary is None:
        raise SpecError(f"{spec.label}: generation needs a vocabulary (V)")
    if ids.min() < 0 or ids.max() >= vocabulary:
        raise SpecError(f"{input_path or '--prompt'}: token ids must be in 0 .. {vocabulary - 1}, got "
                        f"{int(ids.min())} .. {int(ids.max())}")  # fmt: skip
    return ids
