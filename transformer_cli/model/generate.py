"""Generation: the prompt through the parallel pass (the prefill, which fills each block's key/value cache), then
one token at a time through the cache (decoding.py's Decoder), as seed 001 describes autoregressive decoding.

Greedy by default (the largest logit, the first of equal ones, as torch.argmax); with a temperature, sampled as
transformers' generate samples: the logits divided by the temperature, then top-k, then top-p (the smallest set
of tokens whose probability reaches p, at least one), then drawn from their softmax by a seeded NumPy generator.
A sequence that emits a stop token is finished: its later tokens are the padding token (transformers' way), and
generation ends when every sequence is finished or max_new_tokens are made. An encoder-decoder encodes its source
once and generates the target from the decoder's start token.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import SpecError
from .decoding import Decoder
from .transformer import Array, Transformer


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen: greedy (temperature 0), else sampled after temperature, top-k and top-p."""

    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None


@dataclass
class Generation:
    """The sequences (b, prompt + new) as int64 ids, the new tokens' count, and which sequences stopped."""

    tokens: Array
    prompt: int
    stopped: Array
    steps: list[Array] = field(default_factory=list)

    @property
    def new_tokens(self) -> Array:
        return self.tokens[:, self.prompt :]


def choose(logits: Array, sampling: Sampling, rng: np.random.Generator) -> Array:
    """The next token of each sequence from its logits (b, V)."""
    if sampling.temperature <= 0:
        return logits.argmax(axis=-1)
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
    ids = np.asarray(prompt, dtype=np.int64)
    ids = ids[None] if ids.ndim == 1 else ids
    if model.W_head is None:
        raise SpecError(f"{model.spec.label}: generation needs a head (logits over V); this model ends at its columns")
    if max_new_tokens < 1:
        raise SpecError(f"--max-new-tokens {max_new_tokens}: expected at least 1 token to generate")
    b, p = ids.shape
    stops = np.asarray(list(stop), dtype=np.int64)
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
    tokens = np.concatenate([ids, np.stack(steps, axis=1)], axis=1)
    return Generation(tokens, p, done, steps)


__all__ = ["Generation", "Sampling", "choose", "generate"]
