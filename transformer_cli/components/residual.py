"""How a block joins its sublayers to the residual stream, chosen once when the model is built.

pre:      X + Attn(N1(X)), then + FF(N2(.))                      (GPT-2, LLaMA: a final norm after the last block)
post:     N1(X + Attn(X)), then N2(. + FF(.))                    (the original transformer, BERT)
parallel: X + Attn(N1(X)) + FF(N2(X)), both reading the input   (GPT-J, GPT-NeoX, Phi, Falcon; N2 may be N1)
none:     X + Attn(X), then + FF(.)                              (the seed)
sandwich: X + N1o(Attn(N1(X))), then + N2o(FF(N2(.)))           (Gemma 2, 3: a final norm too; T5Gemma)
output:   X + N1o(Attn(X)), then + N2o(FF(.))                    (OLMo 2: a final norm too)
An encoder-decoder's decoder block has a cross-attention sublayer between the two, joined the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..spec.choices import NORMS
from .base import Component, Pairs, Tensor

Array = np.ndarray
Sublayer = Callable[[Array], Array]
Norm = Callable[[Array, tuple | None], Array]


def _residual(X: Array, out: Array) -> Array:
    """X + out, written into the sublayer's fresh output array."""
    out += X
    return out


def pre_norm(X: Array, attention: Sublayer, feedforward: Sublayer, norm: Norm, norms: tuple, cross=None) -> Array:
    X = _residual(X, attention(norm(X, norms[0])))
    if cross is not None:
        X = _residual(X, cross[0](norm(X, cross[1])))
    return _residual(X, feedforward(norm(X, norms[1])))


def post_norm(X: Array, attention: Sublayer, feedforward: Sublayer, norm: Norm, norms: tuple, cross=None) -> Array:
    X = norm(_residual(X, attention(X)), norms[0])
    if cross is not None:
        X = norm(_residual(X, cross[0](X)), cross[1])
    return norm(_residual(X, feedforward(X)), norms[1])


def parallel(X: Array, attention: Sublayer, feedforward: Sublayer, norm: Norm, norms: tuple, cross=None) -> Array:
    first = norm(X, norms[0])
    second = first if norms[1] is None else norm(X, norms[1])
    return _residual(X, _residual(feedforward(second), attention(first)))


def no_norm(X: Array, attention: Sublayer, feedforward: Sublayer, norm: Norm, norms: tuple, cross=None) -> Array:
    X = _residual(X, attention(X))
    if cross is not None:
        X = _residual(X, cross[0](X))
    return _residual(X, feedforward(X))


def sandwich(X: Array, attention: Sublayer, feedforward: Sublayer, norm: Norm, norms: tuple, cross=None) -> Array:
    X = _residual(X, norm(attention(norm(X, norms[0])), norms[2]))
    if cross is not None:  # (sublayer, its norm, its output's norm)
        X = _residual(X, norm(cross[0](norm(X, cross[1])), cross[2]))
    return _residual(X, norm(feedforward(norm(X, norms[1])), norms[3]))


def output_norm(X: Array, attention: Sublayer, feedforward: Sublayer, norm: Norm, norms: tuple, cross=None) -> Array:
    X = _residual(X, norm(attention(X), norms[2]))
    return _residual(X, norm(feedforward(X), norms[3]))


@dataclass(frozen=True)
class Layout:
    """A layout: how a block joins its sublayers, and which of its norms' inputs need a gradient in training
    (analysis/training.py), from whether the block's input does (g), attention's output (a), the stream between
    the sublayers (m), the feedforward's output (f), and whether parallel blocks share one norm (one)."""

    join: Callable  # (X, attention, feedforward, norm, norms, cross) -> the block's output
    norm_inputs: Callable[[bool, bool, bool, bool, bool], list[bool]]


# the spec's `norm` placements; parallel blocks are the spec's `parallel` key, pre-norm
NORMS.register("none")(Layout(no_norm, lambda g, a, m, f, one: []))
NORMS.register("pre")(Layout(pre_norm, lambda g, a, m, f, one: [g, m]))
NORMS.register("post")(Layout(post_norm, lambda g, a, m, f, one: [m, m or f]))
NORMS.register("sandwich")(Layout(sandwich, lambda g, a, m, f, one: [g, a, m, f]))
NORMS.register("output")(Layout(output_norm, lambda g, a, m, f, one: [a, f]))
PARALLEL = Layout(parallel, lambda g, a, m, f, one: [g] * (1 if one else 2))  # N1 (and N2) read the input


class Residuals(Component):
    """The two residual additions of each block, X + Sublayer(X), in the spec's layout. No parameters."""

    def __init__(self, spec):
        super().__init__(spec)
        self.layout = PARALLEL if spec.parallel else NORMS[spec.norm]
        self.join = self.layout.join  # (X, attention, feedforward, norm, norms, cross) -> the block's output

    def apply(
        self,
        X: Array,
        attention: Sublayer,
        feedforward: Sublayer,
        norm: Callable,
        norms: tuple,
        cross=None,
        tap: Callable[[str, Array], None] | None = None,
    ) -> Array:
        """The block's output in the spec's layout, each sublayer's output times residual_scale (Granite); `tap`
        (unless None) hears each sublayer's output as it is made, by name ('attention', 'cross', 'feedforward')."""
        s = self.spec.residual_scale
        if s != 1.0:
            attention, feedforward = _scaled(attention, s), _scaled(feedforward, s)
            cross = None if cross is None else (_scaled(cross[0], s), *cross[1:])
        if tap is not None:
            attention, feedforward = _tapped(attention, tap, "attention"), _tapped(feedforward, tap, "feedforward")
            cross = None if cross is None else (_tapped(cross[0], tap, "cross"), *cross[1:])
        return self.join(X, attention, feedforward, norm, norms, cross)

    @property
    def shared_norm(self) -> bool:
        """Whether one norm's output feeds both sublayers (parallel blocks sharing N1)."""
        return self.layout is PARALLEL and self.spec.shared_norm

    def joins(self, cross: bool = False) -> int:
        """How many sums a block adds to the stream (what tensor parallelism all-reduces): one a sublayer (with a
        cross-attention, `cross`, three), one in all for a parallel block."""
        return 1 if self.layout is PARALLEL else 2 + cross

    def feedforward_input(self, block_input: bool, middle: bool) -> bool:
        """What the feedforward reads, given the block's input and the stream after attention: the block's input
        (parallel), else the stream."""
        return block_input if self.layout is PARALLEL else middle

    def norm_inputs(self, grad: bool, attended: bool, middle: bool, fed: bool) -> list[bool]:
        """Whether each norm's input needs a gradient, given the block's input's (grad), attention's output's, the
        stream's between the sublayers (middle) and the feedforward's output's (fed)."""
        return self.layout.norm_inputs(grad, attended, middle, fed, bool(self.spec.shared_norm))

    def tensors(self, prefix: str) -> list[Tensor]:
        """Gemma 4's layer scale: the block's number, a buffer (not a parameter) in its files."""
        return [Tensor(prefix + "scale", (1,), "layer scale", buffer=True)] if self.spec.layer_scale else []

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        scaled = {"residual scaling": self.spec.N * 2 * self.spec.d * b * n} if self.spec.residual_scale != 1 else {}
        layer = {"layer scaling": self.spec.N * self.spec.d * b * n} if self.spec.layer_scale else {}
        return {"residuals": self.spec.N * 2 * self.spec.d * b * n} | scaled | layer


def _scaled(sublayer: Sublayer, s: float) -> Sublayer:
    """The sublayer with its (fresh) output multiplied by s in place, in the output's dtype."""

    def run(U: Array) -> Array:
        out = sublayer(U)
        out *= out.dtype.type(s)
        return out

    return run


def _tapped(sublayer: Sublayer, tap: Callable[[str, Array], None], name: str) -> Sublayer:
    """The sublayer, its output handed to `tap` before the residual adds to it (in place: a tap copies what it
    keeps)."""

    def run(U: Array) -> Array:
        out = sublayer(U)
        tap(name, out)
        return out

    return run
