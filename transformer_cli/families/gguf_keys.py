"""What several families read alike from a GGUF file's `{arch}.*` keys."""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..spec.stacks import SLIDING, kind_of
from .keys import Keys


def partial_rotary(c: Keys, m: int) -> dict[str, Any]:
    """rope_fraction where rope.dimension_count turns fewer than a head's m dims (a partial rotary), else none."""
    rotated = c.count("rope.dimension_count", m)
    return {} if rotated == m else {"rope_fraction": rotated / m}


def rotated_share(rotated: int, m: int) -> float:
    """The rope_fraction that turns `rotated` of a head's m dims (tfm turns int(m rope_fraction)), one value for
    one model whichever file it is read from: rotated / m, or a hair above where the float falls short."""
    share = rotated / m
    return share if int(m * share) == rotated else (rotated + 0.5) / m


def rows(header: Any, name: str, what: str, *elsewhere: str) -> int:
    """The rows of tensor `name`, the last place the file says `what` (after the keys `elsewhere`): a SpecError
    naming them all if it is not there."""
    if name not in header.tensors:
        lacking = ", no ".join((*elsewhere, f"tensor {name}"))
        raise SpecError(f"{header.path}: {what} is not in the file: no {lacking}")
    return header.tensors[name].shape[0]


def base_only(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """A family whose file its base reader reads whole (gguf/archs.BASES: LLaMA's finds Qwen2's q, k, v biases and
    Qwen3's query and key norms by their tensors, Mixtral's experts by expert_count)."""
    return spec


def sliding_kinds(c: Keys, N: int, every: int, full_first: bool = False) -> tuple[int, list[str]] | None:
    """The window and each block's kind as llama.cpp's load_swa_pattern reads them: attention.sliding_window (none,
    or 0: no window) and attention.sliding_window_pattern, a list of N flags (true: sliding), or a count n (else
    `every`): block i slides unless i % n == n - 1 (with `full_first`, ModernBERT's: unless i % n == 0)."""
    window = c.count("attention.sliding_window", None) if c.has("attention.sliding_window") else None
    if not window:
        return None
    pattern = c.data.get("attention.sliding_window_pattern", every)
    if isinstance(pattern, list):
        if len(pattern) != N or not all(flag in (0, 1) for flag in pattern):
            raise c.fail("attention.sliding_window_pattern", pattern, f"a list of {N} flags, one per block")
        return window, ["sliding" if flag else "full" for flag in pattern]
    n = c.count("attention.sliding_window_pattern", every)
    full = 0 if full_first else n - 1
    return window, ["full" if i % n == full else "sliding" for i in range(N)]


def windowed(window: int, kinds: list[str]) -> dict[str, Any]:
    """The spec's window and attention_layers for blocks of `kinds` (none where no block slides)."""
    if "sliding" not in kinds:
        return {}
    return {"window": window} | ({"attention_layers": kinds} if "full" in kinds else {})


def turning(kinds: list[str]) -> dict[str, Any]:
    """positional_layers where only the sliding blocks turn (EXAONE 4's, Command R7B's, AFMoE's full layers)."""
    return {"positional_layers": ["rope" if kind == "sliding" else "nope" for kind in kinds]}


def sliding_layers(c: Keys, N: int, every: int) -> dict[str, Any]:
    """The spec's window and attention_layers from `sliding_kinds` (none where no block slides)."""
    found = sliding_kinds(c, N, every)
    return {} if found is None else windowed(*found)


def sliding_turning(c: Keys, N: int, every: int) -> dict[str, Any]:
    """`sliding_layers` and, while there is a window, only the sliding blocks turning (EXAONE 4, Command R7B)."""
    found = sliding_kinds(c, N, every)
    return {} if found is None else windowed(*found) | turning(found[1])


def sliding_pattern(spec: Any) -> dict[str, Any]:
    """spec -> attention.sliding_window_pattern as the converters write it from layer_types: a flag per block."""
    if spec.window is None:
        return {}
    flags = [kind_of(spec.attention_layers, i, SLIDING) == SLIDING for i in range(spec.N)]
    return {"attention.sliding_window_pattern": flags}


def llama_stack(c: Keys, header: Any, N: int, H: int, m: int, eps: float) -> dict[str, Any]:
    """The keys of a causal LLaMA-like stack (pre-norm RMSNorm of `eps` by default, a SwiGLU MLP without biases,
    rotary, scores scaled by 1/sqrt(m), a head unless the file has no output.weight) of N blocks of H heads of m,
    for the readers whose head counts the shared readers cannot read (lists)."""
    return {
        "N": N,
        "H": H,
        "m": m,
        "d": c.count("embedding_length"),
        "r": c.count("feed_forward_length"),
        "V": vocabulary(c, header),
        "scale": "sqrt",
        "mask": "causal",
        "norm": "pre",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("attention.layer_norm_rms_epsilon", eps),
        "feedforward": "gated",
        "activation": "silu",
        "ff_bias": False,
        "positional": "rope",
        "tie_embeddings": "output.weight" not in header.tensors,
    } | ({"context": c.count("context_length")} if c.has("context_length") else {})


def vocabulary(c: Keys, header: Any) -> int:
    """V: {arch}.vocab_size, else the tokenizer's token list (a long one kept as its length: gguf/header.py's
    ArrayCount), else the embedding's rows."""
    if c.has("vocab_size"):
        return c.count("vocab_size")
    tokens = header.metadata.get("tokenizer.ggml.tokens")
    if isinstance(tokens, list):
        return len(tokens)
    if isinstance(getattr(tokens, "count", None), int):
        return tokens.count
    return rows(header, "token_embd.weight", "the vocabulary size", f"{c.prefix}vocab_size", "tokenizer.ggml.tokens")


__all__ = [
    "base_only",
    "llama_stack",
    "partial_rotary",
    "rows",
    "sliding_kinds",
    "sliding_layers",
    "sliding_pattern",
    "sliding_turning",
    "turning",
    "vocabulary",
    "windowed",
]
