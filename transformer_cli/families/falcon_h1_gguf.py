"""Falcon-H1's GGUF files as llama.cpp's converter writes them (conversion/falcon_h1.py: FalconH1Model, arch
falcon-h1) and llama.cpp runs them (src/models/falcon-h1.cpp): in every block attention and Mamba-2 side by side on
the block's normed input, then LLaMA's MLP; rotary in NEOX halves (Q and K rows as stored), the pre-MLP norm named
`ffn_norm` without `.weight`, Mamba-2's tensors and ssm.* keys (families/mamba_gguf.py).

The file holds no multiplier: the converter folds every one into the weights it multiplies (the embedding, the
head, the attention's projections, the state space's input rows z, x, B, C, dt and its output, the MLP's gate and
output), in float32 in its order, and tfm writes the same bytes. A file is therefore read as the model without
multipliers whose weights are the folded ones: the same model, up to that rounding. Where transformers ties the
head to the embedding and a multiplier differs from 1, the file holds the head apart (llama.cpp would otherwise use
the scaled embedding as its head: the converter's file of such a model is off by 5.25).

What llama.cpp cannot run is refused when written: the attention's output bias (llama.cpp loads it and adds
nothing; transformers' attention_bias puts one there), the state space's norm before its gate (llama.cpp gates
first), and biases of the state space's projections. The converter also multiplies the query's and value's biases
by attention_in_multiplier, which transformers applies to the input only: tfm does not copy that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import SpecError
from ..spec.definition import Spec
from .gguf_keys import llama_stack
from .gguf_layout import LLAMA_LAYOUT
from .hybrid_gguf import mamba2_keys, mamba2_metadata
from .keys import Keys
from .layout import Family
from .mamba_gguf import GLOBALS, MAMBA2_HELD, MAMBA2_NAMES


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """falcon-h1.* -> spec: LLaMA's stack whose blocks mix by attention and Mamba-2 side by side."""
    N, H, d = c.count("block_count"), c.count("attention.head_count"), c.count("embedding_length")
    out = llama_stack(c, header, N, H, c.count("attention.key_length", d // H), 1e-5)
    G = c.count("attention.head_count_kv", H)
    out |= {"G": G} if G != H else {}
    out |= {"rope_theta": c.number("rope.freq_base", 10000.0), "attention": "attention_mamba2"}
    out |= {"ff_bias": "blk.0.ffn_up.bias" in header.tensors}
    out |= {"attention_bias": True, "out_bias": False} if "blk.0.attn_q.bias" in header.tensors else {}
    return out | mamba2_keys(c) | {"ssm_norm": "gated" if "blk.0.ssm_norm.weight" in header.tensors else "none"}


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> falcon-h1.* keys beyond the shared ones; what llama.cpp cannot run refused."""
    lost = (
        "attention_bias: llama.cpp adds no bias of the attention's output"
        if spec.attention_bias and spec.out_bias is not False
        else "ssm_norm before_gate: llama.cpp gates first"
        if spec.ssm_norm == "before_gate"
        else None
    )
    if lost is not None:
        raise SpecError(f"{spec.label}: the GGUF falcon-h1 architecture cannot hold this model ({lost}): not written")
    return mamba2_metadata(spec, "falcon-h1")


def _rows(spec: Spec) -> np.ndarray:
    """The state space's input rows' multipliers, ssm_in's times each of z, x, B, C, dt's, per row."""
    inner = (spec.ssm_heads or 0) * (spec.ssm_head_dim or 0)
    states = (spec.ssm_groups or 1) * (spec.ssm_state or 0)
    counts = (inner, inner, states, states, spec.ssm_heads or 0)
    return np.repeat(np.asarray(spec.ssm_scales or (1.0,) * 5), counts)


def folded(spec: Spec, weights: Mapping[str, np.ndarray]) -> tuple[Spec, Mapping[str, np.ndarray], str]:
    """The model as the file holds it: every multiplier folded into its weights as the converter folds them (each
    product in the weight's own type, in the converter's order), the spec without them."""
    s_a, s_k, s_o, s_m, s_y = spec.parallel_scales or (1.0,) * 5
    gate, down = spec.ff_scales or (1.0, 1.0)
    embed = spec.embed_scale if isinstance(spec.embed_scale, float) else 1.0
    factors: dict[str, tuple[float, ...]] = {"embedding.E": (embed,)}
    for i in range(spec.N):
        block = {"attention.W_Q": (s_a,), "attention.W_K": (s_k, s_a), "attention.W_V": (s_a,)}
        block |= {"attention.b_K": (s_k,), "attention.W_O": (s_o,), "mamba.W_in": (s_m,), "mamba.W_out": (s_y,)}
        block |= {"ff.W1": (gate,), "ff.b1": (gate,), "ff.W2": (down,), "ff.b2": (down,)}
        factors |= {f"blocks.{i}.{name}": scales for name, scales in block.items()}
    untied = spec.tie_embeddings and (embed != 1.0 or spec.logit_scale != 1.0)  # (the head held apart)
    rows = _rows(spec)

    class Folded(dict):
        def __missing__(self, name: str) -> np.ndarray:
            source = "embedding.E" if name == "head.W" and untied else name
            array = np.asarray(weights[source])
            if name == "head.W":
                array = array.T if untied else array
                return array * array.dtype.type(spec.logit_scale)
            for scale in factors.get(name, ()):
                array = array * array.dtype.type(scale)
            if name.endswith("mamba.W_in") and spec.ssm_scales is not None:
                array = array * rows.astype(array.dtype)[:, None]
            return array

    held = replace(spec, parallel_scales=None, ssm_scales=None, ff_scales=None, embed_scale="none")
    told = "Falcon-H1's multipliers folded into the weights, as llama.cpp's converter folds them (the file has no key)"
    return replace(held, logit_scale=1.0, tie_embeddings=spec.tie_embeddings and not untied), Folded(), told


_NAMES = {k: v for k, v in LLAMA_LAYOUT.names.items() if k != "norm2.gamma"} | {"norm2.gamma": "ffn_norm"}
_NAMES |= {ours: theirs for ours, theirs in MAMBA2_NAMES.items() if ours != "norm1.gamma"}
LAYOUT = Family("blk.{i}.", _NAMES, GLOBALS, held_as=MAMBA2_HELD)

__all__ = ["LAYOUT", "folded", "gguf_metadata", "gguf_spec"]
