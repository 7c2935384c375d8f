"""Attention weights of one block for an input file: what `tfm attention` shows and saves.

Only what is shown is computed and kept: the requested sequence alone goes through the model, the pass
stops after the requested block, and only that block's (H, n, n) weights are collected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..analysis.memory import (
    HEATMAP_BYTES,
    JSON_BYTES,
    MemoryEstimate,
    check_memory,
    estimate_encoder_decoder,
    estimate_forward,
)
from ..analysis.modes import Mode, build, choose_mode, mode_estimates, stored_form
from ..components import attends
from ..errors import TfmError
from ..io.arrays import open_npy, peek_npy
from ..model.attention_maps import block_weights, decoder_block_weights
from ..spec.definition import Spec
from ..spec.stacks import decoder, encoder
from .runner import check_input, check_input_header, get_weights, lazy_weights, sequences, token_ids


def estimate_maps(spec: Spec, b: int, n: int, dtype: str, shown: int, as_json: bool) -> MemoryEstimate:
    """The pass over one of b sequences, plus the (H, n, n) weights kept and `shown` heads drawn or printed."""
    one = estimate_forward(spec, 1, n, dtype, workers=1)  # one sequence: no threads
    drawn = shown * n * n * JSON_BYTES if as_json else n * n * HEATMAP_BYTES  # heatmaps are drawn one at a time
    return replace(one, input=8 * b * spec.d * n, output=spec.H * n * n * np.dtype(dtype).itemsize + drawn)


def attention_maps(
    spec: Spec,
    input_path: Path,
    weights_path: Path | None,
    seed: int,
    dtype: str,
    block: int,
    head: int | None,
    sequence: int,
    as_json: bool = False,
    target_path: Path | None = None,
    kind: str = "self",
    on_mode: Callable[[Mode], None] | None = None,
    max_memory: str | None = None,
) -> np.ndarray:
    """Every head's weights of `block` for one sequence of the input: (H, n_k, n_q), each column summing to 1.

    An encoder-decoder reads the source (input) and the target, and shows the decoder's self-attention or
    cross-attention, or the encoder's attention (kind). One stack's weights are held as the memory allows
    (analysis/modes.py: under `max_memory`, else the memory available); `on_mode` hears how."""
    if encoder(spec) is not None:
        return _encoder_decoder_maps(
            spec, input_path, target_path, weights_path, seed, dtype, block, head, sequence, kind, max_memory
        )
    if target_path is not None or kind != "self":
        raise TfmError(f"--target and --kind {kind}: {spec.label} has no encoder (N_enc); its attention is self")
    if block >= spec.N:
        raise TfmError(f"--block: got {block}, expected 0 .. {spec.N - 1} (the spec has N = {spec.N})")
    if not attends(spec, block):
        mixer = decoder(spec).layer(block).attention
        kinds = f" (mixer_layers: {list(spec.mixer_layers)})" if spec.mixer_layers else ""
        raise TfmError(f"--block: block {block} mixes its columns by {mixer}, not attention{kinds}")
    if head is not None and head >= spec.H:
        raise TfmError(f"--head: got {head}, expected 0 .. {spec.H - 1} (the spec has H = {spec.H})")
    header = peek_npy(input_path)
    check_input_header(header.shape, header.dtype, spec, str(input_path))
    b, n = sequences(header.shape, header.dtype, spec)
    if sequence >= b:
        raise TfmError(f"--sequence: got {sequence}, expected 0 .. {b - 1} (the input holds {b})")
    shown = 1 if head is not None else spec.H
    maps = estimate_maps(spec, b, n, dtype, shown, as_json)
    weights = lazy_weights(spec, weights_path)
    held = stored_form(weights)
    estimates = {"resident": maps}
    if held is not None:  # each mode the file allows: the pass over one sequence, beside the maps
        estimates = {
            name: replace(e, input=maps.input, output=maps.output, output_is=maps.output_is)
            for name, e in mode_estimates(spec, 1, n, dtype, held).items()
        }
    label = held.label if held is not None else ""
    what = f"block {block}'s attention at n = {n}"
    mode = choose_mode(spec, estimates, dtype, max_memory, what, label, once=True)
    (on_mode or (lambda mode: None))(mode)
    x, _ = check_input(open_npy(input_path), spec, str(input_path), dtype)
    x = _one_sequence(x, spec, sequence)
    model = build(spec, weights if weights is not None else get_weights(spec, weights_path, seed)[0], dtype, mode)
    return block_weights(model, x, block)


def _encoder_decoder_maps(
    spec, source_path, target_path, weights_path, seed, dtype, block, head, sequence, kind, max_memory
):
    from ..model.encoder_decoder import EncoderDecoder

    if target_path is None:
        raise TfmError(f"{spec.label}: an encoder-decoder's attention needs --input SRC and --target TGT")
    stack = encoder(spec) if kind == "encoder" else decoder(spec)
    blocks, heads = stack.spec.N, spec.cross_heads if kind == "cross" else spec.H
    if block >= blocks:
        raise TfmError(f"--block: got {block}, expected 0 .. {blocks - 1} ({kind} attention has {blocks} blocks)")
    if head is not None and head >= heads:
        raise TfmError(f"--head: got {head}, expected 0 .. {heads - 1} ({kind} attention has {heads} heads)")
    arrays = []
    for path in (source_path, target_path):
        header = peek_npy(path)
        check_input_header(header.shape, header.dtype, spec, str(path))
        b, n = sequences(header.shape, header.dtype, spec)
        if sequence >= b:
            raise TfmError(f"--sequence: got {sequence}, expected 0 .. {b - 1} ({path} holds {b})")
        arrays.append((path, header))
    (_, src_header), (_, tgt_header) = arrays
    estimate = estimate_encoder_decoder(spec, 1, src_header.shape[-1], tgt_header.shape[-1], dtype)
    check_memory(estimate, max_memory, f"{kind} attention of block {block}")
    picked = []
    for path, _ in arrays:
        x, _ = check_input(open_npy(path), spec, str(path), dtype)
        picked.append(_one_sequence(x, spec, sequence))
    model = EncoderDecoder(spec, get_weights(spec, weights_path, seed)[0], dtype)
    return decoder_block_weights(model, picked[0], picked[1], block, kind)


def _one_sequence(x: np.ndarray, spec: Spec, sequence: int) -> np.ndarray:
    """Sequence `sequence` of a batch (a copy: the rest of the batch is freed), or the input if it is one."""
    batched = x.ndim == (2 if token_ids(x.shape, x.dtype, spec) else 3)
    return np.array(x[sequence]) if batched else x
