"""Multi-head latent attention (DeepSeek-V2/V3): each token's keys and values come from one compressed latent.

With c = kv_rank, r = rope_m (the rotated part of each query and key head, its last r entries) and v = v_m:
  queries  Q = W_QB RMSNorm(W_QA x) (a low-rank bottleneck of q_rank), or W_Q x; (H, m) per token
  latent   [l ; k_r] = W_KVA x: l (c) is normalised, k_r (r) is one rotary key part shared by every head
  keys     head h: [W_KVB^h,k l ; k_r], values W_KVB^h,v l (v); scores scale * K^T Q, outputs W_O (d, Hv)
A decoder caches l and k_r only: c + r numbers per token and block, against 2 H m for the same heads in full.

tfm lays each query and key head out as [rotary part | the rest] inside the pass (scores are dot products, so the
order of the entries does not matter as long as queries and keys agree), so the rotary positions turn the first
r entries as they do for every other attention; the checkpoint's order ([rest | rotary]) is kept in the tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import kernels
from ..errors import SpecError
from ..spec.choices import ATTENTIONS
from ..spec.definition import Spec
from ..spec.stacks import kind_of
from ..spec.validate import bad_key
from .attention import SIGMOID_GATE_PER_ENTRY, SOFTMAX_PER_SCORE, MultiHeadAttention
from .base import GgmlCache, Pairs, Tensor, Term
from .norm import RMS_PER_ENTRY


@dataclass
class LatentWeights:
    """One block's latent attention as `prepare` lays it out: matrices on columns, vectors as (k, 1, 1) columns,
    each query head's rows in tfm's order [rotary | rest]."""

    W_Q: np.ndarray | None  # (H m, d), or None with the bottleneck
    W_QA: np.ndarray | None  # (q, d): the bottleneck
    b_QA: np.ndarray | None
    q_gain: np.ndarray | None  # (q, 1, 1)
    W_QB: np.ndarray | None  # (H m, q)
    W_KVA: np.ndarray | None  # (c + r, d); None where the block reuses an earlier block's latents
    b_KVA: np.ndarray | None
    kv_gain: np.ndarray | None  # (c, 1, 1)
    W_KVB: np.ndarray  # (H (m - r + v), c)
    W_O: np.ndarray  # (d, H v)
    b_O: np.ndarray | None
    sinks: np.ndarray | None = None  # (H,): each head's sink logit (attn_sinks: HY-V4)
    W_G: np.ndarray | None = None  # (H v, d): the output gate's projection (attn_gate: HY-V4)
    temperature: tuple[np.ndarray, np.ndarray] | None = None  # (s, b) (H,) each: query_temperature's


@ATTENTIONS.register("latent")
class LatentAttention(MultiHeadAttention):
    @staticmethod
    def check_keys(spec: Spec, data: dict[str, Any], source: str) -> None:
        """Every query head has its own key and value (no G), rotary positions on the last rope_m entries of each
        head (fewer than m: the rest are the heads' own), one stack."""
        if spec.positional not in ("rope", "none"):
            expected = "rope or none with attention: latent (its keys' shared part turns, or is not turned)"
            raise bad_key(source, "positional", spec.positional, expected)
        for key in (
            "G",
            "rope_fraction",
            "qk_norm",
            "N_enc",
            "window",
            "qkv_clip",
            "v_norm",
            "full_m",
            "v_from_k",
        ):
            if key in data and data[key] not in (None, False) and not (key == "G" and data[key] == spec.H):
                raise bad_key(source, key, data[key], f"no {key} with attention: latent")
        if spec.rope_pairing == "proportional":
            raise bad_key(source, "rope_pairing", "proportional", "half or interleaved with attention: latent")
        if spec.latent_scale and spec.q_rank is None:
            raise bad_key(source, "latent_scale", True, "q_rank with latent_scale (it scales the bottleneck's queries)")
        _check_reuse(spec, source)
        if spec.rope_m is None and spec.positional == "rope":
            raise SpecError(f"{source}: key 'rope_m': missing, expected a positive integer with positional: rope")
        if spec.rope_m is not None and (spec.rope_m >= spec.m or spec.rope_m % 2):
            expected = f"an even number below m = {spec.m} (the rest of each head is its own)"
            raise bad_key(source, "rope_m", spec.rope_m, expected)

    def normalised(self) -> str | None:
        return "keys come from a normalised latent"

    @property
    def sizes(self) -> tuple[int, int, int, int, int, int, int]:
        """H, m, d, c (kv_rank), r (rope_m), v (v_m), q (q_rank, 0 without the bottleneck)."""
        s = self.spec
        return s.H, s.m, s.d, s.kv_rank or 0, s.rotated_dims, s.value_size, s.q_rank or 0

    def tensors(self, prefix: str) -> list[Tensor]:
        H, m, d, c, r, v, q = self.sizes
        p, kind, bias = prefix + "attention.", "latent attention", self.spec.attention_bias
        out = []
        if q:
            out.append(Tensor(p + "W_QA", (q, d), kind))
            out += [Tensor(p + "b_QA", (q,), kind)] if bias else []
            out += [Tensor(p + "q_a_norm.gamma", (q,), kind), Tensor(p + "W_QB", (H, m, q), kind)]
        else:
            out.append(Tensor(p + "W_Q", (H, m, d), kind))
        if not self.spec.kv_reused:  # (a block reusing latents makes none)
            out.append(Tensor(p + "W_KVA", (c + r, d), kind))
            out += [Tensor(p + "b_KVA", (c + r,), kind)] if bias else []
            out.append(Tensor(p + "kv_a_norm.gamma", (c,), kind))
        out.append(Tensor(p + "W_KVB", (H, m - r + v, c), kind))
        out.append(Tensor(p + "W_O", (H, d, v), kind))
        out += [Tensor(p + "b_O", (d,), kind)] if self.spec.has_out_bias else []
        out += [Tensor(p + "sinks", (H,), "attention sinks")] if self.spec.attn_sinks else []
        if self.spec.query_temperature:
            out += [Tensor(p + f"temp.{x}", (H,), "query temperature") for x in ("scale", "bias")]
        if self.spec.attn_gate:
            out.append(Tensor(p + "W_G", (H, d) if self.spec.attn_gate_per_head else (H, v, d), "attention gate"))
        return out

    @property
    def gate_rows(self) -> int:
        """The output gate's rows: H v_m (each value entry's), H with one a head, 0 without a gate."""
        s = self.spec
        return (s.H if s.attn_gate_per_head else s.H * s.value_size) * s.attn_gate

    def _parts(self) -> tuple[int, int, int]:
        """Weights of the queries, of the latent and its keys and values, and of the output projection."""
        H, m, d, c, r, v, q = self.sizes
        queries = q * (d + 1 + H * m) if q else H * m * d  # (the bottleneck's norm gain: q)
        own = 0 if self.spec.kv_reused else (c + r) * d + c  # (a block reusing latents: W_KVB alone)
        return queries, own + H * (m - r + v) * c, H * v * d

    def terms(self) -> list[Term]:
        H, m, d, c, r, v, q = self.sizes
        queries, latent, output = self._parts()
        out = [
            Term("q_rank(d + 1 + Hm)" if q else "Hmd", queries, "block"),
            Term(
                ("" if self.spec.kv_reused else "(kv_rank + rope_m)d + kv_rank + ") + "H(m - rope_m + v_m)kv_rank",
                latent,
                "block",
            ),
            Term("H v_m d", output, "block"),
        ]
        if self.spec.attention_bias and not self.spec.kv_reused:
            out.append(Term("q_rank + kv_rank + rope_m" if q else "kv_rank + rope_m", q + c + r, "block"))
        elif self.spec.attention_bias and q:
            out.append(Term("q_rank", q, "block"))
        if self.spec.has_out_bias:
            out.append(Term("d", d, "block"))
        if self.spec.attn_sinks:
            out.append(Term("H", H, "block"))
        if self.spec.attn_gate:
            out.append(Term("Hd" if self.spec.attn_gate_per_head else "H v_m d", self.gate_rows * d, "block"))
        if self.spec.query_temperature:
            out.append(Term("2H", 2 * H, "block"))
        return out

    def prepare(self, get: Callable[[str], np.ndarray]) -> LatentWeights:  # type: ignore[override]
        """The projections as matrices on columns, each query head's rows in tfm's order [rotary | rest]."""
        H, m, d, c, r, v, q = self.sizes
        order = np.r_[m - r : m, 0 : m - r]  # a head's rows: its rotary part first

        def heads_first(W: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(W[:, order].reshape(H * m, -1))

        bias = self.spec.attention_bias
        W_QA = q_gain = b_QA = W_QB = W_Q = None
        q_scale = kv_scale = 1.0  # (LongCat-Flash's: the queries and the latent scaled, here through the norms' gains)
        if self.spec.latent_scale:
            q_scale, kv_scale = (d / q) ** 0.5, (d / c) ** 0.5
        if q:
            W_QA, q_gain = get("attention.W_QA"), get("attention.q_a_norm.gamma").reshape(-1, 1, 1) * q_scale
            W_QB = heads_first(get("attention.W_QB"))
            b_QA = get("attention.b_QA").reshape(-1, 1, 1) if bias else None
        else:
            W_Q = heads_first(get("attention.W_Q"))
        W_KVA = kv_gain = b_KVA = None
        if not self.spec.kv_reused:
            W_KVA, kv_gain = get("attention.W_KVA"), get("attention.kv_a_norm.gamma").reshape(-1, 1, 1) * kv_scale
            b_KVA = get("attention.b_KVA").reshape(-1, 1, 1) if bias else None
        W_KVB = get("attention.W_KVB").reshape(H * (m - r + v), c)
        W_O = np.ascontiguousarray(get("attention.W_O").transpose(1, 0, 2).reshape(d, H * v))
        b_O = get("attention.b_O").reshape(-1, 1, 1) if self.spec.has_out_bias else None
        sinks = get("attention.sinks") if self.spec.attn_sinks else None
        W_G = get("attention.W_G").reshape(-1, d) if self.spec.attn_gate else None
        temperature = temperature_of(get, "attention.temp.") if self.spec.query_temperature else None
        return LatentWeights(
            W_Q, W_QA, b_QA, q_gain, W_QB, W_KVA, b_KVA, kv_gain, W_KVB, W_O, b_O, sinks, W_G, temperature
        )

    def qkv(self, w: LatentWeights, X: np.ndarray, start: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[override]
        """(d, b, n) -> Q, K (b, H, m, n) in the order [rotary | rest], V (b, H, v, n); Q of query_temperature
        times its heads' temperatures at positions start.."""
        Q, latent, rotary = self.compress(w, X)
        K, V = self.keys_values(w, rotary, latent)
        return warm(Q, w.temperature, start), K, V

    def bottleneck(self, a: LatentWeights, X: np.ndarray) -> np.ndarray:
        """The queries' normalised low-rank part RMSNorm(W_QA x + b_QA): (d, b, n) -> (q, b, n)."""
        assert a.W_QA is not None and a.q_gain is not None
        low = kernels.linear(a.W_QA, X)
        if a.b_QA is not None:
            low += a.b_QA
        return kernels.rms_norm(low, a.q_gain, self.spec.latent_eps)

    def compress(
        self, a: LatentWeights, X: np.ndarray, low: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(d, b, n) -> Q (b, H, m, n) in the order [rotary | rest], the normalised latent (b, 1, c, n) and the
        shared rotary key part (b, 1, r, n), not yet rotated; `low`: the bottleneck's, when already made."""
        H, m, d, c, r, v, q = self.sizes
        _, b, n = X.shape
        if a.W_Q is None:  # the bottleneck: W_QB RMSNorm(W_QA x + b_QA)
            assert a.W_QB is not None
            Q = kernels.linear(a.W_QB, self.bottleneck(a, X) if low is None else low)
        else:
            Q = kernels.linear(a.W_Q, X)
        assert a.W_KVA is not None and a.kv_gain is not None  # (a block reusing latents makes none: `reused`)
        both = kernels.linear(a.W_KVA, X)  # (c + r, b, n): the latent, then the shared rotary key part
        if a.b_KVA is not None:
            both += a.b_KVA
        latent = kernels.rms_norm(both[:c], a.kv_gain, self.spec.latent_eps)
        return (
            Q.reshape(H, m, b, n).transpose(2, 0, 1, 3),
            latent.transpose(1, 0, 2)[:, None],
            both[c:].transpose(1, 0, 2)[:, None],
        )

    def keys_values(self, w: LatentWeights, rotary: np.ndarray, latent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every head's keys (b, H, m, t) [rotary | rest] and values (b, H, v, t) from the latents (b, 1, c, t) and
        the shared rotary key parts (b, 1, r, t): W_KVB expands each latent into the heads' own parts."""
        H, m, d, c, r, v, q = self.sizes
        b, t = latent.shape[0], latent.shape[-1]
        KV = kernels.linear(w.W_KVB, latent[:, 0].transpose(1, 0, 2)).reshape(H, m - r + v, b, t)
        K = np.empty((b, H, m, t), dtype=latent.dtype)
        K[:, :, :r] = rotary  # every head's rotary part: the shared one
        K[:, :, r:] = KV[:, : m - r].transpose(2, 0, 1, 3)
        return K, KV[:, m - r :].transpose(2, 0, 1, 3)

    def cache_shapes(self, b: int, slots: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The shared rotary key parts (b, 1, r, slots) and the latents (b, 1, c, slots): c + r per token; none
        where the block reuses an earlier block's."""
        H, m, d, c, r, v, q = self.sizes
        own = not self.spec.kv_reused
        return (b, 1, r * own, slots), (b, 1, c * own, slots)

    def cache_entries(
        self, w: LatentWeights, X: np.ndarray, K: np.ndarray, V: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rotated shared key part (any head's: they are one) and the latent of the columns X (made again from
        X: the keys and values hold it expanded)."""
        r = self.spec.rotated_dims
        return K[:, :1, :r], self.compress(w, X)[1]

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H, m, d, c, r, v, q = self.sizes
        N, tokens, per_head = self.spec.N, b * n, self.spec.N * H * pairs.count
        queries, latent, output = self._parts()
        bias = self.spec.attention_bias * (q + c + r)
        return {
            "Q/K/V projections": N * (2 * (queries - q + latent - c) + bias) * tokens,
            "latent norms": N * RMS_PER_ENTRY * (q + c) * tokens,
            "scores K^T Q": per_head * 2 * m,
            "score scaling": N * H * m * tokens if self.spec.score_scale != 1.0 else 0,
            "softmax": per_head * SOFTMAX_PER_SCORE,
            "weights x V": per_head * 2 * v,
            "output projection": N * (2 * output + self.spec.has_out_bias * d) * tokens,
            "output gate": N
            * ((2 * d + SIGMOID_GATE_PER_ENTRY) * self.gate_rows + H * v * self.spec.attn_gate_per_head)
            * tokens,
        }

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H, m, d, c, r, v, q = self.sizes
        queries, latent, output = self._parts()
        N = self.spec.N
        return {
            "linear layers": N * (queries - q + latent - c + output + self.gate_rows * d) * b * n,
            "scores K^T Q": N * H * pairs.count * m,
            "weights x V": N * H * pairs.count * v,
        }

    def held_per_token(self) -> int:
        """Q and K (H m each), V and the heads' outputs (H v each), the latent and the bottleneck, the gate's."""
        H, m, d, c, r, v, q = self.sizes
        return 2 * H * m + 2 * H * v + c + r + q + self.gate_rows

    def cache_per_token(self, size: int, scale: int) -> int:
        """Bytes a decoder keeps per token and block: the latent and the rotary key part (a scale each); nothing
        where the block reuses an earlier block's."""
        H, m, d, c, r, v, q = self.sizes
        return 0 if self.spec.kv_reused else (c + r) * size + 2 * scale

    def ggml_cache(self) -> GgmlCache | None:
        """llama.cpp's: the latent and the rotary key part as K, no V (its graph reads V from K); none reused."""
        H, m, d, c, r, v, q = self.sizes
        return GgmlCache() if self.spec.kv_reused else GgmlCache(c + r, 0, c + r, 0)

    @property
    def latents(self) -> str:
        """The block's latents: "own", "store" (its own, which later blocks reuse) or "reuse" (latent_layers)."""
        return (self.spec.latent_layers or ("own",))[0]

    def mix(self, model: Any, i: int, w: Any, X: np.ndarray, start: int = 0, cache: Any = None, **options: Any):  # type: ignore[override]
        """attention.py's sublayer, the queries made here where their temperatures need their positions; a block
        that stores its latents leaves them, every column's so far, for the blocks that reuse them."""
        if self.spec.kv_reused:
            return self.reused(model, i, w, X, start, cache, **options)
        if options.get("qkv") is None and (w.temperature is not None or self.latents == "store"):
            options["qkv"] = self.qkv(w, X, start + options.get("offset", 0))
        out = super().mix(model, i, w, X, start, cache, **options)
        if self.latents == "store":  # (the rotary key parts as turned, whatever the block reads them as)
            if cache is not None and X.shape[-1] == 1:  # (a step: every column the cache holds, this one's too)
                used = cache.filled + (not cache.keep)
                stored = (cache.K[..., :used], cache.V[..., :used])
            else:
                stored = (options["qkv"][1][:, :1, : self.spec.rotated_dims], self.compress(w, X)[1])
            options["shared"][("latents", self.spec.rotated_dims > 0)] = stored
        return out

    def reused(
        self, model: Any, i: int, w: Any, X: np.ndarray, start: int = 0, cache: Any = None, **options: Any
    ) -> np.ndarray:
        """The sublayer of a block reusing latents: its own queries attend to the keys and values its W_KVB makes of
        the latents and rotary key parts (already turned) the last block of its kind stored."""
        H, m, d, c, r, v, q = self.sizes
        _, b, n = X.shape
        offset = options.get("offset", 0)
        if w.W_Q is not None:
            Q = kernels.linear(w.W_Q, X)
        else:
            Q = kernels.linear(w.W_QB, self.bottleneck(w, X))
        Q = warm(Q.reshape(H, m, b, n).transpose(2, 0, 1, 3), w.temperature, start + offset)
        rotary, latent = options["shared"][("latents", r > 0)]
        K, V = self.keys_values(w, rotary, latent)
        if r:  # (the queries alone: the keys were turned by the block that made them)
            length = max(start + offset + n, latent.shape[-1])
            model.rotations[i].turn(Q[:, :, :r], start + offset, length, self.spec.rope_pairing)
        how = replace(self.attends, sinks=w.sinks, stop=options.get("stop"), content=options.get("content"))
        how = replace(how, weights_out=options.get("weights_out"))
        if cache is not None and n == 1:  # (a step sees every key stored)
            how = replace(how, causal=False, window=None, chunk=None)
        heads = model.attend(Q, K, V, how, positions=(start + offset, 0), block=i)
        return self.project(w, heads, X)

    tensor_split_refusal = "latent attention is not split here yet"

    def device_cache_per_token(self, size: int, scale: int, tensor: int) -> int:
        """The latent and the rotary key part serve every head: each device holds them whole."""
        return self.cache_per_token(size, scale)


def _check_reuse(spec: Spec, source: str) -> None:
    """Each block that reuses latents finds a block of its kind (rotary or not) storing them before it."""
    kinds = spec.latent_layers
    if not kinds:
        return
    stored = set()
    for i in range(spec.N):
        kind, turns = kinds[i % len(kinds)], kind_of(spec.positional_layers, i, "rope") == "rope"
        if kind == "store":
            stored.add(turns)
        elif kind == "reuse" and turns not in stored:
            what = f"a store block of block {i}'s kind ({'rotary' if turns else 'nope'}) before each reuse block"
            raise bad_key(source, "latent_layers", list(kinds), what)


def temperature_of(get: Callable[[str], np.ndarray], prefix: str) -> tuple[np.ndarray, np.ndarray]:
    return get(prefix + "scale"), get(prefix + "bias")


def warm(Q: np.ndarray, temperature: tuple[np.ndarray, np.ndarray] | None, start: int) -> np.ndarray:
    """Queries (b, heads, m, n) at positions start.. times their heads' s_h ln(t + 1) + b_h (query_temperature)."""
    if temperature is None:
        return Q
    scale, bias = temperature
    logs = np.log(np.arange(start + 1, start + Q.shape[-1] + 1, dtype=np.float64))
    factors = scale[:, None] * logs + bias[:, None]  # (heads, n)
    Q *= factors[:, None, :].astype(Q.dtype)
    return Q
