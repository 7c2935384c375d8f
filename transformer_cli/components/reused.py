"""Keys and values shared across blocks (kv_shared, Gemma 4's small models): the last S blocks have queries and an
output projection but no W_K or W_V; each attends to the keys and values the last earlier block of its kind (full
or sliding) made in the same pass, after that block's norms and rotation, and keeps no cache (in decoding it reads
that block's). The blocks with their own leave theirs in `shared` for them (model/transformer.py's pass)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from .. import kernels
from .attention import AttentionWeights, MultiHeadAttention, _norm_part
from .base import GgmlCache, Pairs, Tensor, Term
from .kv_cache import KVCache


class ReusedAttention(MultiHeadAttention):
    def tensors(self, prefix: str) -> list[Tensor]:
        """The queries' and the output's tensors alone (and the query norm)."""
        own = (".W_K", ".W_V", ".b_K", ".b_V")
        return [t for t in super().tensors(prefix) if not t.name.endswith(own) and ".k_norm." not in t.name]

    def terms(self) -> list[Term]:
        H, m, d = self.spec.H, self.spec.m, self.spec.d
        out = [Term("2Hmd", 2 * H * m * d, "block", seed=True)]
        if self.spec.attention_bias or self.spec.has_out_bias:
            bias = H * m * self.spec.attention_bias + d * self.spec.has_out_bias
            out.append(
                Term(" + ".join(["Hm"] * self.spec.attention_bias + ["d"] * self.spec.has_out_bias), bias, "block")
            )
        if self.spec.qk_norm:
            out.append(Term("m", sum(t.size for t in self.tensors("") if ".q_norm." in t.name), "block"))
        return out

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        """The queries' projection alone: no keys or values made."""
        H, m, d, N = self.spec.H, self.spec.m, self.spec.d, self.spec.N
        out = super().flops(b, n, pairs)
        projected = N * (2 * H * m * d + self.spec.attention_bias * H * m) * b * n
        norms = out["query/key norms"] * H // (H + self.spec.kv_heads)
        return out | {"Q/K/V projections": projected, "query/key norms": norms, "value norms": 0}

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        G, m, d = self.spec.kv_heads, self.spec.m, self.spec.d
        out = super().multiply_adds(b, n, pairs)
        return out | {"linear layers": out["linear layers"] - self.spec.N * (G * m + self.value_rows) * d * b * n}

    def prepare(self, get: Callable[[str], np.ndarray]) -> AttentionWeights:
        H, m, d = self.spec.H, self.spec.m, self.spec.d
        W_Q = get("attention.W_Q").reshape(H * m, d)
        b_Q = get("attention.b_Q").reshape(-1, 1, 1) if self.spec.attention_bias else None
        W_O = np.ascontiguousarray(get("attention.W_O").transpose(1, 0, 2).reshape(d, -1))
        b_O = get("attention.b_O").reshape(-1, 1, 1) if self.spec.has_out_bias else None
        qk = (self.qk_gains(partial(_norm_part, get, "attention.q_norm.")), None) if self.spec.qk_norm else None
        sinks = get("attention.sinks") if self.spec.attn_sinks else None
        return AttentionWeights(W_Q, b_Q, W_O, b_O, qk, sinks, None)

    def cache(self, b: int, n: int, dtype: np.dtype) -> KVCache | None:  # type: ignore[override]
        return None  # (it reads the block's whose keys it shares)

    def cache_per_token(self, size: int, scale: int) -> int:
        return 0

    def ggml_cache(self) -> GgmlCache | None:
        return GgmlCache()  # (llama.cpp: no cache of its own either, has_kv)

    def device_cache_per_token(self, size: int, scale: int, tensor: int) -> int:
        return 0

    def held_per_token(self) -> int:
        """Q and the heads' outputs (H m each): the keys and values are the other block's."""
        return 2 * self.spec.H * self.spec.m

    def mix(
        self,
        model: Any,
        i: int,
        w: AttentionWeights,
        X: np.ndarray,
        start: int = 0,
        cache: KVCache | None = None,
        weights_out: list | None = None,
        stop: threading.Event | None = None,
        offset: int = 0,
        shared: dict | None = None,
        **_: Any,
    ) -> np.ndarray:
        """Block i's queries (normed, turned) attend to the keys and values `shared` holds for its kind: by whether
        the block has a window, (K, V, the first key's position, whether they are a decoding step's whole cache)."""
        assert shared is not None, "a block of kv_shared's runs in a pass that shares keys and values"
        _, b, n = X.shape
        H, m = self.spec.H, self.spec.m
        Q = kernels.linear(w.W_qkv, X)
        if w.b_qkv is not None:
            Q += w.b_qkv
        Q = Q.reshape(H, m, b, n).transpose(2, 0, 1, 3)
        if w.qk_norm is not None:
            Q[...] = self.qk.apply(Q.transpose(2, 0, 1, 3), w.qk_norm[0]).transpose(1, 2, 0, 3)
        model.rotate(Q, Q[:, :0], start + offset, start, block=i)  # (the queries alone)
        K, V, first_key, step = shared[self.spec.window is not None]
        how = replace(self.attends, sinks=w.sinks, stop=stop, weights_out=weights_out, first=start)
        if step:  # (a decoding step: every key the other block's cache holds)
            how = replace(how, causal=False, window=None, chunk=None)
        heads = model.attend(Q, K, V, how, positions=(start + offset, first_key), block=i)
        return self.project(w, heads, X)


__all__ = ["ReusedAttention"]
