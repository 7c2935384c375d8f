"""Generation: the prompt through the parallel pass (the prefill, which fills each block's key/value cache), then
one token at a time through the cache (decoding.py's Decoder), as seed 001 describes autoregressive decoding.

Greedy by default (the largest logit, the first of equal ones, as torch.argmax); with a temperature, sampled as
transformers' generate samples: the logits divided by the temperature, then top-k, then top-p (the smallest set
of tokens whose probability reaches p, at least one), then drawn from their softmax by a seeded NumPy generator.
A sequence that emits a stop token is finished: its later tokens are the padding token (transformers' way), and
generation ends when every sequence is finished or max_new_tokens are made. An encoder-decoder encodes its source
once and generates the target from the decoder's start token.

Every option is checked here, where both the command and the library arrive, by its command-line name
(options.py): a temperature that is not a finite number of 0 or more, top-k below 1, top-p outside 0..1, a
negative seed, a stop or padding token that is no token id of the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import OptionError, SpecError
from ..kernels import Array
from ..options import count, number
from .decoding import Decoder
from .transformer import Transformer


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen: greedy (temperature 0), else sampled after temperature, top-k and top-p."""

    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        number(self.temperature, "temperature", 0.0)
        if self.top_k is not None:
            count(self.top_k, "top-k")
        if self.top_p is not None:
            number(self.top_p, "top-p", 0.0, 1.0)
        if self.seed is not None:
            count(self.seed, "seed", 0)

    def unused(self) -> str | None:
        """A note when top-k or top-p is given but the tokens are greedy (no temperature): they only shape a
        sampled draw, and greedy they are left unused, as transformers' generate leaves them (with a warning)
        without do_sample. llama.cpp samples instead, at its default temperature of 0.8; tfm keeps greedy unless
        a temperature is given, and says so."""
        given = [
            f"--{name} {value}" for name, value in (("top-k", self.top_k), ("top-p", self.top_p)) if value is not None
        ]
        if self.temperature > 0 or not given:
            return None
        applies = "applies" if len(given) == 1 else "apply"
        return (
            f"note: {' and '.join(given)} {applies} only to sampling (--temperature above 0): these tokens are "
            "greedy, as transformers' generate leaves them without do_sample"
        )


@dataclass
class Generation:
    """The new tokens (b, new) as int64 ids, `tokens` as `tfm generate --json` gives them; `sequences` the prompts
    and their new tokens (b, prompt + new), as `tfm generate -o` writes them; which sequences stopped, the stop
    tokens, and what the command says on stderr (`notes`)."""

    sequences: Array
    prompt: int
    stopped: Array
    steps: list[Array] = field(default_factory=list)
    stop_tokens: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    weights_mode: dict[str, Any] | None = None  # how the weights were held and why (analysis/modes.py)

    @property
    def tokens(self) -> Array:
        return self.sequences[:, self.prompt :]

    @property
    def new_tokens(self) -> Array:  # (the name before `tokens` meant the new tokens, as the command's JSON)
        return self.tokens

    def to_dict(self) -> dict[str, Any]:
        """`tfm generate --json` without the spec and the file written (-o)."""
        return {
            "prompt_tokens": self.prompt,
            "new_tokens": int(self.tokens.shape[1]),
            "stop_tokens": self.stop_tokens,
            "stopped": self.stopped.tolist(),
            "tokens": self.tokens.tolist(),
            "notes": self.notes,
            "weights_mode": self.weights_mode,
        }


def token_id(value: object, vocabulary: int, where: str) -> int:
    """A token id of the model: a whole number in 0 .. V-1 (`where` names the option or key it came from)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < vocabulary:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise OptionError(f"{where} {shown}: expected a token id of the model, 0 .. {vocabulary - 1}")
    return int(value)


def choose(logits: Array, sampling: Sampling, rng: np.random.Generator) -> Array:
    """The next token of each sequence from its logits (b, V)."""
    if sampling.temperature <= 0:
        greedy: Array = logits.argmax(axis=-1)
        return greedy
    scores = logits.astype(np.float64) / sampling.temperature
    if sampling.top_k is not None and sampling.top_k < scores.shape[-1]:
        kth = np.sort(scores, axis=-1)[:, -sampling.top_k][:, None]
        scores = np.where(scores < kth, -np.inf, scores)
    if sampling.top_p is not None and sampling.top_p < 1.0:
        order = np.argsort(scores, axis=-1)  # ascending, as transformers' TopPLogitsWarper
        ranked = np.take_along_axis(scores, order, axis=-1)
        probs = np.exp(ranked - ranked.max(axis=-1, keepdims=True))
        cumulative = np.cumsum(probs / probs.sum(axis=-1, keepdims=True), axis=-1)
        drop = cumulative <= 1 - sampling.top_p
        drop[:, -1] = False  # at least the most likely token
        removed = np.zeros_like(drop)
        np.put_along_axis(removed, order, drop, axis=-1)
        scores = np.where(removed, -np.inf, scores)
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    return np.array([rng.choice(probs.shape[-1], p=row) for row in probs])


def generate(
    model: Transformer,
    prompt: Array,
    max_new_tokens: int,
    stop: Sequence[int] = (),
    pad: int | None = None,
    sampling: Sampling = Sampling(),  # noqa: B008  (frozen)
    on_token: Callable[[Array], None] | None = None,
    memory: Array | None = None,
) -> Generation:
    """Continue the prompts (b, p) of token ids by up to max_new_tokens tokens each. `memory`: an
    encoder-decoder's encoded source, which the decoder's cross-attention reads. on_token receives each step's
    tokens (b,) as they are chosen."""
    loaded: Any = model
    if hasattr(loaded, "generation_config"):  # a loaded model (tfm.load): its own generate, with its files' tokens
        if pad is not None or memory is not None:
            raise OptionError(
                "tfm.generate(tfm.load(path), ...) takes the model's own padding token and source; "
                "for others, generate with model.transformer()"
            )
        options = dict(
            temperature=sampling.temperature,
            top_k=sampling.top_k,
            top_p=sampling.top_p,
            seed=sampling.seed,
            stop=list(stop) or None,
            on_token=on_token,
        )
        made: Generation = loaded.generate(prompt, max_new_tokens, **options)
        return made
    ids = np.asarray(prompt, dtype=np.int64)
    ids = ids[None] if ids.ndim == 1 else ids
    if model.W_head is None:
        raise SpecError(f"{model.spec.label}: generation needs a head (logits over V); this model ends at its columns")
    count(max_new_tokens, "max-new-tokens")
    V = model.W_head.shape[0]
    stops = np.asarray([token_id(t, V, "--stop") for t in stop], dtype=np.int64)
    pad = None if pad is None else token_id(pad, V, "pad_token_id")
    b, p = ids.shape
    filler = pad if pad is not None else (int(stops[0]) if stops.size else 0)
    rng = np.random.default_rng(sampling.seed)
    Z, _ = model.columns(ids)
    decoder = Decoder(model, b, p + max_new_tokens, memory)
    logits = decoder.prefill(Z)[:, :, -1].T  # (b, V)
    done = np.zeros(b, dtype=bool)
    steps: list[Array] = []
    for step in range(max_new_tokens):
        token = np.where(done, filler, choose(logits, sampling, rng)).astype(np.int64)
        steps.append(token)
        done |= np.isin(token, stops)
        if on_token is not None:
            on_token(token)
        if done.all() or step == max_new_tokens - 1:
            break
        z, _ = model.columns(token[:, None])
        logits = decoder.step(z)[:, :, 0].T
    sequences = np.concatenate([ids, np.stack(steps, axis=1)], axis=1)
    return Generation(sequences, p, done, steps, [int(t) for t in stops])


__all__ = ["Generation", "Sampling", "choose", "generate", "token_id"]
