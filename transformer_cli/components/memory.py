"""Zamba2's shared transformer blocks (mixer kind mamba2_memory, spec key mem_blocks): every block is Mamba-2's, and
a mamba2_memory block first runs one of mem_blocks shared transformer blocks on its input beside the embedded
columns e (the model carries them as a second stream, never changed: MemoryState). With h the block's input and
k the block's use (the k-th mamba2_memory block), shared block j = k mod mem_blocks:

    u = RMSNorm([h; e])                                      (2d rows, the shared block's gain)
    q = W_Q u + A_q,k(u), k = W_K u + A_k,k(u), v = W_V u + A_v,k(u)      (heads of m = 2d / H; adapters with
                                                               mem_qkv_adapters; A(u) = W_up W_down u of mem_rank)
    o = W_O attention(q, k, v)                               (causal, the spec's scale and positions; no residual)
    a = RMSNorm(o);  g, p = W_in a + A_ff,k(a);  f = W_2 (act(g) * p)     (the spec's r, activation, ff_bias)
    h' = h + Mamba2(RMSNorm(h + W_out f))                    (the block's own W_out (d, d) and norm)

The shared blocks' tensors are the model's (memory.j.*), each use's adapters too (adapters.k.*), counted once; a
block's own are its W_out, its norm and its Mamba-2's (blocks.i.memory.*). A decoder keeps each mamba2_memory block's
attention keys and values beside its state space's state (ParallelState)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from .. import kernels
from ..spec.choices import ATTENTIONS
from ..spec.definition import Spec
from ..spec.stacks import decoder
from .attention import AttentionWeights
from .base import Component, GgmlCache, Pairs, Tensor, Term
from .feedforward import ACTIVATION_PER_ENTRY
from .norm import RMS_PER_ENTRY
from .parallel_mixer import AttentionMamba2, ParallelState

KIND = "memory block"


def uses(spec: Spec) -> list[int]:
    """The blocks that run a shared block, in order: use k is the k-th."""
    stack = decoder(spec)
    return [i for i in range(spec.N) if stack.layer(i).attention == "mamba2_memory"]


def _sizes(spec: Spec) -> tuple[int, int, int, int, int, int]:
    """(d, H, G, m, r, the adapters' rank)."""
    return spec.d, spec.H, spec.kv_heads, spec.m, spec.r, spec.mem_rank or 0


def _adapter_shapes(spec: Spec) -> dict[str, tuple[int, int]]:
    d, H, G, m, r, k = _sizes(spec)
    out = {"ff.W_down": (k, d), "ff.W_up": (2 * r, k)}
    if spec.mem_qkv_adapters:
        out |= {f"{x}.W_down": (k, 2 * d) for x in "qkv"} | {f"{x}.W_up": (2 * d, k) for x in "qkv"}
    return out


class MemoryBlocks(Component):
    """The model's part: the shared blocks (memory.j.*) and every use's adapters (adapters.k.*)."""

    where = "output"

    def tensors(self, prefix: str) -> list[Tensor]:
        d, H, G, m, r, _ = _sizes(self.spec)
        shapes = {"norm_in.gamma": (2 * d,), "attention.W_Q": (H, m, 2 * d), "attention.W_K": (G, m, 2 * d)}
        shapes |= {"attention.W_V": (G, m, 2 * d), "attention.W_O": (H, d, m), "norm_ff.gamma": (d,)}
        shapes |= {"ff.W_in": (2 * r, d)} | ({"ff.b_in": (2 * r,)} if self.spec.ff_bias else {})
        shapes |= {"ff.W2": (d, r)} | ({"ff.b2": (d,)} if self.spec.ff_bias else {})
        count = len(uses(self.spec))
        blocks = range(min(self.spec.mem_blocks or 0, count))
        out = [Tensor(f"memory.{j}.{name}", s, KIND) for j in blocks for name, s in shapes.items()]
        adapters = _adapter_shapes(self.spec)
        return out + [Tensor(f"adapters.{k}.{name}", s, KIND) for k in range(count) for name, s in adapters.items()]

    def terms(self) -> list[Term]:
        d, H, G, m, r, k = _sizes(self.spec)
        count = len(uses(self.spec))
        blocks = min(self.spec.mem_blocks or 0, count)
        block = 2 * d + 2 * d * (H + 2 * G) * m + H * m * d + d + 3 * r * d + (2 * r + d) * self.spec.ff_bias
        adapter = k * (d + 2 * r) + 12 * d * k * self.spec.mem_qkv_adapters
        return [
            Term("min(mem_blocks, uses) (3d + 2d(H + 2G)m + Hmd + 3rd)", blocks * block, "model"),
            Term("uses mem_rank (d + 2r (+ 12d))", count * adapter, "model"),
        ]


@ATTENTIONS.register("mamba2_memory")
class MemoryMamba2(AttentionMamba2):
    """A block of Zamba2's: a shared block on [h; e], its output through W_out into the Mamba-2 mixer's norm."""

    tensor_split_refusal = "shared transformer blocks are not split here yet"

    def ggml_cache(self) -> GgmlCache | None:
        return None  # (llama.cpp's memory of this kind is not modelled)

    def tensors(self, prefix: str) -> list[Tensor]:
        d, p = self.spec.d, prefix + "memory."
        own = [Tensor(p + "norm.gamma", (d,), KIND), Tensor(p + "W_out", (d, d), KIND)]
        return self.ssm.tensors(p) + own

    def terms(self) -> list[Term]:
        return self.ssm.terms() + [Term("d^2 + d", self.spec.d**2 + self.spec.d, "block")]

    def _memory(self) -> tuple[int, int]:
        """Per token: the shared block's and W_out's weights that multiply (with the adapters'), the attention's
        projections' rows."""
        d, H, G, m, r, k = _sizes(self.spec)
        adapter = k * (d + 2 * r) + 12 * d * k * self.spec.mem_qkv_adapters
        return 2 * d * (H + 2 * G) * m + H * m * d + 3 * r * d + d * d + adapter, (H + 2 * G) * m

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        """Mamba-2's, the shared block's products, norms and activation, its attention's scores and softmax."""
        d, H, G, m, r, _ = _sizes(self.spec)
        weights, _ = self._memory()
        tokens, N = b * n, self.spec.N
        attention = self.attention.flops(b, n, pairs)
        out = self.ssm.flops(b, n, pairs)
        out["memory products"] = N * 2 * weights * tokens
        out["memory norms"] = N * RMS_PER_ENTRY * 4 * d * tokens
        out["memory activation"] = N * (ACTIVATION_PER_ENTRY.get(self.spec.activation, 1) + 1) * r * tokens
        for key in ("scores K^T Q", "softmax", "weights x V"):
            out[f"memory {key}"] = attention[key]
        return out

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        weights, _ = self._memory()
        out = self.ssm.multiply_adds(b, n, pairs)
        out["linear layers"] += self.spec.N * weights * b * n
        attention = self.attention.multiply_adds(b, n, pairs)
        return out | {key: attention[key] for key in ("scores K^T Q", "weights x V")}

    def prepare(self, get: Callable[[str], np.ndarray]) -> tuple[Any, np.ndarray, np.ndarray]:  # type: ignore[override]
        return (
            self.ssm.prepare(lambda name: get("memory." + name)),
            get("memory.norm.gamma").reshape(-1, 1, 1),
            get("memory.W_out"),
        )

    def mix(  # type: ignore[override]
        self,
        model: Any,
        i: int,
        w: tuple[Any, np.ndarray, np.ndarray],
        X: np.ndarray,
        start: int = 0,
        cache: ParallelState | None = None,
        embedded: np.ndarray | None = None,
        **options: Any,
    ) -> np.ndarray:
        """(d, b, n) -> (d, b, n): the block's input X unnormed, `embedded` the columns' embeddings (MemoryState)."""
        ssm, gain, W_out = w
        shared, adapters = model.altup.weights_of(i)
        eps, r = self.spec.norm_eps, self.spec.r
        kv, state = (None, None) if cache is None else (cache.kv, cache.ssm)
        u = kernels.rms_norm(np.concatenate([X, embedded]), shared["norm_in"], eps)
        Q, K, V = self.attention.qkv(shared["attention"], u)
        for part, name in ((Q, "q"), (K, "k"), (V, "v")):
            if name in adapters:  # (use k's: W_up W_down u, every head's rows)
                _, heads, m, _ = part.shape
                lifted = kernels.linear(adapters[name][1], kernels.linear(adapters[name][0], u))
                part += lifted.reshape(heads, m, *u.shape[1:]).transpose(2, 0, 1, 3)
        o = self.attention.mix(model, i, shared["attention"], u, start, kv, qkv=(Q, K, V), **options)
        a = kernels.rms_norm(o, shared["norm_ff"], eps)
        both = kernels.linear(shared["W_in"], a) + kernels.linear(
            adapters["ff"][1], kernels.linear(adapters["ff"][0], a)
        )
        if shared["b_in"] is not None:
            both += shared["b_in"]
        hidden = kernels.ACTIVATIONS[self.spec.activation](both[:r]) * both[r:]
        f = kernels.linear(shared["W2"], hidden)
        if shared["b2"] is not None:
            f += shared["b2"]
        x = kernels.rms_norm(X + kernels.linear(W_out, f), gain, eps)
        return self.ssm.mix(model, i, ssm, x, start, state, **options)

    def held_per_token(self) -> int:
        """Mamba-2's, and the shared block's [h; e], its projections, output and MLP rows."""
        d, _, _, _, r, _ = _sizes(self.spec)
        return self.ssm.held_per_token() + 2 * d + self._memory()[1] + 2 * d + 3 * r

    def normalised(self) -> str | None:
        return "the shared block's queries and keys take its adapters' too"

    def breaks_equivariance(self) -> str | None:
        return "causal mask and a causal state space recurrence"


class MemoryState:
    """The model's shared blocks ready for the pass, and its two streams: the residual h and the embedded columns e
    (2d rows a column), which the shared blocks read and nothing changes."""

    def __init__(self, spec: Spec, get: Callable[[str], np.ndarray]) -> None:
        self.spec, self.d = spec, spec.d
        used = uses(spec)
        self.use_of = {i: k for k, i in enumerate(used)}
        blocks = min(spec.mem_blocks or 0, len(used))
        self.blocks = [self._shared(partial(_prefixed, get, f"memory.{j}.")) for j in range(blocks)]
        parts = ("ff", "q", "k", "v") if spec.mem_qkv_adapters else ("ff",)
        self.adapters = [
            {x: (get(f"adapters.{k}.{x}.W_down"), get(f"adapters.{k}.{x}.W_up")) for x in parts}
            for k in range(len(used))
        ]

    def _shared(self, get: Callable[[str], np.ndarray]) -> dict[str, Any]:
        d, H, G, m, r, _ = _sizes(self.spec)
        bias = self.spec.ff_bias
        W_qkv = np.concatenate([get(f"attention.W_{x}").reshape(-1, 2 * d) for x in "QKV"])
        W_O = np.ascontiguousarray(get("attention.W_O").transpose(1, 0, 2).reshape(d, H * m))
        return {
            "norm_in": get("norm_in.gamma").reshape(-1, 1, 1),
            "attention": AttentionWeights(W_qkv, None, W_O, None),
            "norm_ff": get("norm_ff.gamma").reshape(-1, 1, 1),
            "W_in": get("ff.W_in"),
            "b_in": get("ff.b_in").reshape(-1, 1, 1) if bias else None,
            "W2": get("ff.W2"),
            "b2": get("ff.b2").reshape(-1, 1, 1) if bias else None,
        }

    def weights_of(self, i: int) -> tuple[dict[str, Any], dict[str, tuple[np.ndarray, np.ndarray]]]:
        """Block i's shared block and its use's adapters."""
        k = self.use_of[i]
        return self.blocks[k % len(self.blocks)], self.adapters[k]

    def stack(self, X: np.ndarray) -> np.ndarray:
        return np.concatenate([X, X])

    def unstack(self, Z: np.ndarray) -> np.ndarray:
        return Z[: self.d]

    def block(self, i: int, Z: np.ndarray, attention, feedforward, normed, norms: tuple, per_layer) -> np.ndarray:
        """Block i on [h; e]: h plus its mixer's output (a mamba2_memory block's reads h unnormed and e)."""
        h, e = Z[: self.d], Z[self.d :]
        y = attention(h, embedded=e) if i in self.use_of else attention(normed(h, norms[0]))
        out = np.empty_like(Z)
        np.add(h, y, out=out[: self.d])
        out[self.d :] = e
        return out


def _prefixed(get: Callable[[str], np.ndarray], prefix: str, name: str) -> np.ndarray:
    return get(prefix + name)


def memory_parts(spec: Spec) -> list[Component]:
    """The model's shared blocks (none without mem_blocks)."""
    return [MemoryBlocks(spec)] if spec.mem_blocks else []


__all__ = ["MemoryBlocks", "MemoryMamba2", "MemoryState", "memory_parts"]
