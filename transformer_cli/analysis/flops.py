"""Forward FLOPs and multiply-adds by row of `tfm count`, summed over the spec's components (conventions: costs.py)."""

from __future__ import annotations

from ..components import Pairs, block_components, encoder_model_components, outside_components
from ..components.embedding import embedding
from ..components.encoder import cross_flops, cross_multiply_adds, encoder_run_spec
from ..spec.definition import Spec
from ..spec.stacks import decoder, encoder


def _summed(parts: list[dict[str, int]]) -> dict[str, int]:
    """Rows of several components, rows of the same name added (the order of first appearance kept)."""
    out: dict[str, int] = {}
    for part in parts:
        for name, value in part.items():
            out[name] = out.get(name, 0) + value
    return out


def _encoder(spec: Spec) -> list:
    """An encoder-decoder's encoder components outside its blocks: its inputs' (its own embedding lookup too)."""
    return encoder_model_components(spec) + [embedding(encoder_run_spec(spec))]


def multiply_adds(spec: Spec, b: int, n: int, causal_pairs: bool = False, n_src: int | None = None) -> dict[str, int]:
    """Multiply-adds of the forward pass's matrix products, by product, for b sequences of n tokens (an
    encoder-decoder: targets of n tokens and sources of n_src, default n)."""
    return _rows(spec, b, n, causal_pairs, n_src, "multiply_adds")


def forward_flops(spec: Spec, b: int, n: int, causal_pairs: bool = False, n_src: int | None = None) -> dict[str, int]:
    """Forward FLOPs by component for b sequences of n tokens; `causal_pairs` counts allowed pairs only. An
    encoder-decoder's encoder reads sources of n_src (default n) and adds its rows to the same names."""
    return _rows(spec, b, n, causal_pairs, n_src, "flops")


def _rows(spec: Spec, b: int, n: int, causal_pairs: bool, n_src: int | None, kind: str) -> dict[str, int]:
    """Every component's rows of one kind (flops or multiply_adds): each group of blocks' with the pairs its
    attention scores, the rest's; an encoder-decoder's encoder and cross-attention too."""
    parts = []
    for group in decoder(spec).groups():
        pairs = Pairs(b, n, causal_pairs, group.spec.window, group.spec.chunk)
        parts += [getattr(c, kind)(b, n, pairs) for c in block_components(group.spec)]
    pairs = Pairs(b, n, causal_pairs, spec.window, spec.chunk)
    parts += [getattr(c, kind)(b, n, pairs) for c in outside_components(spec)]
    source = encoder(spec)
    if source is not None:
        n_src = n_src or n
        for group in source.groups():  # (T5Gemma's: sliding and full blocks)
            pairs = Pairs(b, n_src, False, group.spec.window)
            parts += [getattr(c, kind)(b, n_src, pairs) for c in block_components(group.spec)]
        parts += [getattr(c, kind)(b, n_src, Pairs(b, n_src)) for c in _encoder(spec)]
        parts.append((cross_flops if kind == "flops" else cross_multiply_adds)(spec, b, n, n_src))
    return _summed(parts)
