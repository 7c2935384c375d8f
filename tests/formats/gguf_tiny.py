"""A tiny GGUF llama written by the gguf package's writer, tensor by tensor as asked: for the files whose metadata
and tensors disagree (a block count the tensors do not have, no vocabulary size anywhere, integer tensors)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

d, H, r, V = 8, 2, 16, 12


def block(i: int) -> dict[str, tuple[int, ...]]:
    """Block i's tensors and their shapes (NumPy's order)."""
    shapes = {
        "attn_norm.weight": (d,),
        "attn_q.weight": (d, d),
        "attn_k.weight": (d, d),
        "attn_v.weight": (d, d),
        "attn_output.weight": (d, d),
        "ffn_norm.weight": (d,),
        "ffn_gate.weight": (r, d),
        "ffn_up.weight": (r, d),
        "ffn_down.weight": (d, r),
    }
    return {f"blk.{i}.{name}": shape for name, shape in shapes.items()}


def tensors(N: int = 1) -> dict[str, tuple[int, ...]]:
    out = {"token_embd.weight": (V, d), "output_norm.weight": (d,)}
    for i in range(N):
        out |= block(i)
    return out


def tiny_llama(
    path: Path,
    N: int = 1,
    held: dict[str, tuple[int, ...]] | None = None,
    vocab: bool = True,
    dtype=np.float32,
    seed: int = 0,
) -> Path:
    """A llama of N blocks by its metadata, holding the tensors `held` (all of N blocks' by default) of `dtype`,
    its vocabulary size in the metadata (`vocab`) or not."""
    import gguf

    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(N)
    writer.add_embedding_length(d)
    writer.add_feed_forward_length(r)
    writer.add_head_count(H)
    writer.add_layer_norm_rms_eps(1e-5)
    if vocab:
        writer.add_vocab_size(V)
    for name, shape in (tensors(N) if held is None else held).items():
        writer.add_tensor(name, (rng.standard_normal(shape) * (0.1 if dtype == np.float32 else 3)).astype(dtype))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
