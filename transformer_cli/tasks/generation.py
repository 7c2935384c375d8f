"""Generation from a model's files, for `tfm generate` and `Model.generate`: the prompts (token ids, or text through
the folder's tokenizer.json), the stop, padding and start tokens the files give, and the model set up to decode
(an encoder-decoder encodes its source once). The decoding itself is model/generate.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis.serving import context_cap
from ..errors import OptionError, SpecError
from ..files import read_bounded
from ..gguf.header import read_header
from ..hf.config import MAX_CONFIG_BYTES, stored_config
from ..io.safetensors_io import peek
from ..model.generate import Sampling, generate, token_id
from ..options import count
from ..spec.choices import LEARNED
from ..spec.definition import Spec
from ..spec.stacks import encoder

if TYPE_CHECKING:
    from ..model.generate import Generation


def generate_from(
    model: Any,
    prompt: Any,
    max_new_tokens: int = 16,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
    stop: list[int] | None = None,
    dtype: str | None = None,
    on_token: Callable[[np.ndarray], None] | None = None,
    say: Callable[[str], None] | None = None,
    max_memory: str | None = None,
) -> Generation:
    """The prompt (ids (p,) or (b, p), or a text the model's tokenizer encodes) continued by `model` (a
    models.Model) by up to max_new_tokens, the options checked as `tfm generate` checks them; `say` hears the
    notes the command prints on stderr (also kept in the Generation's notes)."""

    sampling = Sampling(temperature, top_k, top_p, seed)  # (checks each)
    count(max_new_tokens, "max-new-tokens")
    if isinstance(prompt, str):
        if model.tokenizer is None:
            raise SpecError(
                f"{model.path or 'the built-in spec'}: has no tokenizer.json to encode a text prompt; give token ids"
            )
        prompt = [encode(model.tokenizer, prompt, tokenizer_file(model.path))]
    ids = check_prompts(np.asarray(prompt), model.spec, "the prompt")
    notes = [note for note in (sampling.unused(), past_context(model.spec, ids.shape[1], max_new_tokens)) if note]
    for note in notes:
        (say or (lambda note: None))(note)
    config = model.generation_config
    files = model.path or model.weights_path
    vocabulary = model.spec.V
    stops = (
        list(stop)
        if stop
        else [token_id(t, vocabulary, f"{files}: eos_token_id") for t in token_ids(config.get("eos_token_id"))]
    )
    pad = config.get("pad_token_id")
    pad = token_id(pad, vocabulary, f"{files}: pad_token_id") if isinstance(pad, int) else None
    dtype = dtype or model.dtype
    b, p = ids.shape
    if encoder(model.spec) is None:  # the prefill's pass over the prompt and every new token bounds the peak
        net, mode = model.held(dtype, b, p + max_new_tokens, max_memory, "this generation", again=True)
    else:  # the decoder's targets: the start token and the new ones, over the prompt as the source
        net, mode = model.held(dtype, b, max_new_tokens + 1, max_memory, "this generation", True, source_len=p)
    if mode is not None and mode.said:
        (say or (lambda note: None))(f"note: {mode.note()}")
    if not hasattr(net, "encode"):
        result = generate(net, ids, max_new_tokens, stops, pad, sampling, on_token)
    else:
        key = "decoder_start_token_id"  # else bos_token_id, as transformers' generate falls back (T5Gemma's)
        key = key if isinstance(config.get(key), int) else "bos_token_id"
        if not isinstance(config.get(key), int):
            raise SpecError(
                f"{model.spec.label}: an encoder-decoder generates from decoder_start_token_id (else "
                "bos_token_id), which its config does not give"
            )
        start = token_id(config[key], vocabulary, f"{files}: {key}")
        memory = net.encode(ids)
        begin = np.full((ids.shape[0], 1), start, dtype=np.int64)
        result = generate(net.decoder, begin, max_new_tokens, stops, pad, sampling, on_token, memory)
    result.notes = notes + result.notes
    result.weights_mode = mode.to_dict() if mode is not None else None
    return result


def past_context(spec: Spec, prompt: int, new: int) -> str | None:
    """A warning when the prompt and the new tokens run past the model's own context (a refusal beyond learned
    positions, which have nothing further)."""

    total, cap = prompt + new, context_cap(spec)
    said = f"--max-new-tokens {new}: the prompt's {prompt} tokens and {new} new ones make {total:,} positions"
    if spec.positional in LEARNED and spec.max_len is not None and total > spec.max_len:
        raise OptionError(f"{said}, beyond the {spec.max_len:,} learned positions of {spec.label} (max_len)")
    if cap is None or total <= cap:
        return None
    return (
        f"warning: {said}, beyond {spec.label}'s own context of {cap:,} (context: max_position_embeddings); "
        "the tokens past it come from a model run beyond it"
    )


def check_prompts(ids: np.ndarray, spec: Spec, where: str) -> np.ndarray:
    """The prompts (b, p) as int64 ids, checked: integers, one or two axes, not empty, within the vocabulary."""
    if not np.issubdtype(ids.dtype, np.integer) or ids.ndim not in (1, 2):
        raise SpecError(f"{where}: expected integer token ids (p,) or (b, p), got {ids.dtype} {ids.shape}")
    ids = np.asarray(ids, dtype=np.int64)
    ids = ids[None] if ids.ndim == 1 else ids
    if ids.shape[0] == 0:
        raise SpecError(f"{where}: no prompt in shape {ids.shape} (at least one sequence of (b, p))")
    if ids.shape[1] == 0:
        raise SpecError(f"{where}: the prompt is empty (at least one token)")
    vocabulary = spec.V_src or spec.V
    if vocabulary is None:
        raise SpecError(f"{spec.label}: generation needs a vocabulary (V)")
    if ids.min() < 0 or ids.max() >= vocabulary:
        raise SpecError(
            f"{where}: token ids must be in 0 .. {vocabulary - 1}, got {int(ids.min())} .. {int(ids.max())}"
        )
    padded = np.argwhere(ids == spec.pad_id) if spec.pad_id is not None else np.empty((0, 2), dtype=np.int64)
    if len(padded):  # (positions that skip it, an encoder that masks it: tfm runs unpadded prompts)
        at = tuple(int(i) for i in padded[0])
        raise SpecError(
            f"{where}: token id {spec.pad_id} at index {at} is the padding token (pad_id): give each "
            "prompt without its padding"
        )
    return ids


def token_ids(value: Any) -> list[int]:
    """A config's token id or list of them (eos_token_id), as a list; anything else is none."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    return []


def generation_config(spec_path: Path | None, weights: Path | None) -> dict[str, Any]:
    """The stop, padding and start tokens the model's files give: a folder's generation_config.json over its
    config.json, the configs a tfm .safetensors keeps, a GGUF file's tokenizer.ggml ids."""

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
            meta = read_header(path).metadata
            return {
                key: meta.get(f"tokenizer.ggml.{name}")
                for key, name in (("eos_token_id", "eos_token_id"), ("pad_token_id", "padding_token_id"))
            }
        if path.suffix.lower() == ".safetensors":
            kept = peek(path)[1]
            found = {}
            for key in ("hf_config", "hf_generation_config"):
                if key in kept:
                    found |= stored_config(kept[key], f"{path}: metadata '{key}'")
            return found
    return {}


def has_tokenizer(path: Path) -> bool:
    """A folder with a tokenizer.json, or a GGUF file (whose metadata may hold a vocabulary)."""
    return (path.is_dir() and (path / "tokenizer.json").is_file()) or (
        path.suffix.lower() == ".gguf" and path.is_file()
    )


def tokenizer(path: Path | None, required: bool = True, option: str = "--prompt") -> Any:
    """The folder's tokenizer.json (at most MAX_TOKENIZER_BYTES), or a GGUF file's byte-level BPE vocabulary, as a
    `tokenizers.Tokenizer` (None for a GGUF file marked no_vocab, unless `required`)."""
    from ..gguf.tokenizer import guarded
    from ..gguf.vocab import MAX_TOKENIZER_BYTES

    if path is None or not has_tokenizer(path):
        raise SpecError(f"{option}: {path or 'the built-in spec'} has no tokenizer.json; give token ids: --input")
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise SpecError(f"{option}: text needs the tokenizers library: pip install 'tfm[text]'") from None
    if path.suffix.lower() == ".gguf":
        from ..gguf.tokenizer import gguf_tokenizer

        found = gguf_tokenizer(path)
        if found is None and required:
            raise SpecError(
                f"{option}: {path} holds no vocabulary (tokenizer.ggml.model no_vocab); give token ids: --input"
            )
        return found
    file = path / "tokenizer.json"
    text = read_bounded(file, MAX_TOKENIZER_BYTES, "a tokenizer.json", SpecError).decode("utf-8", "replace")
    return guarded(lambda: Tokenizer.from_str(text), file, "not a tokenizer the tokenizers library reads")


def tokenizer_file(path: Path | None) -> Path | None:
    """The file a model's tokenizer comes from: a folder's tokenizer.json, or the GGUF file."""
    return path / "tokenizer.json" if path is not None and path.is_dir() else path


def encode(tok: Any, text: str, source: object) -> list[int]:
    """`text`'s token ids; a tokenizer that fails on it (a Rust panic too) is a one-line error naming `source`."""
    from ..gguf.tokenizer import guarded

    return guarded(lambda: list(tok.encode(text).ids), source, "the tokenizer fails on the prompt")


def decode(tok: Any, ids: list[int], source: object) -> str:
    """The text of `ids` (special tokens left out), a failing tokenizer a one-line error naming `source`."""
    from ..gguf.tokenizer import guarded

    return guarded(lambda: str(tok.decode(ids, skip_special_tokens=True)), source, "the tokenizer fails to decode")
