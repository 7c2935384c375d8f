"""Gemma, Gemma 2 and Gemma 3 (text): the (1 + gamma) RMSNorm, the sqrt(d) embedding, GeGLU; Gemma 2 and 3's
sandwich of norms, soft-capping and layers of two kinds, Gemma 3's query/key norms and local rope base.

Their GGUF files (gemma, gemma2, gemma3) as convert_hf_to_gguf.py writes them: every norm stored as 1 + w (tfm
reads w back: norm_plus_one, as Hugging Face keeps it), the head tied (no output.weight). What the file does not
hold is read as llama.cpp reads it: rope base 10000 for Gemma and Gemma 2, their layers' kinds by the fixed
pattern (Gemma 2: every other layer slides from the first; Gemma 3: five to one), and Gemma 2/3's score scale
1/sqrt(d/H) for the 27B models (46 and 62 layers), 1/sqrt(head size) otherwise (query_pre_attn_scalar is not in
the file)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..spec.definition import Spec
from .checkpoints import GEMMA2 as GEMMA2_CHECKPOINT
from .checkpoints import LLAMA, VAULTGEMMA
from .config_keys import shared_keys
from .gguf_layout import LLAMA_LAYOUT, Transform
from .keys import Keys
from .layout import Family
from .parts import CAUSAL_PRE, activation, kv_heads, llama_like, rope, sliding_rope, typed_layers, typed_ropes
from .record import Gguf, Record


def gemma(c: Keys) -> dict[str, Any]:
    """GemmaForCausalLM: (1 + gamma) RMSNorm, embeddings times sqrt(d), heads of 256, GeGLU, a tied head.

    transformers 5.x reads hidden_act only, its legacy "gelu" meaning the tanh form; 4.x read hidden_activation.
    """
    if c.flag("use_bidirectional_attention", False):
        raise c.refuse("use_bidirectional_attention", True, "tfm maps Gemma's causal language model only")
    spec = llama_like(
        c, c.count("num_key_value_heads", 16), 256, 1e-6, True, 8192, act="gelu_pytorch_tanh", gelu="gelu"
    )
    if c.has("hidden_activation") and activation(c, "hidden_activation", "") != spec["activation"]:
        why = "it differs from hidden_act, which transformers 5.x builds (4.x built hidden_activation)"
        raise c.refuse("hidden_activation", c.data["hidden_activation"], why)
    return spec | {"attention_bias": c.flag("attention_bias", False), "norm_plus_one": True, "embed_scale": "sqrt"}


def gemma2(c: Keys) -> dict[str, Any]:
    """Gemma2ForCausalLM: Gemma's embedding and GeGLU (hidden_activation), four norms a block (sandwich), scores
    scaled by query_pre_attn_scalar^-1/2 and soft-capped, logits soft-capped, sliding and full layers alternating
    (layer_types; by default layer 0 slides)."""
    caps = {
        "attn_softcap": c.nullable_number("attn_logit_softcapping", 50.0),
        "logit_softcap": c.nullable_number("final_logit_softcapping", 30.0),
    }
    return _gemma_like(c, caps, rope(c, c.count("max_position_embeddings", 8192), c.count("head_dim", 256)), period=2)


def vaultgemma(c: Keys) -> dict[str, Any]:
    """VaultGemmaForCausalLM (Google's differentially private VaultGemma 1B): Gemma 2's block with its norms before
    each sublayer alone (no output norms)."""
    return gemma2(c) | {"norm": "pre"}


def gemma3_text(c: Keys) -> dict[str, Any]:
    """Gemma3ForCausalLM: Gemma 2's block with (1 + gamma) RMSNorms of each query and key head, five sliding
    layers to one full by default, the sliding layers' own rope base, the logits soft-capped only where the file
    asks; the scores never (transformers 5.24 keeps attn_logit_softcapping and does not apply it: said on stderr)."""
    full, local = _gemma3_ropes(c, c.count("max_position_embeddings", 131072), c.count("head_dim", 256))
    c.nullable_number("attn_logit_softcapping", None)  # (checked, then left: transformers stores it, never applies it)
    c.ignored("attn_logit_softcapping", "5.24 stores it and never applies it to Gemma 3's attention scores")
    caps = {"logit_softcap": c.nullable_number("final_logit_softcapping", None)}
    return sliding_rope(
        _gemma_like(c, caps | {"qk_norm": True}, full, period=c.count("sliding_window_pattern", 6)), local
    )


def _gemma_like(c: Keys, extras: dict[str, Any], rotary: dict[str, Any], period: int) -> dict[str, Any]:
    """Gemma 2 and 3: the block around a sandwich of norms, the scale, the layers' kinds."""
    if c.flag("use_bidirectional_attention", False):
        raise c.refuse("use_bidirectional_attention", True, "tfm maps Gemma's causal language model only")
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    m = c.count("head_dim", 256)
    scalar = c.number("query_pre_attn_scalar", 256)
    kinds = ["sliding_attention" if (i + 1) % period else "full_attention" for i in range(c.count("num_hidden_layers"))]
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers"),
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size"),
        "V": c.count("vocab_size"),
        **kv_heads(c, "num_key_value_heads", c.count("num_key_value_heads", 4), H),
        "tie_embeddings": c.flag("tie_word_embeddings", True),
        **rotary,
        "scale": "sqrt" if scalar == m else scalar**-0.5,
        "norm": "sandwich",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("rms_norm_eps", 1e-6),
        "norm_plus_one": True,
        "embed_scale": "sqrt",
        "feedforward": "gated",
        "activation": activation(c, "hidden_activation", "gelu_pytorch_tanh"),
        "ff_bias": False,
        "attention_bias": c.flag("attention_bias", False),
        **{key: value for key, value in extras.items() if value is not None},
        **typed_layers(c, c.count("num_hidden_layers"), c.nullable_count("sliding_window", 4096), kinds),
    }


def _gemma3_ropes(c: Keys, max_positions: int, m: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Gemma 3's rotary keys of the full layers (base 1e6) and of the sliding layers (10,000, or 4.x's
    rope_local_base_freq)."""
    return typed_ropes(c, max_positions, m, 1e6, 10000.0, c.number("rope_local_base_freq", 10000.0))


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Gemma's config.json (the activation under both its names, as 4.x and 5.x read it)."""
    gelu = "gelu_pytorch_tanh"
    return shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": gelu, "hidden_activation": gelu}


def config2(spec: Spec) -> dict[str, Any]:
    """spec -> Gemma 2's config.json: Gemma's with the score scale, the window and the soft-capping."""
    return config(spec) | {
        "query_pre_attn_scalar": spec.m if spec.scale == "sqrt" else float(spec.scale) ** -2,
        "sliding_window": spec.window,
        "attn_logit_softcapping": spec.attn_softcap,
        "final_logit_softcapping": spec.logit_softcap,
    }


def config3(spec: Spec) -> dict[str, Any]:
    """spec -> Gemma 3's config.json: Gemma 2's with five sliding layers to one full and their own rope base."""
    local = spec.rope_local_theta or spec.rope_theta
    return config2(spec) | {"sliding_window_pattern": 6, "rope_local_base_freq": local}


# -- GGUF ---------------------------------------------------------------------------------------------------------

GGUF2_LAYOUT = Family(
    "blk.{i}.",
    {ours: theirs for ours, theirs in LLAMA_LAYOUT.names.items() if not ours.startswith("norm2")}
    | {
        "norm1_out.gamma": "post_attention_norm.weight",
        "norm2.gamma": "ffn_norm.weight",
        "norm2_out.gamma": "post_ffw_norm.weight",
    },
    LLAMA_LAYOUT.globals_,
)


def _less_one(rows: np.ndarray, meta: dict[str, Any]) -> np.ndarray:
    """The converter stores Gemma's norm gains as 1 + w: w back."""
    return rows - 1.0


NORMS = (
    "attn_norm.weight",
    "ffn_norm.weight",
    "post_attention_norm.weight",
    "post_ffw_norm.weight",
    "attn_q_norm.weight",
    "attn_k_norm.weight",
    "output_norm.weight",
)
LESS_ONE: dict[str, Transform] = dict.fromkeys(NORMS, _less_one)
PLUS_ONE: dict[str, Transform] = dict.fromkeys(NORMS, lambda rows, meta: rows + 1.0)


def _common(c: Keys, spec: dict[str, Any], base: float) -> dict[str, Any]:
    """What the three read alike beside the sizes (`spec`)."""
    return spec | {
        "positional": "rope",
        "rope_theta": c.number("rope.freq_base", base),
        "norm_type": "rmsnorm",
        "norm_eps": c.number("attention.layer_norm_rms_epsilon", 1e-6),
        "norm_plus_one": True,
        "embed_scale": "sqrt",
        "feedforward": "gated",
        "activation": "gelu",
        "ff_bias": False,
        "tie_embeddings": True,
    }


def gguf_gemma(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Gemma: (1 + w) RMSNorms, embeddings times sqrt(d), GeGLU (tanh), a tied head."""
    return _common(c, spec, 10000.0)


def _layered(c: Keys, spec: dict[str, Any], big: int, period: int) -> dict[str, Any]:
    """Gemma 2 and 3: the sandwich of norms, soft-capping where the file says, the score scale (the 27B model's,
    of `big` layers, by d/H), sliding layers (`period`: one full layer in so many)."""
    N, m = spec["N"], spec["m"]
    spec |= {"norm": "sandwich"}
    if N == big and spec["d"] // spec["H"] != m:
        spec["scale"] = (spec["d"] / spec["H"]) ** -0.5
    for ours, theirs in (("attn_softcap", "attn_logit_softcapping"), ("logit_softcap", "final_logit_softcapping")):
        if c.has(theirs):
            spec[ours] = c.number(theirs)
    if c.has("attention.sliding_window"):
        kinds = ["sliding" if (i + 1) % period else "full" for i in range(N)]
        spec["window"] = c.count("attention.sliding_window")
        if "full" in kinds:
            spec["attention_layers"] = kinds
    return spec


def gguf_gemma2(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    return _layered(c, _common(c, spec, 10000.0), 46, 2)


def gguf_gemma3(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Gemma 3: Gemma 2's block with query/key norms, the full layers' base (and linear scaling), the sliding
    layers' own base (rope.freq_base_swa; every layer's when all slide, under six layers)."""
    spec = _layered(c, _common(c, spec, 1e6) | {"qk_norm": True}, 62, 6)
    if c.has("rope.scaling.type"):
        kind = c.text("rope.scaling.type")
        if kind != "linear":
            raise c.refuse("rope.scaling.type", kind, "tfm reads Gemma 3's full layers with linear scaling or none")
        spec |= {"rope_scaling": "linear", "rope_factor": c.number("rope.scaling.factor")}
    return sliding_rope(spec, {"rope_theta": c.number("rope.freq_base_swa", 10000.0)})


def gguf_metadata3(spec: Spec) -> dict[str, Any]:
    """spec -> the gemma3.* key beyond the shared ones: the sliding layers' base (every layer's when all slide)."""
    return {"rope.freq_base_swa": float(spec.rope_local_theta or spec.rope_theta)}


GEMMA = Record(
    "gemma",
    "GemmaForCausalLM",
    gemma,
    LLAMA,
    config,
    Gguf("gemma", LLAMA_LAYOUT, gguf_gemma, base="sizes", transforms=LESS_ONE, redo=PLUS_ONE),
    config_alone=True,
)
GEMMA2 = Record(
    "gemma2",
    "Gemma2ForCausalLM",
    gemma2,
    GEMMA2_CHECKPOINT,
    config2,
    Gguf("gemma2", GGUF2_LAYOUT, gguf_gemma2, base="sizes", transforms=LESS_ONE, redo=PLUS_ONE),
    config_alone=True,
)
VAULTGEMMA_RECORD = Record("vaultgemma", "VaultGemmaForCausalLM", vaultgemma, VAULTGEMMA, config2, config_alone=True)
GEMMA3 = Record(
    "gemma3_text",
    "Gemma3ForCausalLM",
    gemma3_text,
    GEMMA2_CHECKPOINT,
    config3,
    Gguf("gemma3", GGUF2_LAYOUT, gguf_gemma3, gguf_metadata3, "sizes", LESS_ONE, PLUS_ONE),
    config_alone=True,
)
RECORDS = (GEMMA, GEMMA2, GEMMA3, VAULTGEMMA_RECORD)

__all__ = ["RECORDS"]
