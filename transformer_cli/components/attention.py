"""Multi-head self-attention: H heads of size m, W_Q (H, m, d), W_K and W_V (G, m, d), W_O (H, d, m), biases.

G key/value heads each serve H/G query heads (grouped-query attention; G = H is the seed's multi-head
attention, G = 1 multi-query). Scores are scale * K^T Q (scale 1, 1/sqrt(m) or a number); a causal mask sets
later keys' scores to -inf.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property, partial
from typing import Any

import numpy as np

from .. import kernels
from ..spec.choices import ATTENTIONS
from ..spec.definition import Spec
from .base import Component, Pairs, Tensor, Term, stacked
from .kv_cache import CachedKeysValues, KVCache
from .norm import RMS_PER_ENTRY, LayerNormWithoutBias, norm_kind

SOFTMAX_PER_SCORE = 5  # max, subtract, exp, sum, divide
SIGMOID_GATE_PER_ENTRY = 4  # neg, exp, +1, divide (attn_gate)
SOFT_CAP_PER_ENTRY = 3  # cap tanh(s / cap): a multiply, the tanh, a multiply


@dataclass
class AttentionWeights:
    """One block's attention as `prepare` stacks it for the pass; vectors as (k, 1, 1) columns."""

    W_qkv: np.ndarray  # ((H + G)m + G v_m, d): rows [W_Q^1..W_Q^H, W_K^1..W_K^G, W_V^1..W_V^G]
    b_qkv: np.ndarray | None  # ((H + G)m + G v_m, 1, 1)
    W_O: np.ndarray  # (d, Hm): columns h*m .. (h+1)*m - 1 are W_O^h
    b_O: np.ndarray | None  # (d, 1, 1)
    qk_norm: tuple | None = None  # the query and the key heads' norm parameters, shaped as `qk_gains` says
    sinks: np.ndarray | None = None  # (H,): each head's sink logit (gpt-oss)
    W_G: np.ndarray | None = None  # (Hm, d): the output gate's projection (attn_gate: AFMoE)


def _norm_part(get: Callable[[str], np.ndarray], prefix: str, name: str) -> np.ndarray:
    return get(prefix + name)


@ATTENTIONS.register("standard")
class MultiHeadAttention(CachedKeysValues, Component):
    @staticmethod
    def check_keys(spec: Spec, data: dict[str, Any], source: str) -> None:
        """What the kind needs of the spec's other keys beyond their own checks (spec/validate.py asks the kind the
        spec names; `data` the keys as written, `source` the file): for standard attention, values made of the keys
        are of their size."""
        if spec.v_from_k and spec.value_size != spec.m:
            from ..spec.validate import bad_key

            raise bad_key(source, "v_from_k", True, f"values of the keys' size m = {spec.m} (no v_m)")

    def normalised(self) -> str | None:
        """Why the scores are not those of W_Q x and W_K y as the projections make them (a norm between), or None:
        the score-variance check (verify/scaling.py) measures a block only where they are."""
        if self.spec.qk_norm:
            return "queries and keys are normalised per head"
        if self.spec.qkv_clip is not None:  # (OLMo's, DBRX's, MPT's clip_qkv: the tails cut)
            return f"queries and keys are clamped to +/-{self.spec.qkv_clip:g}"
        return None

    def tensors(self, prefix: str) -> list[Tensor]:
        H, G, m, d, v = self.spec.H, self.spec.kv_heads, self.spec.m, self.spec.d, self.spec.value_size
        p = prefix + "attention."
        sizes = (("Q", H, m), ("K", G, m), ("V", G, v))[: 2 if self.spec.v_from_k else 3]  # (v_m: MiMo-V2-Flash's)
        out = [Tensor(p + f"W_{x}", (heads, size, d), "attention") for x, heads, size in sizes]
        out.append(Tensor(p + "W_O", (H, d, v), "attention"))
        if self.spec.attention_bias:
            out += [Tensor(p + f"b_{x}", (heads, size), "attention bias") for x, heads, size in sizes]
        if self.spec.has_out_bias:
            out.append(Tensor(p + "b_O", (d,), "attention bias"))
        if self.spec.qk_norm:
            out += [
                Tensor(p + f"{qk}_norm.{g}", shape, "query/key norm")
                for qk, shape in self.qk_shapes
                for g in self.qk.params
            ]
        if self.spec.attn_sinks:
            out.append(Tensor(p + "sinks", (H,), "attention sinks"))
        if self.spec.attn_gate:
            out.append(Tensor(p + "W_G", (H, d) if self.spec.attn_gate_per_head else (H, m, d), "attention gate"))
        if self.spec.rel_per_block and self.spec.positional == "relative":  # (UMT5: each block's own table)
            out.append(Tensor(prefix + "positional.rel_bias", (self.spec.rel_buckets, H), "positional"))
        return out

    @property
    def value_rows(self) -> int:
        """W_V's rows: G v_m, none where the values are the keys' projection (v_from_k)."""
        return 0 if self.spec.v_from_k else self.spec.kv_heads * self.spec.value_size

    @property
    def qk_shapes(self) -> tuple[tuple[str, tuple[int, ...]], tuple[str, tuple[int, ...]]]:
        """The query and key norms' gains: (m,) the heads share, (Hm,) and (Gm,) over all heads' projections
        (OLMo 2), or (H, m) and (G, m), a norm per head (StableLM, Cohere)."""
        H, G, m = self.spec.H, self.spec.kv_heads, self.spec.m
        over = self.spec.qk_norm_over
        if over == "all":
            return (("q", (H * m,)), ("k", (G * m,)))
        if over == "per_head":
            return (("q", (H, m)), ("k", (G, m)))
        return (("q", (m,)), ("k", (m,)))

    @cached_property
    def qk(self):
        """The norm of each query and key head (the spec's norm type over m entries), with qk_norm; a norm per head
        has gains only (StableLM's and Cohere's LayerNorms without a bias)."""
        if self.spec.qk_norm_over == "per_head" and self.spec.norm_type == "layernorm":
            return LayerNormWithoutBias(self.spec)
        return norm_kind(self.spec if self.spec.qk_norm_affine else replace(self.spec, norm_affine=False))

    # -- the forward pass: one block's weights stacked so that all heads go through one product ---------------

    @cached_property
    def attends(self) -> kernels.Attend:
        """How the layer's queries attend to its keys (kernels.attend's options): the spec's scale, mask, window
        and soft cap; a call adds its block's sinks, its positions' bias, its stop and its taps."""
        spec = self.spec
        causal = spec.mask == "causal"
        return kernels.Attend(spec.score_scale, causal, spec.window, spec.chunk, softcap=spec.attn_softcap)

    def prepare(self, get: Callable[[str], np.ndarray]) -> AttentionWeights:
        """W_qkv ((H + G)m + G v_m, d): rows [W_Q^1..W_Q^H, W_K^1..W_K^G, W_V^1..W_V^G]; W_O (d, H v_m): columns
        h v_m .. (h+1) v_m - 1 are W_O^h; biases as (k, 1, 1) columns; the query and key norms' gains as
        (m, 1, 1, 1)."""
        H, m, d, v = self.spec.H, self.spec.m, self.spec.d, self.spec.value_size
        G = self.spec.kv_heads
        parts = ("Q", "K") if self.spec.v_from_k else ("Q", "K", "V")
        W_qkv = stacked(get, [f"attention.W_{x}" for x in parts], [H * m, G * m, G * v][: len(parts)], d)
        W_O = np.ascontiguousarray(get("attention.W_O").transpose(1, 0, 2).reshape(d, H * v))  # (H, d, v) -> (d, Hv)
        b_qkv = b_O = qk = None
        if self.spec.attention_bias:
            b_qkv = np.concatenate([get(f"attention.b_{x}").reshape(-1) for x in parts]).reshape(-1, 1, 1)
        if self.spec.has_out_bias:
            b_O = get("attention.b_O").reshape(-1, 1, 1)
        if self.spec.qk_norm:  # the query norm's parameters, the key norm's, shaped as qk_gains says
            qk = tuple(self.qk_gains(partial(_norm_part, get, f"attention.{x}_norm.")) for x in "qk")
        sinks = get("attention.sinks") if self.spec.attn_sinks else None
        W_G = get("attention.W_G").reshape(-1, d) if self.spec.attn_gate else None  # (Hm, d), or (H, d)
        return AttentionWeights(W_qkv, b_qkv, W_O, b_O, qk, sinks, W_G)

    def mix(
        self,
        model: Any,
        i: int,
        w: Any,
        X: np.ndarray,
        start: int = 0,
        cache: KVCache | None = None,
        weights_out: list | None = None,
        stop: threading.Event | None = None,
        offset: int = 0,
        shared: dict | None = None,
        *,
        qkv: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
        content: Callable | None = None,
    ) -> np.ndarray:
        """Block i's attention sublayer, without its residual: (d, b, n) -> (d, b, n), the columns at positions
        start.. (their queries at start + offset: a fault the decoding check makes). `model` turns the queries and
        keys by the block's positions (`rotate`) and attends with the spec's scale, position bias and threads
        (`attend`, model/transformer.py); `qkv`: the projections, if made; `content`: kernels.Attend's (indexed.py).

        Without a cache the columns attend to each other. With one, a prefill's columns attend to each other and are
        stored in the empty cache; a decoding step's one column is stored, then attends to every column cached."""
        Q, K, V = self.qkv(w, X) if qkv is None else qkv
        model.rotate(Q, K, start + offset, start, block=i)  # (a step's key is cached already turned)
        how = replace(self.attends, sinks=w.sinks, stop=stop, weights_out=weights_out, first=start, content=content)
        if cache is not None and X.shape[-1] == 1:
            stored = cache.store(*self.cache_entries(w, X, K, V))  # start + 1 columns, or w with a window
            K_all, V_all = self.keys_values(w, *stored)  # (b, G, m, start + 1): latents expanded
            first_key = start + 1 - K_all.shape[-1]  # (a window keeps the latest keys only)
            step = replace(how, causal=False, window=None, chunk=None)  # it sees every key the cache holds
            heads = model.attend(Q, K_all, V_all, step, positions=(start + offset, first_key), block=i)
            if shared is not None:  # (for the blocks after it that share its keys and values: reused.py)
                shared[self.spec.window is not None] = (K_all, V_all, first_key, True)
            return self.project(w, heads, X)
        if cache is not None:  # what a decoder's cache keeps (latent attention: its latents and rotary keys)
            cache.fill(*self.cache_entries(w, X, K, V))
        bias = model.rotations[i].content_bias(self, w, Q, K, start + offset, start)  # (DeBERTa's)
        how = how if bias is None else replace(how, content=bias)
        heads = model.attend(Q, K, V, how, positions=(start + offset, start), block=i)
        if shared is not None:
            shared[self.spec.window is not None] = (K, V, start, False)
        return self.project(w, heads, X)

    @property
    def gate_rows(self) -> int:
        """The output gate's rows: H m, H with one a head, 0 without a gate."""
        return (self.spec.H if self.spec.attn_gate_per_head else self.spec.H * self.spec.m) * self.spec.attn_gate

    def qk_gains(self, get: Callable[[str], np.ndarray]) -> tuple:
        """One query or key norm's parameters shaped for `qkv`: (m, 1, 1, 1) against heads as (m, b, heads, n);
        (heads m, 1, 1) over all heads; per head (m, 1, heads, 1)."""
        over = self.spec.qk_norm_over
        if over == "per_head":  # (heads, m) -> (m, 1, heads, 1)
            return tuple(a.T.reshape(a.shape[1], 1, a.shape[0], 1) for a in self.qk.stacked(get, flat=False))
        shape = (-1, 1, 1) if over == "all" else (-1, 1, 1, 1)
        return tuple(a.reshape(shape) for a in self.qk.stacked(get))

    def qkv(self, w: AttentionWeights, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Projections of all heads at once: (d, b, n) -> Q (b, H, m, n), K (b, G, m, n) and V (b, G, v_m, n),
        views; V times value_scale (MiMo-V2-Flash's)."""
        _, b, n = X.shape
        H, G, m, v = self.spec.H, self.spec.kv_heads, self.spec.m, self.spec.value_size
        projected = kernels.linear(w.W_qkv, X)  # ((H + G)m + Gv, b, n)
        if w.b_qkv is not None:
            projected += w.b_qkv
        QKV = projected[: (H + G) * m].reshape(H + G, m, b, n).transpose(2, 0, 1, 3)  # (b, H + G, m, n)
        if self.spec.v_from_k:  # the keys' projection before their norm and rotation (Gemma 4's attention_k_eq_v)
            V = projected[H * m : (H + G) * m].reshape(G, m, b, n).transpose(2, 0, 1, 3).copy()
        else:
            V = projected[(H + G) * m :].reshape(G, v, b, n).transpose(2, 0, 1, 3)  # (b, G, v, n)
        if self.spec.value_scale != 1.0:
            V *= V.dtype.type(self.spec.value_scale)
        if self.spec.v_norm:  # (Gemma 4's: each value head over its entries, no gain)
            V[...] = kernels.rms_norm(V.transpose(2, 0, 1, 3), 1.0, self.spec.norm_eps).transpose(1, 2, 0, 3)
        if w.qk_norm is not None:  # each query and key head normalised over its m entries (or all heads'), in place
            kind, whole = self.qk, self.spec.qk_norm_over == "all"
            for part, params in ((QKV[:, :H], w.qk_norm[0]), (QKV[:, H : H + G], w.qk_norm[1])):
                if whole:  # (b, heads, m, n) -> (heads m, b, n), normalised over its first axis, and back
                    heads = part.shape[1]
                    rows = part.transpose(1, 2, 0, 3).reshape(heads * m, b, n)
                    part[...] = kind.apply(rows, params).reshape(heads, m, b, n).transpose(2, 0, 1, 3)
                else:
                    part[...] = kind.apply(part.transpose(2, 0, 1, 3), params).transpose(1, 2, 0, 3)
        if self.spec.qkv_clip is not None:  # (OLMo's clip_qkv: after the projections and the norms)
            np.clip(projected, -self.spec.qkv_clip, self.spec.qkv_clip, out=projected)
        return QKV[:, :H], QKV[:, H:], V

    def project(self, w: AttentionWeights, heads: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:
        """sum_h W_O^h heads_h (+ b_O): (H, m, b, n) -> (d, b, n); with attn_gate, each entry (or each head) of
        the heads first times sigmoid(W_G X) (or softplus) of the block's input X."""
        H, m, b, n = heads.shape
        W_G = getattr(w, "W_G", None)  # (latent attention's weights have none)
        if W_G is not None and X is not None:
            gate = kernels.linear(W_G, X).reshape(H, -1, b, n)  # (H, m or 1, b, n)
            if self.spec.attn_gate_fn == "softplus":  # torch's: x itself past 20
                heads = heads * np.where(gate > 20, gate, np.log1p(np.exp(np.minimum(gate, 20))))
            else:
                heads = heads / (1.0 + np.exp(-gate))
        heads = heads.reshape(H * m, b, n)
        out = kernels.linear(w.W_O, heads)
        if w.b_O is not None:
            out += w.b_O
        return out

    def terms(self) -> list[Term]:
        H, G, m, d, v = self.spec.H, self.spec.kv_heads, self.spec.m, self.spec.d, self.spec.value_size
        if self.spec.v_from_k:  # no W_V: the values are the keys' projection (Gemma 4's full layers)
            out = [Term("2Hmd + Gmd", (2 * H + G) * m * d, "block", seed=True)]
        elif v != m:  # values of their own size (MiMo-V2-Flash): W_Q, W_K of m, W_V, W_O of v_m
            out = [Term("(H + G)md + (G + H) v_m d", (H + G) * (m + v) * d, "block", seed=True)]
        elif G == H:
            out = [Term("4Hmd", 4 * H * m * d, "block", seed=True)]
        else:  # W_Q and W_O for H heads, W_K and W_V for G
            out = [Term("2Hmd + 2Gmd", 2 * H * m * d + 2 * G * m * d, "block", seed=True)]
        if self.spec.attention_bias:
            qkv = "3Hm" if G == H and v == m else "Hm + 2Gm" if v == m else "(H + G)m + G v_m"
            qkv = "Hm + Gm" if self.spec.v_from_k else qkv
            out_bias = self.spec.has_out_bias
            out.append(Term(qkv + (" + d" if out_bias else ""), (H + G) * m + self.value_rows + d * out_bias, "block"))
        elif self.spec.has_out_bias:  # b_O alone (GPT-Neo)
            out.append(Term("d", d, "block"))
        if self.spec.attn_sinks:
            out.append(Term("H", H, "block"))
        if self.spec.attn_gate:
            out.append(Term("Hd" if self.spec.attn_gate_per_head else "Hmd", H * d * (self.gate_rows // H), "block"))
        if self.spec.rel_per_block and self.spec.positional == "relative":
            out.append(Term("buckets*H", self.spec.rel_buckets * H, "block"))
        if self.spec.qk_norm and self.spec.qk_norm_over in ("all", "per_head"):
            k = len(self.qk.params)
            out.append(Term(f"{k}(H + G)m" if k > 1 else "(H + G)m", k * (H + G) * m, "block"))
        elif self.spec.qk_norm:
            k = 2 * len(self.qk.params)
            out.append(Term(f"{k}m", k * m, "block"))
        return out

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H, G, m, d, N = self.spec.H, self.spec.kv_heads, self.spec.m, self.spec.d, self.spec.N
        tokens, bias, per_head = b * n, int(self.spec.attention_bias), N * H * pairs.count
        out_bias, v = int(self.spec.has_out_bias), self.spec.value_size
        capped = {"score soft-capping": per_head * SOFT_CAP_PER_ENTRY} if self.spec.attn_softcap else {}
        rows = (H + G) * m + self.value_rows  # (every query and key entry, every value entry W_V makes)
        return {
            "Q/K/V projections": N * (2 * rows * d + bias * rows) * tokens,
            "scores K^T Q": per_head * 2 * m,
            "score scaling": N * H * m * tokens if self.spec.score_scale != 1.0 else 0,  # on the queries, once
            "softmax": per_head * SOFTMAX_PER_SCORE,
            "weights x V": per_head * 2 * v,
            "output projection": N * (2 * d * H * v + out_bias * d) * tokens,
            "output gate": N
            * ((2 * d + SIGMOID_GATE_PER_ENTRY) * self.gate_rows + H * m * self.spec.attn_gate_per_head)
            * tokens,
            "query/key norms": N * self.qk.per_entry * (H + G) * m * tokens if self.spec.qk_norm else 0,
            "value norms": N * (RMS_PER_ENTRY - 1) * G * v * tokens if self.spec.v_norm else 0,
        } | capped

    def multiply_adds(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        H, G, m, d, N = self.spec.H, self.spec.kv_heads, self.spec.m, self.spec.d, self.spec.N
        v = self.spec.value_size
        return {
            "linear layers": N * (((H + G) * m + self.value_rows) * d + self.gate_rows * d + d * H * v) * b * n,
            "scores K^T Q": N * H * pairs.count * m,
            "weights x V": N * H * pairs.count * v,
        }

    def saved_bytes(
        self, keys: int, s: int, fused: bool, needed: tuple[bool, bool, bool] = (True,) * 3, frozen: bool = False
    ) -> int:
        """Bytes one query token's training pass keeps besides W_O's input (its output), K and V counted per token,
        reading `keys` keys, in s-byte elements (analysis/training.py). Fused (SDPA, FlashAttention): Q, K, V of G
        heads and a log-sum-exp per head (float32 at least); unfused: Q, K and V repeated to H heads and the
        softmax's output. Nothing when none of Q, K, V needs a gradient (`needed`, LoRA); the query/key norms keep
        theirs for those that do."""
        H, G, m = self.spec.H, self.spec.kv_heads, self.spec.m
        q, k, _ = needed
        out = 0
        if any(needed):
            out = (H + 2 * G) * m * s + H * max(s, 4) if fused else (3 * H * m + H * keys) * s
        if self.spec.qk_norm:
            out += (H * q + G * k) * self.qk.saved_bytes(m, s, frozen)
        return out

    def transient_bytes(self, b: int, n: int, keys: int, s: int, fused: bool) -> int:
        """Bytes a prefill of b sequences of n queries reading `keys` keys each holds at attention's peak beside the
        stream, in s-byte elements (analysis/serving.py): the norm's output, Q and the heads' output; unfused, the
        (H, n, keys) scores and their softmax, both alive (K and V go straight into the cache)."""
        H, m = self.spec.H, self.spec.m
        scores = 0 if fused else 2 * b * H * n * keys * s
        return b * n * (self.spec.d + 2 * H * m) * s + scores

    def held_per_token(self) -> int:
        """Entries the pass holds per token for attention besides the scores: Q and the heads' outputs (H), K, V (G)."""
        return (2 * self.spec.H + 2 * self.spec.kv_heads) * self.spec.m

    # -- split over T tensor-parallel devices (analysis/parallel.py) -------------------------------------------

    tensor_split_refusal: str | None = None  # why its heads cannot be split over devices, or None

    def device_cache_per_token(self, size: int, scale: int, tensor: int) -> int:
        """cache_per_token of one of `tensor` devices: its G / T key/value heads, or one when G < T."""
        G = self.spec.kv_heads
        return self.cache_per_token(size, scale) * max(G // tensor, 1) // G

    def breaks_equivariance(self) -> str | None:
        if self.spec.window == 1:  # each query sees only its own key: attention acts on each column alone
            return None
        if self.spec.mask == "causal":
            return "causal mask"
        return "an unmasked sliding window (a band around each position)" if self.spec.window else None

    def reach(self) -> int | None:
        """With a window w, each block looks w - 1 columns back: N blocks reach N (w - 1) columns back (a chunk of
        C: C - 1 at most)."""
        span = self.spec.window or self.spec.chunk
        return self.spec.N * (span - 1) if span else None

    def shift_dependent(self, n: int, shift: int) -> str | None:
        """Chunks start at absolute positions: a shift moves a column across their boundaries once a pass of n
        columns shifted reaches past the first chunk."""
        C = self.spec.chunk
        if C is None or n + shift <= C:
            return None
        return f"chunk: the attention chunks of {C} start at absolute positions (positions up to {n + shift - 1})"

    def causal(self) -> bool:
        return self.spec.mask == "causal"
