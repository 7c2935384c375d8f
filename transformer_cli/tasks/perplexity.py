"""A model's perplexity over a stream of token ids, as llama-perplexity computes it (issue 43): the whole input as
one sequence, every position scored on the next token; or, with a context C, chunks of C tokens run one at a time,
each scoring its second half (analysis/divergence.py has the conventions and the uncertainty)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis.divergence import Chunk, Perplexity, chunks, next_token_nll, score_scratch
from ..errors import ArrayError, OptionError, SpecError
from ..model.transformer import Transformer
from ..spec.load import check_length
from ..spec.stacks import encoder

if TYPE_CHECKING:
    from ..analysis.modes import Mode
    from ..spec.definition import Spec

# the model held as the memory allows: (dtype, batch, length, max_memory, what, again) -> (model, mode): Model.held
Held = Callable[..., tuple[Any, "Mode | None"]]


@dataclass(frozen=True)
class PerplexityResult:
    """The perplexity, the chunking it was measured with, and how the weights were held."""

    perplexity: Perplexity
    tokens: int
    ctx: int | None
    chunks: int
    mode: Mode | None

    @property
    def scored(self) -> str:
        return scored_words(self.ctx)

    def to_dict(self) -> dict[str, Any]:
        mode = self.mode.to_dict() if self.mode is not None else None
        where = {"tokens": self.tokens, "ctx": self.ctx, "chunks": self.chunks, "scored": self.scored}
        return self.perplexity.to_dict() | where | {"weights_mode": mode}


def token_stream(ids: Any, spec: Any, where: str) -> np.ndarray:
    """The input as one stream of token ids (n,): a (1, n) array taken as its row; each id in 0 .. V - 1."""
    stream = np.asarray(ids)
    if stream.ndim == 2 and stream.shape[0] == 1:
        stream = stream[0]
    if stream.ndim != 1 or not np.issubdtype(stream.dtype, np.integer):
        raise ArrayError(f"{where}: expected one stream of token ids (n,) or (1, n), got {stream.dtype} {stream.shape}")
    outside = np.flatnonzero((stream < 0) | (stream >= spec.V))
    if outside.size:
        i = int(outside[0])
        raise ArrayError(f"{where}: token id {int(stream[i])} at {i} is outside 0 .. {spec.V - 1} (V = {spec.V})")
    return stream.astype(np.int64)


MAX_TEXT_BYTES = 256 << 20  # a text file read for its tokens (WikiText-2's test set: 1.3 MB)


def text_tokens(model_path: Path | None, text: Path | str, option: str = "--text") -> np.ndarray:
    """A text file's (or, as a str, the text's own) token ids (n,) through the model's tokenizer (a folder's
    tokenizer.json, a GGUF file's vocabulary); a model without one is a one-line error naming `option`."""
    from ..files import read_bounded
    from .generation import encode, tokenizer, tokenizer_file

    tok = tokenizer(model_path, option=option)
    if isinstance(text, Path):
        text = read_bounded(text, MAX_TEXT_BYTES, "a text file", SpecError).decode("utf-8", errors="replace")
    return np.asarray(encode(tok, text, tokenizer_file(model_path)), dtype=np.int64)


def token_input(
    model_path: Path | None, input_path: Path | None, text: Path | None, prompt: str | None = None
) -> tuple[np.ndarray, str]:
    """The token stream a command was given, as ids (--input ids.npy), a text file (--text FILE) or text
    (--prompt TEXT), and its name."""
    from ..io.arrays import open_npy

    if sum(given is not None for given in (input_path, text, prompt)) != 1:
        raise SpecError(
            "give the tokens as ids (--input ids.npy), a text file (--text FILE) or text (--prompt TEXT), one of them"
        )
    if text is not None:
        return text_tokens(model_path, text), str(text)
    if prompt is not None:
        return text_tokens(model_path, prompt, "--prompt"), "--prompt"
    assert input_path is not None
    return np.asarray(open_npy(input_path)), str(input_path)


def scored_words(ctx: int | None) -> str:
    """Which positions a stream's chunks score, in words."""
    if ctx is None:
        return "every position but the last, the whole input as one sequence"
    return f"positions {ctx // 2} .. {ctx - 2} of each chunk of {ctx}, its second half"


def scored_stream(
    specs: dict[str, Spec], ids: Any, ctx: int | None, where: str, what: str
) -> tuple[np.ndarray, list[Chunk]]:
    """The token stream and its chunks (analysis/divergence.chunks), each model of `specs` (by the name its
    refusal gives it: "A", or "" for one) a causal language model that can run a chunk; else a one-line error."""
    for name, spec in specs.items():
        if not spec.V or spec.mask != "causal" or encoder(spec) is not None:
            named = f"{name}, {spec.label}" if name else spec.label
            raise SpecError(f"{named}: {what} (a vocabulary, a causal mask and one stack)")
    if ctx is not None and ctx < 2:
        raise OptionError(f"--ctx: got {ctx}, expected at least 2 (a chunk scores its second half)")
    stream = token_stream(ids, next(iter(specs.values())), where)
    parts = chunks(stream.size, ctx)
    if not parts:
        least = f"--ctx {ctx} needs at least {ctx}" if ctx is not None else "at least 2 are needed"
        raise ArrayError(f"{where}: {stream.size} token(s): {least}")
    for spec in specs.values():
        check_length(spec, parts[0].stop - parts[0].start, where if ctx is None else f"--ctx {ctx}")
    return stream, parts


def perplexity(
    spec: Spec,
    held: Held,
    ids: Any,
    ctx: int | None = None,
    dtype: str = "float32",
    max_memory: str | None = None,
    where: str = "the input",
) -> PerplexityResult:
    """The perplexity of the model of `spec` over `ids` (see the module's note), its weights `held` as the memory
    allows (the library's Model.held)."""
    stream, parts = scored_stream({"": spec}, ids, ctx, where, "perplexity is a causal language model's")
    length = parts[0].stop - parts[0].start
    beside = (score_scratch(spec.V or 0, length - 1 - parts[0].first), "the scoring's log-probabilities")
    net, mode = held(dtype, 1, length, max_memory, "this perplexity", len(parts) > 1, beside=beside)
    assert isinstance(net, Transformer)  # (one stack: an encoder-decoder was refused above)
    nll = []
    for part in parts:
        piece = stream[part.start : part.stop]
        logits = net.forward(piece[None])[0]  # (V, c)
        nll.append(next_token_nll(logits[:, part.first : -1], piece[part.first + 1 :]))
    return PerplexityResult(Perplexity.of(np.concatenate(nll)), int(stream.size), ctx, len(parts), mode)


__all__ = [
    "PerplexityResult",
    "perplexity",
    "scored_stream",
    "scored_words",
    "text_tokens",
    "token_input",
    "token_stream",
]
