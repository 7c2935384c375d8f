"""The encoder-decoder of seed 001: a second stack, the encoder, and the decoder block's cross-attention.

An encoder-decoder spec (N_enc set) keeps its N blocks for the decoder, the stack that makes the output, so
their names and everything outside them stay as in a decoder-only spec. Each decoder block gains a
cross-attention sublayer (`blocks.{i}.cross.*`: queries from the decoder, keys and values from the encoder's
output; cross_H heads of size cross_m) and its norm (`cross_norm`). The N_enc encoder blocks are blocks of the
same kinds with an unmasked self-attention, named `encoder.{i}.*`; what the encoder has outside its blocks
(positions, a norm of its embedded columns, pre-norm's final norm) is named with the prefix `encoder_`. The
token embedding E is one matrix shared by both stacks, as in T5, BART and the original Transformer.
"""

from __future__ import annotations

from dataclasses import replace

from ..spec.definition import Spec
from ..spec.stacks import decoder, encoder, encoder_spec
from .attention import SOFTMAX_PER_SCORE, MultiHeadAttention
from .base import Component, Pairs, Tensor, Term
from .experts import block_feedforward
from .norm import block_norm, final_norm, norm_kind
from .positional import POSITIONALS
from .residual import Residuals


class CrossAttention(Component):
    """Queries from the decoder's columns, keys and values from the encoder's output: W_Q (cross_H, cross_m, d),
    W_K, W_V (cross_G, cross_m, d_enc: the encoder's width), W_O (cross_H, d, cross_m), and biases with cross_bias.
    No positions, no mask."""

    def tensors(self, prefix: str) -> list[Tensor]:
        H, G, m, d = self.spec.cross_heads, self.spec.cross_kv_heads, self.spec.cross_size, self.spec.d
        p = prefix + "cross."
        out = [Tensor(p + "W_Q", (H, m, d), "cross-attention")]
        out += [Tensor(p + w, (G, m, self.spec.source_d), "cross-attention") for w in ("W_K", "W_V")]
        out.append(Tensor(p + "W_O", (H, d, m), "cross-attention"))
        if self.spec.has_cross_bias:
            out += [Tensor(p + b, (H if b == "b_Q" else G, m), "cross-attention bias") for b in ("b_Q", "b_K", "b_V")]
            out.append(Tensor(p + "b_O", (d,), "cross-attention bias"))
        return out

    def terms(self) -> list[Term]:
        H, G, m, d, d_enc = (
            self.spec.cross_heads,
            self.spec.cross_kv_heads,
            self.spec.cross_size,
            self.spec.d,
            self.spec.source_d,
        )
        if (H, m, G, d_enc) == (self.spec.H, self.spec.m, self.spec.H, d):
            symbols = "4Hmd"
        elif (G, d_enc) == (H, d):
            symbols = "4 H_c m_c d"
        else:  # (T5Gemma's: grouped keys and values of an encoder of its own width)
            symbols = "2 H_c m_c d + 2 G_c m_c d_enc"
        out = [Term(symbols + " (cross)", 2 * H * m * d + 2 * G * m * d_enc, "block")]
        if self.spec.has_cross_bias:
            bias = "3 H_c m_c + d" if G == H else "H_c m_c + 2 G_c m_c + d"
            out.append(Term(bias + " (cross)", (H + 2 * G) * m + d, "block"))
        return out

    def transient_bytes(self, b: int, n: int, sources: int, s: int, fused: bool) -> int:
        """Bytes a prefill of b sequences of n queries holds at the cross-attention's peak (the norm's output, Q and
        the heads' output; unfused, the (H_c, n, sources) scores and their softmax), as self-attention's."""
        H, m = self.spec.cross_heads, self.spec.cross_size
        scores = 0 if fused else 2 * b * H * n * sources * s
        return b * n * (self.spec.d + 2 * H * m) * s + scores

    def saved_bytes(
        self, sources: int, s: int, fused: bool, trains_q: bool = True, trains_o: bool = True, frozen: bool = False
    ) -> tuple[int, int]:
        """Bytes a training pass keeps per target token and per source token (of `sources`), in s-byte elements
        (analysis/training.py): its norm's, W_Q's input (when W_Q trains), W_O's input (SDPA's output: fused or
        when W_O trains), Q and a log-sum-exp (fused) or Q and the softmax's output; K and V of each source."""
        H, m, d = self.spec.cross_heads, self.spec.cross_size, self.spec.d
        per_target = block_norm(self.spec).saved_bytes(d, s, frozen) + (d * s if trains_q else 0)
        if fused or trains_o:
            per_target += H * m * s
        if fused:
            per_target += H * m * s + H * max(s, 4)
        else:
            per_target += (H * m + H * sources) * s
        return per_target, 2 * self.spec.cross_kv_heads * m * s


def encoder_run_spec(spec: Spec) -> Spec:
    """The encoder as a one-stack spec that embeds its own ids with the shared E and has no head."""
    return replace(encoder_spec(spec), V=spec.V_src or spec.V, embed_scale=spec.embed_scale, head=False)


def cross_flops(spec: Spec, b: int, n: int, n_src: int) -> dict[str, int]:
    """The cross-attention's FLOPs over b targets of n columns reading sources of n_src: Q from each target column,
    K and V from each memory column, n x n_src scores per head, in each of the N decoder blocks."""
    H, G, m, d, N = spec.cross_heads, spec.cross_kv_heads, spec.cross_size, spec.d, spec.N
    bias = int(spec.has_cross_bias)
    per_head = N * H * b * n * n_src
    norms = 2 if spec.norm == "sandwich" else 1
    norm = 0 if spec.norm == "none" else norms * norm_kind(spec).per_entry * N * d * b * n
    keys = 2 * (2 * spec.source_d + bias) * G * m * b * n_src
    return {
        "cross-attention projections": N * ((2 * d + bias) * H * m * b * n + keys),
        "cross scores K^T Q": per_head * 2 * m,
        "cross score scaling": N * H * m * b * n if spec.scale != "none" else 0,
        "cross softmax": per_head * SOFTMAX_PER_SCORE,
        "cross weights x V": per_head * 2 * m,
        "cross output projection": N * (2 * d * H * m + bias * d) * b * n,
        "norms": norm,
        "residuals": N * d * b * n,
    }


def cross_multiply_adds(spec: Spec, b: int, n: int, n_src: int) -> dict[str, int]:
    H, G, m, d, N = spec.cross_heads, spec.cross_kv_heads, spec.cross_size, spec.d, spec.N
    return {
        "linear layers": N * (2 * H * m * d * b * n + 2 * G * m * spec.source_d * b * n_src),
        "scores K^T Q": N * H * b * n * n_src * m,
        "weights x V": N * H * b * n * n_src * m,
    }


class CrossNorm(Component):
    """The norm of the cross-attention sublayer (before it with pre-norm, after its residual with post-norm), and
    the sandwich layout's second, of its output (cross_norm_out: T5Gemma's post_cross_attn_layernorm)."""

    def names(self) -> tuple[str, ...]:
        return {"none": (), "sandwich": ("cross_norm", "cross_norm_out")}.get(self.spec.norm, ("cross_norm",))

    def tensors(self, prefix: str) -> list[Tensor]:
        kind = norm_kind(self.spec)
        return [Tensor(prefix + f"{n}.{g}", (self.spec.d,), kind.label) for n in self.names() for g in kind.params]

    def terms(self) -> list[Term]:
        if not self.names():
            return []
        k = len(norm_kind(self.spec).params) * len(self.names())
        return [Term(f"{k}d (cross norm)" if k > 1 else "d (cross norm)", k * self.spec.d, "block")]


class EmbeddingNorm(Component):
    """The encoder's own norm of its embedded columns (BART: layernorm_embedding in each stack)."""

    where = "input"

    def saved_per_token(self, s: int, frozen: bool = False) -> int:
        return 0 if frozen else norm_kind(self.spec).saved_bytes(self.spec.d, s)

    def tensors(self, prefix: str) -> list[Tensor]:
        kind = norm_kind(self.spec)
        return [Tensor(prefix + f"embedding.norm.{g}", (self.spec.d,), "embedding") for g in kind.params]

    def terms(self) -> list[Term]:
        k = len(norm_kind(self.spec).params)
        return [Term(f"{k}d" if k > 1 else "d", k * self.spec.d, "model")]


def encoder_block_components(spec: Spec) -> list[Component]:
    """The encoder block's components, in the order of the pass (none for a decoder-only spec)."""
    if encoder(spec) is None:
        return []
    enc = encoder_spec(spec)
    return [MultiHeadAttention(enc), block_feedforward(enc), Residuals(enc), block_norm(enc)]


class SourceEmbedding(Component):
    """The encoder's own token embedding (d, V_src), where the source has a vocabulary of its own (V_src)."""

    where = "input"

    def tensors(self, prefix: str) -> list[Tensor]:
        return [Tensor(prefix + "embedding.E", (self.spec.source_d, self.spec.V_src or 0), "embedding")]

    def terms(self) -> list[Term]:
        d = "d" if self.spec.source_d == self.spec.d else "d_enc"
        return [Term(f"V_src {d}", (self.spec.V_src or 0) * self.spec.source_d, "model")]


def encoder_model_components(spec: Spec) -> list[Component]:
    """What the encoder has outside its blocks: its embedding (with V_src), positions, embedding norm, final norm."""
    if encoder(spec) is None:
        return []
    enc = encoder_spec(spec)
    out: list[Component] = [SourceEmbedding(spec)] if spec.V_src else []
    out.append(POSITIONALS[spec.positional](enc))
    if spec.embed_norm:
        out.append(EmbeddingNorm(enc))
    return out + [final_norm(enc)]


def decoder_extras(spec: Spec) -> list[Component]:
    """What an encoder-decoder's decoder block has beyond a decoder-only block: cross-attention and its norm."""
    return [CrossAttention(spec), CrossNorm(spec)] if decoder(spec).reads_memory else []


__all__ = [
    "CrossAttention",
    "CrossNorm",
    "Pairs",
    "decoder_extras",
    "encoder_block_components",
    "encoder_model_components",
    "encoder_spec",
]
