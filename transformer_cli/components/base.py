"""What every component of a model declares: its tensors, its closed-form term, its costs, its effect on the theory.

A model is a composition of components (positions, attention, feedforward, norms, ...). Counting, costing and
the verify theory iterate over them instead of branching on spec keys: a new kind is a class in its own module
and one line in the registry (components/__init__.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..spec.definition import Spec


def stacked(get: Callable[[str], np.ndarray], names: Sequence[str], rows: Sequence[int], width: int) -> np.ndarray:
    """The tensors `names`, each as `rows[k]` rows of `width`, stacked in one (sum(rows), width) array for one
    product: each decoded straight into its rows where `get` can (a block's tensors read from a file:
    model/weights.py), else concatenated."""
    into = getattr(get, "stacked", None)
    if into is not None:
        return into(names, rows, width)
    return np.concatenate([get(name).reshape(-1, width) for name in names])


# the tensors of integers (DeepSeek-V4's experts by token id, Qwen4's n-gram hashes' numbers): a file may hold them so
INTEGER = ("router_hash", "ngram.multipliers", "ngram.sizes", "ngram.offsets")


@dataclass(frozen=True)
class Tensor:
    """One array of the weights file: its name, its shape, and the component it belongs to. A buffer (DeepSeek-V3's
    router correction bias) is stored and read like the others but is not a parameter: it counts none."""

    name: str
    shape: tuple[int, ...]
    component: str
    buffer: bool = False

    @property
    def size(self) -> int:
        """The numbers it stores."""
        return math.prod(self.shape)

    @property
    def count(self) -> int:
        """The parameters it holds: its size, 0 for a buffer."""
        return 0 if self.buffer else self.size


@dataclass(frozen=True)
class Term:
    """One term of the closed form: its formula as text and its value.

    scope: "block" (counted N times) or "model" (once); seed: a term of the seed's 4Hmd + 2rd + r + d (shown first).
    """

    formula: str
    value: int
    scope: str
    seed: bool = False


@dataclass(frozen=True)
class Pairs:
    """The (key, query) pairs attention scores, per head: b n^2 in full, b n(n+1)/2 with only the causal ones,
    and with a sliding window w only the w most recent keys of each query: w(w+1)/2 + (n - w) w for n > w."""

    b: int
    n: int
    causal_only: bool = False
    window: int | None = None
    chunk: int | None = None  # Llama 4's chunks of C: each full chunk C(C+1)/2 pairs, the last one's r(r+1)/2

    @property
    def count(self) -> int:
        n, w = self.n, self.window
        if not self.causal_only:
            return self.b * n * n
        if self.chunk is not None:
            C, r = self.chunk, n % self.chunk
            return self.b * ((n // C) * (C * (C + 1) // 2) + r * (r + 1) // 2)
        if w is None or n <= w:
            return self.b * (n * (n + 1) // 2)
        return self.b * (w * (w + 1) // 2 + (n - w) * w)


@dataclass(frozen=True)
class GgmlCache:
    """What llama.cpp's memory keeps for one block (analysis/llama_cpp.py): K and V elements per token (V none for
    latent attention, whose K serves as both), the key and value heads' sizes (a quantised cache type's blocks must
    divide them), an indexer's keys per token, and a recurrent state's R and S elements per sequence (float32)."""

    k: int = 0
    v: int = 0
    head_k: int = 0
    head_v: int = 0
    index_k: int = 0
    r: int = 0
    s: int = 0


class Component:
    """One architectural part. Every method has a neutral default, so a component declares only what it has.

    `where`: "input" (before the blocks), "block" (in each of the N blocks) or "output" (after them): the order
    of the weights file and of the pass.
    """

    where = "block"

    def __init__(self, spec: Spec):
        self.spec = spec

    def tensors(self, prefix: str) -> list[Tensor]:
        """Its parameter tensors; `prefix` is 'blocks.{i}.' for a block component, '' otherwise."""
        return []

    def terms(self) -> list[Term]:
        """Its terms of the closed-form count, in the seed's symbols."""
        return []

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        """Forward FLOPs over b sequences of n tokens, by row of `tfm count` (a multiply-add is 2 FLOPs)."""
        return {}

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        """Multiply-adds of its matrix products (the 'linear layers' row sums over components)."""
        return {}

    def breaks_equivariance(self) -> str | None:
        """What in this component tells positions apart (so T(XP) = T(X)P fails), or None."""
        return None

    def causal(self) -> bool:
        """True if this component makes output column t independent of columns after t (a causal mask)."""
        return False

    def inactive(self) -> int:
        """Parameters a token's pass does not use (the experts it was not routed to), 0 for most components."""
        return 0

    def absolute_positions(self) -> str | None:
        """What in this component depends on absolute positions (so shifting every position changes the output)."""
        return None

    def relative_positions(self) -> str | None:
        """What in this component sees positions through t - s only (so shifting every position changes nothing)."""
        return None

    def length_dependent(self, first: int, second: int) -> str | None:
        """Why passes `first` and `second` positions long compute a position differently (dynamic rope), or None."""
        return None

    def shift_dependent(self, n: int, shift: int) -> str | None:
        """Why a pass of n positions shifted by `shift` computes a position differently, past its absolute terms
        (Llama 4's query scale), or None."""
        return None

    def prefill_bytes(self, tokens: int, rows: int, s: int) -> int:
        """Bytes a prefill of `tokens` tokens holds at this component after the blocks, `rows` of them wanted (the
        head's logits), in s-byte elements (analysis/serving.py): none for most."""
        return 0

    def saved_per_token(self, s: int, frozen: bool = False) -> int:
        """Bytes a training pass keeps per token for this component outside the blocks, in s-byte elements, its
        weights frozen (LoRA) or not (analysis/training.py): none for most."""
        return 0

    def state_bytes(self, size: int) -> int:
        """Bytes a decoder keeps per sequence and block whatever the context, in `size`-byte elements (a recurrent
        mixer's state, components/short_conv.py): none for most."""
        return 0

    def ggml_cache(self) -> GgmlCache | None:
        """What llama.cpp's memory keeps for this block's mixer (src/llama-kv-cache.cpp, llama-memory-recurrent.cpp),
        or None: not modelled for this kind."""
        return None

    def reach(self) -> int | None:
        """How many columns back one pass can see through this component (a sliding window's), or None: all."""
        return None
