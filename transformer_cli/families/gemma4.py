"""Gemma 4 (text: Gemma4ForCausalLM): Gemma 3's sandwich of norms, query/key norms and sqrt(d) embedding, with
plain RMSNorm gains (x w, not Gemma 1-3's x (1 + w)), scores unscaled, each value head normalised without a gain
(v_norm), each block's output times its layer_scalar (layer_scale); five sliding layers to one full and the last
always full, the full layers' heads of global_head_dim (full_m), turned by the proportional rope (pairs j and
j + m/2 for j below partial_rotary_factor m / 2, at theta^(-2j/m)), the sliding layers' by the default rope over
the whole head; with attention_k_eq_v the full layers' values are their keys' projection (v_from_k) and their
key/value heads num_global_key_value_heads.

With enable_moe_block every layer's MLP has E experts beside it (expert_norms: components/stream_experts.py); with
hidden_size_per_layer_input (256 by default) each block reads its per-layer input (ple_dim: components/per_layer.py);
the last num_kv_shared_layers attend to an earlier layer's keys and values (kv_shared: components/reused.py), their
MLPs twice as wide with use_double_wide_mlp. Bidirectional attention ("all") is refused in one line (as Gemma 1-3)."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from . import gemma4_gguf as gguf
from .checkpoints import GEMMA2, _one
from .config_keys import layer_types, size_keys
from .gguf_keys import rotated_share
from .keys import Keys
from .layout import Family
from .layout import norm_names as _norm
from .parts import CAUSAL_PRE, activation, kv_heads, window_key
from .record import Gguf, Record


def gemma4_text(c: Keys) -> dict[str, Any]:
    """Gemma4TextConfig -> spec (its defaults: heads of 256 sliding and 512 full, window 512, bases 1e4 and 1e6)."""
    if c.data.get("use_bidirectional_attention") == "all":
        raise c.refuse("use_bidirectional_attention", "all", "tfm maps Gemma 4's causal language model only")
    c.ignored("use_bidirectional_attention", "reads it for Gemma 4's images only, not in its text model", None)
    N, H, d = c.count("num_hidden_layers", 30), c.count("num_attention_heads", 8), c.count("hidden_size", 2304)
    G, k_eq_v = c.count("num_key_value_heads", 4), c.flag("attention_k_eq_v", False)
    kinds = _kinds(c, N)
    m, (full_m, full_G) = c.count("head_dim", 256), _full_heads(c, G, k_eq_v, kinds)
    window = c.count("sliding_window", 512)
    spec = CAUSAL_PRE | {
        "N": N,
        "H": H,
        "m": m,
        "d": d,
        "r": c.count("intermediate_size", 9216),
        "V": c.count("vocab_size", 262144),
        **kv_heads(c, "num_key_value_heads", G, H),
        **plain_gemma_block(c),
        "layer_scale": True,
        "context": c.count("max_position_embeddings", 131072),
    }
    cap = c.nullable_number("final_logit_softcapping", None)
    spec |= {"logit_softcap": cap} if cap is not None else {}
    if "sliding_attention" in kinds:
        spec |= window_key(window) | {
            "attention_layers": ["sliding" if k == "sliding_attention" else "full" for k in kinds]
        }
        spec |= {"full_m": full_m} if full_m != m else {}
        spec |= {"G": full_G, "local_G": G} if full_G != G else {}
    else:
        spec |= {"m": full_m, "G": full_G}
    spec |= {"v_from_k": True} if k_eq_v else {}
    S = c.index("num_kv_shared_layers", 0)
    if S:  # (the last S layers: an earlier layer's keys and values; with use_double_wide_mlp, MLPs of 2r)
        if S >= N:
            raise c.fail("num_kv_shared_layers", S, f"below num_hidden_layers = {N} (transformers fails on as many)")
        if not set(kinds[N - S :]) <= set(kinds[: N - S]):  # (transformers refuses it too)
            raise c.fail("num_kv_shared_layers", S, "a layer of each sharing layer's type before them")
        spec |= {"kv_shared": S} | ({"kv_shared_r": 2 * spec["r"]} if c.flag("use_double_wide_mlp", False) else {})
    else:
        c.ignored("use_double_wide_mlp", "widens the MLPs of layers that share keys and values only", False)
    P = c.index("hidden_size_per_layer_input", 256)  # (0 turns them off)
    if P:
        V_ple = c.count("vocab_size_per_layer_input", 262144)
        spec |= {"ple_dim": P} | ({"ple_vocab": V_ple} if V_ple != spec["V"] else {})
    if c.flag("enable_moe_block", False):  # (every layer: the MLP and the experts side by side)
        E, k = c.count("num_experts"), c.count("top_k_experts")
        if k > E:
            raise c.fail("top_k_experts", k, f"at most num_experts = {E}")
        spec |= {"E": E, "k": k, "expert_r": c.count("moe_intermediate_size"), "shared_r": spec["r"]}
        spec |= {"expert_norms": True}
    return spec | _ropes(c, full_m, "sliding_attention" in kinds)


def plain_gemma_block(c: Keys) -> dict[str, Any]:
    """What Gemma 3n's and Gemma 4's blocks share: Gemma 3's sandwich, GeGLU, sqrt(d) embedding and query/key norms
    with plain gains (x w), unscaled scores, each value head normalised, the head tied by default."""
    return {
        "tie_embeddings": c.flag("tie_word_embeddings", True),
        "scale": "none",
        "norm": "sandwich",
        "norm_type": "rmsnorm",
        "norm_eps": c.number("rms_norm_eps", 1e-6),
        "embed_scale": "sqrt",
        "feedforward": "gated",
        "activation": activation(c, "hidden_activation", "gelu_pytorch_tanh"),
        "ff_bias": False,
        "attention_bias": c.flag("attention_bias", False),
        "qk_norm": True,
        "v_norm": True,
    }


def _kinds(c: Keys, N: int) -> list[str]:
    """layer_types (else five sliding to one full), the last layer full whatever the list says (as transformers
    makes it, with a warning: said on stderr)."""
    kinds = c.data.get("layer_types") or ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(N)]
    if not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= {"full_attention", "sliding_attention"}:
        raise c.fail("layer_types", kinds, f"a list of {N} 'full_attention' or 'sliding_attention'")
    if kinds[-1] != "full_attention":  # (a note of its own: the list is followed but for its last entry)
        last = f"{c.source}: key 'layer_types': its last entry, {kinds[-1]!r}, is read as 'full_attention'"
        c.notes.append(f"{last}, as transformers makes the last layer full whatever the list says")
    return [*kinds[:-1], "full_attention"]


def _full_heads(c: Keys, G: int, k_eq_v: bool, kinds: list[str]) -> tuple[int, int]:
    """The full layers' head size and key/value heads: per_layer_config's (as transformers 5.24 saves it, by layer
    index), else global_head_dim (the hub's form, 512 by default) and num_global_key_value_heads, which transformers
    reads with attention_k_eq_v only (else num_key_value_heads)."""
    per_layer = c.data.get("per_layer_config")
    m = c.count("head_dim", 256)
    if per_layer is None:
        if not k_eq_v:
            c.ignored("num_global_key_value_heads", "reads it with attention_k_eq_v only", None)
        wide = c.nullable_count("num_global_key_value_heads", None) if k_eq_v else None
        return c.count("global_head_dim", 512), wide or G
    if not isinstance(per_layer, dict) or not all(str(key).isdigit() for key in per_layer):
        raise c.fail("per_layer_config", per_layer, "an object of layer indices and their own head_dim")
    by_layer = {int(key): keys for key, keys in per_layer.items()}
    sizes: set[tuple[int, int]] = set()
    for i, kind in enumerate(kinds):
        keys = by_layer.pop(i, {})
        if kind == "sliding_attention" and keys:
            raise c.refuse(f"per_layer_config.{i}", keys, "tfm reads heads of their own on the full layers only")
        if not isinstance(keys, dict) or set(keys) - {"head_dim", "num_key_value_heads"}:
            raise c.refuse(f"per_layer_config.{i}", keys, "tfm reads a head_dim and key/value heads per layer")
        found = []
        for key, default in (("head_dim", m), ("num_key_value_heads", G)):
            value = keys.get(key, default)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise c.fail(f"per_layer_config.{i}.{key}", value, "a positive integer")
            found.append(value)
        if kind == "full_attention":
            sizes.add((found[0], found[1]))
    if by_layer:
        raise c.fail("per_layer_config", per_layer, f"layer indices below num_hidden_layers = {len(kinds)}")
    if len(sizes) > 1:
        raise c.refuse("per_layer_config", per_layer, "full layers of one head size and key/value heads")
    return sizes.pop()


def _ropes(c: Keys, full_m: int, sliding: bool) -> dict[str, Any]:
    """The full layers' rotary (proportional: pairs j, j + m/2 for j < a = int(p m // 2), or default: the whole
    head) and the sliding layers' (default: the whole head, its partial_rotary_factor ignored, as transformers)."""
    p = c.nested("rope_parameters")
    full = p.nested("full_attention") if p is not None else None
    local = p.nested("sliding_attention") if p is not None else None
    out: dict[str, Any] = {"positional": "rope", "rope_theta": 1e6, "rope_pairing": "proportional"}
    share, factor = 0.25, 1.0
    if full is not None:
        kind = full.text("rope_type", "default")
        if kind not in ("default", "proportional"):
            raise full.refuse("rope_type", kind, "tfm turns Gemma 4's full layers by the default or proportional rope")
        out["rope_theta"] = full.number("rope_theta", 1e6)
        share = full.fraction("partial_rotary_factor", 1.0) or 1.0 if kind == "proportional" else 1.0
        factor = full.number("factor", 1.0) if kind == "proportional" else 1.0
    rotated = 2 * int(share * full_m // 2)  # (transformers turns a = int(p m // 2) pairs)
    if rotated != full_m:  # tfm turns int(m rope_fraction) dims: p where that is 2a, else a fraction that makes it
        out["rope_fraction"] = rotated_share(rotated, full_m)  # (the same value its GGUF file reads back as)
    else:
        out["rope_pairing"] = "half"
    if factor != 1.0:
        out |= {"rope_scaling": "linear", "rope_factor": factor}
    if local is not None and local.text("rope_type", "default") != "default":
        raise local.refuse(
            "rope_type", local.text("rope_type"), "tfm turns Gemma 4's sliding layers by the default rope"
        )
    if sliding:
        out["rope_local_theta"] = local.number("rope_theta", 10000.0) if local is not None else 10000.0
        out |= {"rope_local_fraction": 1.0} if "rope_fraction" in out else {}
    return out


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Gemma4TextConfig's config.json (every key: the hub's global_head_dim for the full layers' heads)."""
    full = spec.full_m or spec.m
    sliding = spec.attention_layers is not None
    rope_full: dict[str, Any] = {"rope_type": "proportional", "rope_theta": spec.rope_theta}
    rope_full |= {"partial_rotary_factor": spec.rope_fraction}
    if spec.rope_scaling == "linear":
        rope_full["factor"] = spec.rope_factor
    ropes = {"full_attention": rope_full}
    if sliding:
        ropes["sliding_attention"] = {"rope_type": "default", "rope_theta": spec.rope_local_theta or spec.rope_theta}
    return size_keys(spec) | {
        "num_key_value_heads": spec.local_G or spec.kv_heads,
        "num_global_key_value_heads": spec.kv_heads,
        "head_dim": spec.m if sliding else full,
        "global_head_dim": full,
        "rms_norm_eps": spec.norm_eps,
        "hidden_activation": "gelu_pytorch_tanh",
        "attention_bias": spec.attention_bias,
        "sliding_window": spec.window or 512,
        "layer_types": layer_types(spec),
        "rope_parameters": ropes,
        "final_logit_softcapping": spec.logit_softcap,
        "hidden_size_per_layer_input": spec.ple_dim or 0,
        "vocab_size_per_layer_input": spec.ple_vocab or spec.V,
        "num_kv_shared_layers": spec.kv_shared or 0,
        "use_double_wide_mlp": spec.kv_shared_r is not None,
        "enable_moe_block": bool(spec.E),
        "num_experts": spec.E,
        "top_k_experts": spec.k,
        "moe_intermediate_size": spec.expert_r,
        "attention_k_eq_v": spec.v_from_k,
    }


_EXPERTS = ("experts.gate_up_proj", "experts.down_proj")  # (E, 2 r_e, d): each expert's gate rows, then its up rows


def _per_expert(spec: Spec) -> int:
    return spec.E or 0


GEMMA4 = Family(
    GEMMA2.block,
    GEMMA2.names
    | {"scale": "layer_scalar", "ff.router": "router.proj.weight", "ff.router_scale": "router.scale"}
    | {"ff.expert_scale": "router.per_expert_scale"}
    | {
        f"ff.shared.W{n}": f"mlp.{proj}.weight"
        for n, proj in (("1", "gate_proj"), ("3", "up_proj"), ("2", "down_proj"))
    }
    | _norm("ff.shared_norm", "pre_feedforward_layernorm")
    | _norm("ff.shared_norm_out", "post_feedforward_layernorm_1")
    | _norm("ff.routed_norm", "pre_feedforward_layernorm_2")
    | _norm("ff.routed_norm_out", "post_feedforward_layernorm_2")
    | {"per_layer.W_gate": "per_layer_input_gate.weight", "per_layer.W_proj": "per_layer_projection.weight"}
    | _norm("per_layer.norm", "post_per_layer_input_norm"),
    GEMMA2.globals_
    | {"per_layer.E": "model.embed_tokens_per_layer.weight", "per_layer.W": "model.per_layer_model_projection.weight"}
    | _norm("per_layer.norm", "model.per_layer_projection_norm"),
    fused=((_EXPERTS[0], ("ff.W1", "ff.W3"), _per_expert), (_EXPERTS[1], ("ff.W2",), _one)),
    stacked=frozenset(_EXPERTS),
)
# peft targets its linear modules (the router's proj among them), not its stacked experts
GGUF = Gguf(
    "gemma4",
    gguf.LAYOUT,
    gguf.gguf_spec,
    gguf.gguf_metadata,
    base="proportional",
    extra=gguf.rope_freqs,
)
RECORD = Record(
    "gemma4_text",
    "Gemma4ForCausalLM",
    gemma4_text,
    GEMMA4,
    config,
    GGUF,
    config_alone=True,
    lora_router="*",
    # the keys and values a file may hold for the layers that share an earlier one's: not read, as transformers
    # (its _keys_to_ignore_on_load_unexpected); a layer's own are expected first, so these skip the others only
    skipped=(r"\.self_attn\.(k_proj|v_proj|k_norm|v_norm)\.",),
)

__all__ = ["RECORD"]
