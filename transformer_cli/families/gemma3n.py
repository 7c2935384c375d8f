"""Gemma 3n (text: Gemma3nForCausalLM): Gemma 3's sandwich of norms, query/key norms, sqrt(d) embedding, GeGLU, four
sliding layers to one full (each kind its own rope base) and soft-capped logits, with plain RMSNorm gains (x w,
not Gemma 1-3's x (1 + w)), scores unscaled and each value head normalised without a gain (v_norm); AltUp's
altup_num_inputs streams around every block, Laurel's low-rank residual beside its attention (components/altup.py),
each layer's MLP of its own width (intermediate_size as a list: r_layers) and activation sparsity
(activation_sparsity_pattern: sparsity_layers), per-layer inputs of hidden_size_per_layer_input (ple_dim: added to
AltUp's streams 1 .. K - 1), and the last num_kv_shared_layers attending to an earlier layer's keys and values
(kv_shared). transformers stores query_pre_attn_scalar and attn_logit_softcapping and never uses them: said on
stderr. Its GGUF files (gemma3n): gemma3n_gguf.py."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from . import gemma3n_gguf as gguf
from .checkpoints import GEMMA2
from .config_keys import layer_types, size_keys
from .gemma import _gemma3_ropes
from .gemma4 import GEMMA4, plain_gemma_block
from .keys import Keys
from .layout import Family
from .layout import norm_names as _norm
from .parts import CAUSAL_PRE, kv_heads, sliding_rope, typed_layers
from .record import Gguf, Record


def gemma3n_text(c: Keys) -> dict[str, Any]:
    """Gemma3nTextConfig -> spec (its defaults: E4B's sizes, 35 layers of which the last 15 share)."""
    N, H, d = c.count("num_hidden_layers", 35), c.count("num_attention_heads", 8), c.count("hidden_size", 2048)
    m, G = c.count("head_dim", 256), c.count("num_key_value_heads", 2)
    for key, why in (
        ("query_pre_attn_scalar", "scales Gemma 3n's scores by 1 whatever it says"),
        ("attn_logit_softcapping", "stores it and never caps Gemma 3n's scores"),
        ("altup_lr_multiplier", "stores it for training only"),
    ):
        c.ignored(key, why, None)
    widths = _per_layer(c, "intermediate_size", N, 16384, int)
    kinds = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(N)]
    full, local = _gemma3_ropes(c, c.count("max_position_embeddings", 32768), m)
    spec = CAUSAL_PRE | {
        "N": N,
        "H": H,
        "m": m,
        "d": d,
        "r": widths[0],
        "r_layers": widths,
        "V": c.count("vocab_size", 262400),
        **kv_heads(c, "num_key_value_heads", G, H),
        **plain_gemma_block(c),
        "logit_softcap": c.number("final_logit_softcapping", 30.0),
        **full,
        **typed_layers(c, N, c.count("sliding_window", 512), kinds),
    }
    spec = sliding_rope(spec, local)
    default = [0.95] * 10 + [0.0] * (N - 10) if N > 10 else [0.0] * N
    spec["sparsity_layers"] = _per_layer(c, "activation_sparsity_pattern", N, default, float, per_layer_only=True)
    K = c.count("altup_num_inputs", 4)
    spec |= {"altup": K, "altup_active": c.index("altup_active_idx", 0), "laurel_rank": c.count("laurel_rank", 64)}
    spec["altup_correct_scale"] = c.flag("altup_correct_scale", True)
    if spec["altup_active"] >= K:
        raise c.fail("altup_active_idx", spec["altup_active"], f"a stream below altup_num_inputs = {K}")
    P = c.count("hidden_size_per_layer_input", 256)
    V_ple = c.count("vocab_size_per_layer_input", 262144)
    spec |= {"ple_dim": P} | ({"ple_vocab": V_ple} if V_ple != spec["V"] else {})
    S = c.index("num_kv_shared_layers", 15)
    if S:  # (the last S layers: the keys and values of the last earlier layer of their kind)
        if S >= N:
            raise c.fail("num_kv_shared_layers", S, f"below num_hidden_layers = {N} (transformers fails on as many)")
        types = c.data.get("layer_types") or kinds
        if not set(types[N - S :]) <= set(types[: N - S]):  # (transformers refuses it too)
            raise c.fail("num_kv_shared_layers", S, "a layer of each sharing layer's type before them")
        spec["kv_shared"] = S
    return spec


def _per_layer(c: Keys, key: str, N: int, default, kind, per_layer_only: bool = False) -> list:
    """A number per layer (a list of N), or one number for every layer where transformers takes one (an MLP's
    width; not the sparsity, whose bare number transformers fails on)."""
    value = c.data.get(key, default)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not per_layer_only:
        value = [value] * N
    fits = (lambda v: isinstance(v, int) and v > 0) if kind is int else (lambda v: isinstance(v, (int, float)))
    if not isinstance(value, list) or len(value) != N or not all(fits(v) and not isinstance(v, bool) for v in value):
        what = "a positive integer or a list of" if kind is int else "a list of"
        raise c.fail(key, value, f"{what} {N} numbers, one per layer")
    if kind is float and not all(0 <= v < 1 for v in value):
        raise c.fail(key, value, f"a list of {N} numbers in [0, 1), one per layer")
    return [kind(v) for v in value]


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Gemma3nTextConfig's config.json (every key: a GGUF file's model as a folder)."""
    full: dict[str, Any] = {"rope_type": "default", "rope_theta": spec.rope_theta}
    if spec.rope_scaling == "linear":
        full = {"rope_type": "linear", "rope_theta": spec.rope_theta, "factor": spec.rope_factor}
    local = {"rope_type": "default", "rope_theta": spec.rope_local_theta or spec.rope_theta}
    levels = spec.sparsity_layers or (0.0,)
    return size_keys(spec) | {
        "intermediate_size": [
            spec.r if spec.r_layers is None else spec.r_layers[i % len(spec.r_layers)] for i in range(spec.N)
        ],
        "rms_norm_eps": spec.norm_eps,
        "hidden_activation": "gelu_pytorch_tanh",
        "attention_bias": spec.attention_bias,
        "sliding_window": spec.window or 512,
        "layer_types": layer_types(spec),
        "rope_parameters": {"full_attention": full, "sliding_attention": local},
        "final_logit_softcapping": spec.logit_softcap,
        "hidden_size_per_layer_input": spec.ple_dim,
        "vocab_size_per_layer_input": spec.ple_vocab or spec.V,
        "num_kv_shared_layers": spec.kv_shared or 0,
        "altup_num_inputs": spec.altup,
        "altup_active_idx": spec.altup_active,
        "altup_correct_scale": spec.altup_correct_scale,
        "laurel_rank": spec.laurel_rank,
        "activation_sparsity_pattern": [float(levels[i % len(levels)]) for i in range(spec.N)],
    }


_ALTUP = {
    "altup.scale": "altup.correct_output_scale",
    "altup.W_correct": "altup.correction_coefs.weight",
    "altup.W_predict": "altup.prediction_coefs.weight",
    "altup.W_router": "altup.modality_router.weight",
    "laurel.W_left": "laurel.linear_left.weight",
    "laurel.W_right": "laurel.linear_right.weight",
}
GEMMA3N = Family(
    GEMMA2.block,
    GEMMA2.names
    | {ours: theirs for ours, theirs in GEMMA4.names.items() if ours.startswith("per_layer.")}
    | _ALTUP
    | _norm("altup.router_norm", "altup.router_norm")
    | _norm("laurel.norm", "laurel.post_laurel_norm"),
    GEMMA4.globals_
    | {"altup.W_in[{e}]": "model.altup_projections.{e}.weight"}
    | {"altup.W_out[{e}]": "model.altup_unembed_projections.{e}.weight"},
)
RECORD = Record(
    "gemma3n_text",
    "Gemma3nForCausalLM",
    gemma3n_text,
    GEMMA3N,
    config,
    Gguf("gemma3n", gguf.LAYOUT, gguf.gguf_spec, gguf.gguf_metadata, base="none"),
    config_alone=True,
    # the keys and values a file may hold for the layers that share an earlier one's: not read, as transformers
    skipped=(r"\.self_attn\.(k_proj|v_proj|k_norm|v_norm)\.",),
)

__all__ = ["RECORD"]
