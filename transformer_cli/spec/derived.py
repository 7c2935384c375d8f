"""What follows from a spec's keys: the factors, sizes and counts the components read (the score's scale, G, the
value heads' size, the stream's rows, ...), one property each. `Spec` (definition.py) takes them from here, so its
module declares the keys alone."""

from __future__ import annotations

import math
from typing import Any

from .dependent import LATENT, SHARED_KV


class Derived:
    """The properties of a Spec computed from its keys (the annotations name the keys they read)."""

    N: int
    H: int
    m: int
    d: int
    name: str
    scale: str | float
    norm: str
    embed_scale: str | float
    attention_bias: bool
    out_bias: bool | None
    cross_H: int | None
    cross_m: int | None
    cross_G: int | None
    cross_bias: bool | None
    encoder: tuple[tuple[str, Any], ...] | None
    embed_dim: int | None
    embed_project: bool
    ple_dim: int | None
    altup: int | None
    hc_streams: int | None
    mem_blocks: int | None
    block_groups: int | None
    G: int | None
    attention: str
    rope_m: int | None
    rope_fraction: float
    v_m: int | None
    E: int | None
    router_hash: bool
    feedforward_layers: tuple[str, ...] | None
    ngram_blocks: tuple[int, ...] | None

    @property
    def embed_factor(self) -> float:
        """What the looked-up embedding columns are multiplied by: sqrt(d), a number, or 1."""
        if self.embed_scale == "none":
            return 1.0
        if self.embed_scale == "sqrt":
            return math.sqrt(self.d)
        return float(self.embed_scale)

    @property
    def score_scale(self) -> float:
        """The factor that multiplies every attention score before the softmax."""
        if self.scale == "none":
            return 1.0
        if self.scale == "sqrt":
            return 1.0 / math.sqrt(self.m)
        return float(self.scale)

    @property
    def has_out_bias(self) -> bool:
        """b_O: out_bias if the spec sets it, else attention_bias."""
        return self.attention_bias if self.out_bias is None else self.out_bias

    cross_heads = property(lambda self: self.cross_H or self.H)
    cross_size = property(lambda self: self.cross_m or self.m)
    cross_kv_heads = property(lambda self: self.cross_G or self.cross_heads)
    source_d = property(lambda self: dict(self.encoder or ()).get("d", self.d))  # the encoder's width
    has_cross_bias = property(lambda self: self.attention_bias if self.cross_bias is None else self.cross_bias)

    @property
    def embed_width(self) -> int:
        """The token embedding's width: embed_dim, else d."""
        return self.embed_dim or self.d

    @property
    def input_width(self) -> int:
        """The rows of the columns the pass takes: embed_dim under embed_project (ELECTRA's), else d; and the N P
        rows of the per-layer inputs' token part below them (Gemma 4's), or a row of the tokens' ids where blocks
        choose their experts by them (DeepSeek-V4's hashed blocks: floor(x) mod V of a real row)."""
        own = self.embed_dim if self.embed_project and self.embed_dim else self.d
        return own + self.N * (self.ple_dim or 0) + self.reads_ids

    @property
    def reads_ids(self) -> bool:
        """Whether some block reads the tokens' ids: its experts chosen by them (router_hash, feedforward_layers'
        hashed), or n-gram inputs (ngram_blocks)."""
        hashed = bool(self.E) and (self.router_hash or "hashed" in (self.feedforward_layers or ()))
        return hashed or bool(self.ngram_blocks)  # (and Qwen4's n-gram inputs)

    @property
    def stream_rows(self) -> int:
        """The rows a column carries between blocks: d, or AltUp's K streams of d (Gemma 3n's), or hyper-connections'
        n (DeepSeek-V4's), or the embedded columns beside the stream (Zamba2's shared blocks read them)."""
        return (self.altup or self.hc_streams or (2 if self.mem_blocks else 1)) * self.d

    @property
    def stored_blocks(self) -> int:
        """The blocks whose weights the model holds: block_groups (ALBERT's shared layers), else N."""
        return self.block_groups or self.N

    def weights_of(self, i: int) -> int:
        """The stored block whose weights block i runs: ALBERT's int(i / (N / G)) of block_groups G."""
        return int(i / (self.N / self.block_groups)) if self.block_groups else i

    @property
    def final_norm(self) -> bool:
        """A norm after the last block: the pre-norm, sandwich and output layouts have one."""
        return self.norm in ("pre", "sandwich", "output")

    @property
    def kv_heads(self) -> int:
        """G: the key/value heads (H unless the spec sets G)."""
        return self.G if self.G is not None else self.H

    @property
    def rotated_dims(self) -> int:
        """Rotary positions turn the first int(m * rope_fraction) dims of each query and key head (latent attention:
        its rope_m)."""
        if self.attention in LATENT or self.attention in SHARED_KV:
            return self.rope_m or 0
        return int(self.m * self.rope_fraction)

    @property
    def value_size(self) -> int:
        """Each value head's size: m, or latent attention's v_m."""
        return self.v_m or self.m

    @property
    def label(self) -> str:
        return self.name or "unnamed"


__all__ = ["Derived"]
