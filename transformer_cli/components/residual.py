"""How a block joins its sublayers to the residual stream, chosen once when the model is built.

pre:      X + Attn(N1(X)), then + FF(N2(.))                      (GPT-2, LLaMA: a final norm after the last block)
post:     N1(X + Attn(X)), then N2(. + FF(.))                    (the original transformer, BERT)
parallel: X + Attn(N1(X)) + FF(N2(X)), both reading the input   (GPT-J, GPT-NeoX, Phi, Falcon; N2 may be N1)
none:     X + Attn(X), then + FF(.)                              (the seed)
sandwich: X + N1o(Attn(N1(X))), then + N2o(FF(N2(.)))           (Gemma 2, 3: a final norm too)
output:   X + N1o(Attn(X)), then + N2o(FF(.))                    (OLMo 2: a final norm too)
An encoder-decoder's decoder block has a cross-attention sublayer between the two, joined the same way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .base import Component, Pairs

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
    return _residual(X, norm(feedforward(norm(X, norms[1])), norms[3]))


def output_norm(X: Array, attention: Sublayer, feedforward: Sublayer, norm: Norm, norms: tuple, cross=None) -> Array:
    X = _residual(X, norm(attention(X), norms[2]))
    return _residual(X, norm(feedforward(X), norms[3]))


LAYOUTS = {"pre": pre_norm, "post": post_norm, "parallel": parallel, "none": no_norm, "sandwich": sandwich,
           "output": output_norm}  # fmt: skip


# which of the block's norms' inputs need a gradient in training (analysis/training.py), by layout, from whether
# the block's input does (g), attention's output (a), the stream between the sublayers (m), the feedforward's (f)
NORM_INPUTS: dict[str, Callable[[bool, bool, bool, bool], list[bool]]] = {
    "pre": lambda g, a, m, f: [g, m],
    "post": lambda g, a, m, f: [m, m or f],
    "sandwich": lambda g, a, m, f: [g, a, m, f],
    "output": lambda g, a, m, f: [a, f],
    "none": lambda g, a, m, f: [],
}


class Residuals(Component):
    """The two residual additions of each block, X + Sublayer(X), in the spec's layout. No parameters."""

    def __init__(self, spec):
        super().__init__(spec)
        self.layout = "parallel" if spec.parallel else spec.norm
        self.join = LAYOUTS[self.layout]  # (X, attention, feedforward, norm, norms, cross) -> the block's output

    def apply(self, X: Array, attention: Sublayer, feedforward: Sublayer, norm: Callable, norms: tuple, cross=None):
        """The block's output in the spec's layout, each sublayer's output times residual_scale (Granite)."""
        s = self.spec.residual_scale
        if s != 1.0:
            attention, feedforward = _scaled(attention, s), _scaled(feedforward, s)
            cross = None if cross is None else (_scaled(cross[0], s), cross[1])
        return self.join(X, attention, feedforward, norm, norms, cross)

    @property
    def shared_norm(self) -> bool:
        """Whether one norm's output feeds both sublayers (parallel blocks sharing N1)."""
        return self.layout == "parallel" and self.spec.shared_norm

    def feedforward_input(self, block_input: bool, middle: bool) -> bool:
        """What the feedforward reads, given the block's input and the stream after attention: the block's input
        (parallel), else the stream."""
        return block_input if self.layout == "parallel" else middle

    def norm_inputs(self, grad: bool, attended: bool, middle: bool, fed: bool) -> list[bool]:
        """Whether each norm's input needs a gradient, given the block's input's (grad), attention's output's, the
        stream's between the sublayers (middle) and the feedforward's output's (fed); parallel: N1 (and N2)
        read the block's input."""
        if self.layout == "parallel":
            return [grad] * (1 if self.spec.shared_norm else 2)
        return NORM_INPUTS[self.layout](grad, attended, middle, fed)

    def flops(self, b: int, n: int, pairs: Pairs) -> dict[str, int]:
        scaled = {"residual scaling": self.spec.N * 2 * self.spec.d * b * n} if self.spec.residual_scale != 1 else {}
        return {"residuals": self.spec.N * 2 * self.spec.d * b * n} | scaled


def _scaled(sublayer: Sublayer, s: float) -> Sublayer:
    """The sublayer with its (fresh) output multiplied by s in place, in the output's dtype."""

    def run(U: Array) -> Array:
        out = sublayer(U)
        out *= out.dtype.type(s)
        return out

    return run
