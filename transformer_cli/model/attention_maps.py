"""Attention weights of one block, from arrays: the pass stops after the block asked for, and only that block's
(H, n, n) weights are collected (the file and memory half of `tfm attention` is tasks/attention_maps.py)."""

from __future__ import annotations

import numpy as np

from ..components.cross import Memory
from .transformer import Transformer, to_columns


def block_weights(model: Transformer, x: np.ndarray, block: int) -> np.ndarray:
    """Block `block`'s attention weights for one sequence x (d, n) or token ids (n,): (H, n_k, n_q); the blocks
    after it never run."""
    Z, _ = model.columns(x)  # (d, 1, n), as Transformer.forward starts
    found: list[np.ndarray] = []
    model.run(Z, last=block, weights=lambda i, kind: found if i == block else None)
    return found[0][0]  # (H, n_k, n_q)


def decoder_block_weights(model, source: np.ndarray, target: np.ndarray, block: int, kind: str) -> np.ndarray:
    """An encoder-decoder's attention weights for one source and target: the encoder's block (kind 'encoder',
    (H, n_src, n_src)), or the decoder's self-attention ('self', (H, n_tgt, n_tgt)) or cross-attention ('cross',
    (H_c, n_src, n_tgt): keys are the source's columns, queries the target's)."""
    if kind == "encoder":
        return block_weights(model.encoder, source, block)
    decoder = model.decoder
    memory = Memory(to_columns(model.encode(source), decoder.dtype), decoder.spec.cross_kv_heads)  # (d_enc, 1, n_src)
    Z, _ = decoder.columns(target)
    found: list[np.ndarray] = []  # the block shown gives its weights of that kind; the blocks after it never run
    decoder.run(Z, last=block, memory=memory, weights=lambda i, asked: found if (i, asked) == (block, kind) else None)
    return found[0][0]


__all__ = ["block_weights", "decoder_block_weights"]
