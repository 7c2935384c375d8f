"""Attention and Mamba-2 side by side in one block (Falcon-H1's): both read the block's normed input, their outputs
are added. With parallel_scales (s_a, s_k, s_o, s_m, s_y), Falcon-H1's multipliers,

    out = s_o Attention(s_a x; its keys times s_k) + s_y Mamba2(s_m x)

each number folded into the weights it multiplies when the pass's weights are made (W_Q, W_K, W_V times s_a, W_K
and b_K times s_k, W_O and b_O times s_o; W_in times s_m, W_out and b_out times s_y), so the pass is attention's and
Mamba-2's own (attention.py, mamba2.py). A decoder keeps both caches: the attention's keys and values per token, the
state space's fixed state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from ..spec.choices import ATTENTIONS
from ..spec.definition import Spec
from .attention import MultiHeadAttention
from .base import Component, GgmlCache, Pairs, Tensor, Term
from .kv_cache import KVCache
from .mamba2 import Mamba2, SsmState


@dataclass
class ParallelState:
    """A block's decoding state: the attention's cache and the state space's."""

    kv: KVCache
    ssm: SsmState

    @property
    def keep(self) -> bool:
        return self.kv.keep

    @keep.setter
    def keep(self, value: bool) -> None:  # (the stale-cache fault: neither part stores the step)
        self.kv.keep = self.ssm.keep = value


def _scaled(get: Callable[[str], np.ndarray], factors: dict[str, float], name: str) -> np.ndarray:
    array = get(name)
    return array * array.dtype.type(factors[name]) if name in factors else array


@ATTENTIONS.register("attention_mamba2")
class AttentionMamba2(Component):
    """The block's attention (standard, the spec's heads) and Mamba-2 (the spec's ssm_* keys) side by side."""

    tensor_split_refusal = "attention and a state space side by side are not split here yet"

    def __init__(self, spec: Spec) -> None:
        super().__init__(spec)
        self.attention, self.ssm = MultiHeadAttention(spec), Mamba2(spec)

    @staticmethod
    def check_keys(spec: Spec, data: dict[str, Any], source: str) -> None:
        MultiHeadAttention.check_keys(spec, data, source)

    @property
    def parts(self) -> tuple[Component, Component]:
        return self.attention, self.ssm

    def tensors(self, prefix: str) -> list[Tensor]:
        return self.attention.tensors(prefix) + self.ssm.tensors(prefix)

    def terms(self) -> list[Term]:
        return self.attention.terms() + self.ssm.terms()

    def _sum(self, method: str, *args: Any) -> dict[str, int]:
        out: dict[str, int] = {}
        for part in self.parts:
            for key, value in getattr(part, method)(*args).items():
                out[key] = out.get(key, 0) + value
        return out

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return self._sum("flops", b, n, pairs)

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        return self._sum("multiply_adds", b, n, pairs)

    def prepare(self, get: Callable[[str], np.ndarray]) -> tuple[Any, Any]:
        """Each part's weights, parallel_scales folded into the matrices (and biases) they multiply."""
        s_a, s_k, s_o, s_m, s_y = self.spec.parallel_scales or (1.0,) * 5
        attention = {"attention.W_Q": s_a, "attention.W_K": s_a * s_k, "attention.W_V": s_a}
        attention |= {"attention.b_K": s_k, "attention.W_O": s_o, "attention.b_O": s_o}
        ssm = {"mamba.W_in": s_m, "mamba.W_out": s_y, "mamba.b_out": s_y}
        return self.attention.prepare(partial(_scaled, get, attention)), self.ssm.prepare(partial(_scaled, get, ssm))

    def mix(
        self,
        model: Any,
        i: int,
        w: tuple[Any, Any],
        X: np.ndarray,
        start: int = 0,
        cache: ParallelState | None = None,
        **options: Any,
    ) -> np.ndarray:
        """Both sublayers on the same columns, added: (d, b, n) -> (d, b, n)."""
        kv, ssm = (None, None) if cache is None else (cache.kv, cache.ssm)
        out = self.ssm.mix(model, i, w[1], X, start, ssm, **options)
        out += self.attention.mix(model, i, w[0], X, start, kv, **options)
        return out

    def cache(self, b: int, n: int, dtype: np.dtype) -> ParallelState:
        return ParallelState(self.attention.cache(b, n, dtype), self.ssm.cache(b, n, dtype))

    def cache_per_token(self, size: int, scale: int) -> int:
        return self.attention.cache_per_token(size, scale)

    def device_cache_per_token(self, size: int, scale: int, tensor: int) -> int:
        return self.attention.device_cache_per_token(size, scale, tensor)

    def state_bytes(self, size: int) -> int:
        return self.ssm.state_bytes(size)

    def ggml_cache(self) -> GgmlCache | None:
        """llama.cpp's (Falcon-H1: both memories on every block): the attention's K and V, the state's R and S."""
        attention, ssm = self.attention.ggml_cache(), self.ssm.ggml_cache()
        return None if attention is None or ssm is None else replace(attention, r=ssm.r, s=ssm.s)

    def held_per_token(self) -> int:
        return self.attention.held_per_token() + self.ssm.held_per_token()

    def saved_bytes(self, keys: int, s: int, fused: bool, needed: Any = (True,) * 3, frozen: bool = False) -> int:
        return self.attention.saved_bytes(keys, s, fused, needed, frozen) + self.ssm.saved_bytes(keys, s, fused)

    def transient_bytes(self, b: int, n: int, keys: int, s: int, fused: bool) -> int:
        return max(self.attention.transient_bytes(b, n, keys, s, fused), self.ssm.transient_bytes(b, n, keys, s, fused))

    def normalised(self) -> str | None:
        if self.spec.parallel_scales is not None and tuple(self.spec.parallel_scales[:2]) != (1.0, 1.0):
            return "the attention's queries and keys are scaled (parallel_scales)"
        return self.attention.normalised()

    def qkv(self, w: tuple[Any, Any], X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The attention's projections (the score-variance check's)."""
        return self.attention.qkv(w[0], X)

    def breaks_equivariance(self) -> str | None:
        return "causal mask and a causal state space recurrence"

    def causal(self) -> bool:
        return True

    def reach(self) -> int | None:
        return None

    def shift_dependent(self, n: int, shift: int) -> str | None:
        return self.attention.shift_dependent(n, shift)


__all__ = ["AttentionMamba2", "ParallelState"]
