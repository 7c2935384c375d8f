"""Gemma 3n's GGUF files (gemma3n) as convert_hf_to_gguf.py's Gemma3NModel writes them: Gemma 3's keys with each
layer's feedforward width as a list, each layer's kind in attention.sliding_window_pattern, AltUp's streams and
active stream (altup.num_inputs, altup.active_idx), the per-layer inputs' width, the sharing layers, and each
layer's activation sparsity as the normal quantile of its level in float32 (activation_sparsity_scale: read back
as the level of fewest decimals whose float32 quantile it is); the norms' gains as they are (x w); AltUp's
projections stacked (altup_proj, altup_unembd_proj: (K - 1, d, d)), its coefficients kept in F32.

What llama.cpp's gemma3n graph computes otherwise, tfm reads as transformers computes it (docs/hugging-face.md): its
sparsity is 0.95 on the first 10 layers whatever the file says, over r - 1 entries where transformers takes r; its
layers share keys and values from layer 20 on (both as the published E2B and E4B say theirs). The converter pads the
per-layer table with zero rows to the whole vocabulary, where transformers reads row 0 for an id past its own rows:
a model whose table is shorter than its vocabulary is refused when written."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from ..errors import SpecError
from ..spec.definition import Spec
from .config_keys import layer_types
from .gemma4_gguf import SANDWICH_BLOCK, SANDWICH_GLOBALS, per_layer, sandwich_keys
from .gguf_keys import rows, sliding_kinds, windowed
from .keys import Keys
from .layout import Family

LAYOUT = Family(
    "blk.{i}.",
    SANDWICH_BLOCK
    | {
        "altup.scale": "altup_correct_scale.weight",
        "altup.W_correct": "altup_correct_coef.weight",
        "altup.W_predict": "altup_predict_coef.weight",
        "altup.W_router": "altup_router.weight",
        "altup.router_norm.gamma": "altup_router_norm.weight",
        "laurel.W_left": "laurel_l.weight",
        "laurel.W_right": "laurel_r.weight",
        "laurel.norm.gamma": "laurel_post_norm.weight",
    },
    SANDWICH_GLOBALS | {"altup.W_in": "altup_proj.weight", "altup.W_out": "altup_unembd_proj.weight"},
    stacked=frozenset(("altup_proj.weight", "altup_unembd_proj.weight")),  # (K - 1, d, d) on a leading axis
)


def quantile(level: float) -> float:
    """A sparsity level's normal quantile as the converter stores it: float32 (-inf for 0)."""
    import numpy as np

    return float(np.float32(NormalDist().inv_cdf(level))) if level > 0 else -math.inf


def level(z: float) -> float:
    """The sparsity level whose float32 quantile is z, within the converter's float32 error (torch's icdf: about
    1e-6 of z in the tails), of fewest decimals (0.95, not 0.9499999...)."""
    if z == -math.inf:
        return 0.0
    exact, step = NormalDist().cdf(z), 1e-5 * abs(z)
    for digits in range(1, 12):
        if 0 < (found := round(exact, digits)) < 1 and abs(quantile(found) - z) <= step:
            return found
    return exact


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """gemma3n.* -> spec."""
    N, d, H = c.count("block_count"), c.count("embedding_length"), c.count("attention.head_count")
    m, G = c.count("attention.key_length"), c.count("attention.head_count_kv", H)
    widths = per_layer(c, "feed_forward_length", N)
    scales = c.data.get("activation_sparsity_scale", [-math.inf] * N)
    if not isinstance(scales, list) or len(scales) != N or not all(isinstance(z, (int, float)) for z in scales):
        raise c.fail("activation_sparsity_scale", scales, f"a list of {N} numbers, one per layer")
    found = sliding_kinds(c, N, 5)
    out: dict[str, Any] = {
        "N": N,
        "H": H,
        "m": m,
        "d": d,
        "r": widths[0],
        "r_layers": widths,
        "sparsity_layers": [level(float(z)) for z in scales],
        **sandwich_keys(c, header),
        "altup": c.count("altup.num_inputs"),
        "altup_active": c.index("altup.active_idx", 0),
        "laurel_rank": rows(header, "blk.0.laurel_l.weight", "Laurel's rank"),
        "ple_dim": c.count("embedding_length_per_layer_input"),
        "logit_softcap": c.number("final_logit_softcapping", 30.0),
    } | ({"G": G} if G != H else {})
    if c.has("context_length"):
        out["context"] = c.count("context_length")
    if found and "sliding" in found[1]:  # (Gemma 3's rule: the sliding layers' own base; every layer's if all slide)
        out |= windowed(*found)
        local = c.number("rope.freq_base_swa", 10000.0)
        if "attention_layers" not in out:
            out["rope_theta"] = local
        elif local != out["rope_theta"]:
            out["rope_local_theta"] = local
    table = rows(header, "per_layer_token_embd.weight", "the per-layer table")
    out |= {"ple_vocab": table} if table != out["V"] else {}
    S = c.index("attention.shared_kv_layers", 0)
    return out | ({"kv_shared": S} if S else {})


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """spec -> the gemma3n.* keys beyond the shared ones, as Gemma3NModel.set_gguf_parameters writes them."""
    if spec.ple_vocab is not None and spec.ple_vocab != spec.V:
        raise SpecError(
            f"{spec.label}: the GGUF gemma3n architecture cannot hold this model (ple_vocab {spec.ple_vocab} of "
            f"V {spec.V}: the converter pads the per-layer table with zero rows, which ids past it would read, where "
            "this model reads row 0): not written"
        )
    widths = [spec.r if spec.r_layers is None else spec.r_layers[i % len(spec.r_layers)] for i in range(spec.N)]
    levels = spec.sparsity_layers or (0.0,)
    out: dict[str, Any] = {
        "feed_forward_length": widths,
        "altup.active_idx": spec.altup_active,
        "altup.num_inputs": spec.altup or 1,
        "embedding_length_per_layer_input": spec.ple_dim or 0,
        "attention.shared_kv_layers": spec.kv_shared or 0,
        "activation_sparsity_scale": [quantile(levels[i % len(levels)]) for i in range(spec.N)],
        "attention.sliding_window_pattern": [kind == "sliding_attention" for kind in layer_types(spec)],
        "rope.freq_base_swa": float(spec.rope_local_theta or spec.rope_theta),
        "attention.sliding_window": spec.window or 512,
    }
    return out


__all__ = ["LAYOUT", "gguf_metadata", "gguf_spec", "level", "quantile"]
