"""One mapping per Hugging Face family: its config keys, with the defaults transformers 5.24 gives them, onto
tfm's spec keys (docs/families.md lists them; each default is the family's `configuration_*.py`).

A null is the default, except where transformers types the key `int | None` and gives None a meaning of its own
(Qwen2's `num_key_value_heads: null` is H where an absent one is 32; Mistral's `sliding_window: null` is no window).
Sizes (hidden size, layers, heads, vocabulary, feedforward) are required: transformers would fill them in
from the 7B model its class describes, which a config.json without them never means.
"""

from __future__ import annotations

from typing import Any

from .encoder_decoder import bart, t5
from .keys import REQUIRED, Keys
from .parts import activation, kv_heads, rope, whole_heads

CAUSAL_PRE = {"scale": "sqrt", "mask": "causal", "norm": "pre"}


def gpt2(c: Keys) -> dict[str, Any]:
    """GPT2LMHeadModel: learned positions, LayerNorm, biases everywhere, Conv1D layers (same counts)."""
    d, N = c.count("n_embd", REQUIRED, "hidden_size"), c.count("n_layer", REQUIRED, "num_hidden_layers")
    H = c.count("n_head", REQUIRED, "num_attention_heads")
    if c.flag("scale_attn_by_inverse_layer_idx", False) and N > 1:
        raise c.refuse("scale_attn_by_inverse_layer_idx", True, "block i's scores times 1/(i+1); tfm's scale is one")
    if c.flag("add_cross_attention", False):
        raise c.refuse("add_cross_attention", True, "cross-attention layers; tfm's blocks attend to themselves")
    # reorder_and_upcast_attn only computes the same scores in float32: the same function, nothing to map
    return CAUSAL_PRE | {
        "N": N, "H": H, "m": whole_heads(c, d, H, "n_embd", "n_head"), "d": d, "r": c.count("n_inner", 4 * d),
        "V": c.count("vocab_size"), "tie_embeddings": c.flag("tie_word_embeddings", True),
        "scale": "sqrt" if c.flag("scale_attn_weights", True) else "none",
        "positional": "learned", "max_len": c.count("n_positions", 1024, "max_position_embeddings"),
        "norm_eps": c.number("layer_norm_epsilon", 1e-5), "attention_bias": True,
        "activation": activation(c, "activation_function", "gelu_new"),
    }  # fmt: skip


def gpt_neo(c: Keys) -> dict[str, Any]:
    """GPTNeoForCausalLM: GPT-2's block without score scaling, q/k/v without biases (out_proj with one), and
    attention_types alternating global layers with local ones of window_size (tfm's window: keys t - w + 1 .. t)."""
    d, N, H = c.count("hidden_size"), c.count("num_layers"), c.count("num_heads")
    kinds = c.data.get("attention_types", [[["global", "local"], N // 2]])
    try:
        layers = [kind for pattern, times in kinds for _ in range(times) for kind in pattern]
    except (TypeError, ValueError):
        raise c.fail("attention_types", kinds, "a list of [[kinds...], times] pairs") from None
    if len(layers) != N or not set(layers) <= {"global", "local"}:
        raise c.fail("attention_types", kinds, f"{N} layers of 'global' or 'local' (num_layers)")
    window: dict[str, Any] = {} if "local" not in layers else {"window": c.count("window_size", 256)}
    if window and "global" in layers:
        window["attention_layers"] = ["full" if kind == "global" else "sliding" for kind in layers]
    return CAUSAL_PRE | window | {
        "N": N, "H": H, "m": whole_heads(c, d, H, "hidden_size", "num_heads"), "d": d,
        "r": c.count("intermediate_size", 4 * d), "V": c.count("vocab_size"),
        "tie_embeddings": c.flag("tie_word_embeddings", True), "scale": "none", "positional": "learned",
        "max_len": c.count("max_position_embeddings", 2048), "norm_eps": c.number("layer_norm_epsilon", 1e-5),
        "out_bias": True, "activation": activation(c, "activation_function", "gelu_new"),
    }  # fmt: skip


def bert(c: Keys) -> dict[str, Any]:
    """BertModel: post-norm, learned positions and token types, a norm of the embeddings, a pooler, no head."""
    kind = c.text("position_embedding_type", "absolute")
    if kind != "absolute":
        raise c.refuse("position_embedding_type", kind, "tfm's BERT has absolute (learned) positions only")
    if c.flag("add_cross_attention", False):
        raise c.refuse("add_cross_attention", True, "cross-attention layers; tfm's blocks attend to themselves")
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    return {
        "N": c.count("num_hidden_layers"), "H": H, "m": whole_heads(c, d, H), "d": d, "r": c.count("intermediate_size"),
        "V": c.count("vocab_size"), "head": False, "type_vocab": c.count("type_vocab_size", 2), "embed_norm": True,
        "pooler": True, "scale": "sqrt", "mask": "causal" if c.flag("is_decoder", False) else "none",
        "positional": "learned", "max_len": c.count("max_position_embeddings", 512), "norm": "post",
        "norm_eps": c.number("layer_norm_eps", 1e-12), "attention_bias": True,
        "activation": activation(c, "hidden_act", "gelu"),
    }  # fmt: skip


def roberta(c: Keys) -> dict[str, Any]:
    """RobertaModel, XLMRobertaModel: BERT whose positions start after the padding index (pad_token_id + 1), the
    padding token taking no position; one token type in the published files."""
    pad = c.index("pad_token_id", 1)
    spec = bert(c) | {"type_vocab": c.count("type_vocab_size", 2), "position_offset": pad + 1, "pad_id": pad}
    positions = c.count("max_position_embeddings", 512)
    if positions <= pad + 1:
        raise c.refuse("max_position_embeddings", positions, f"more than pad_token_id + 1 = {pad + 1} positions")
    return spec | {"max_len": positions - pad - 1}


def distilbert(c: Keys) -> dict[str, Any]:
    """DistilBertModel: BERT's block (post-norm, gelu) under other names, no token types and no pooler; its norms'
    eps is 1e-12 in the code (no config key). A sinusoidal table (sinusoidal_pos_embds) is a parameter too: read."""
    d, H = c.count("dim"), c.count("n_heads")
    return {
        "N": c.count("n_layers"), "H": H, "m": whole_heads(c, d, H, "dim", "n_heads"), "d": d,
        "r": c.count("hidden_dim"), "V": c.count("vocab_size"), "head": False, "embed_norm": True, "scale": "sqrt",
        "positional": "learned", "max_len": c.count("max_position_embeddings", 512), "norm": "post",
        "norm_eps": 1e-12, "attention_bias": True, "activation": activation(c, "activation", "gelu"),
    }  # fmt: skip


def _llama_like(c: Keys, G: int | None, head_dim: int | None, eps: float, tie: bool, max_positions: int,
                act: str = "silu", gelu: str = "gelu_exact", theta: float = 10000.0, partial: float | None = None,
                ) -> dict[str, Any]:  # fmt: skip
    """What the LLaMA layout shares: GQA (`G` read by the family; None is H), heads of `head_dim` (None: d/H),
    RMSNorm, a gated feedforward without biases, rotary positions, an optional tied head."""
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    G = G or H
    positions = c.count("max_position_embeddings", max_positions)
    m = c.count("head_dim", head_dim) or whole_heads(c, d, H)
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers"), "H": H, "m": m,
        "d": d, "r": c.count("intermediate_size"), "V": c.count("vocab_size"),
        **kv_heads(c, "num_key_value_heads", G, H),
        "tie_embeddings": c.flag("tie_word_embeddings", tie),
        **rope(c, positions, m, theta, fraction=partial or 1.0, partial=partial is not None),
        "norm_type": "rmsnorm", "norm_eps": c.number("rms_norm_eps", eps),
        "feedforward": "gated", "activation": activation(c, "hidden_act", act, gelu), "ff_bias": False,
    }  # fmt: skip


def llama(c: Keys) -> dict[str, Any]:
    """LlamaForCausalLM: attention_bias puts biases on q, k, v and o; mlp_bias on the three projections."""
    biases = {"attention_bias": c.flag("attention_bias", False), "ff_bias": c.flag("mlp_bias", False)}
    return _llama_like(c, c.count("num_key_value_heads", None), None, 1e-6, False, 2048) | biases


def mistral(c: Keys) -> dict[str, Any]:
    """MistralForCausalLM: 8 key/value heads and a window of 4096 unless the file says otherwise (null: none)."""
    spec = _llama_like(c, c.count("num_key_value_heads", 8), None, 1e-6, False, 131072)
    return spec | _window(c.nullable_count("sliding_window", 4096))


def mixtral(c: Keys) -> dict[str, Any]:
    """MixtralForCausalLM: Mistral's blocks with E gated experts, the top k per token."""
    E, k = c.count("num_local_experts", 8, "num_experts"), c.count("num_experts_per_tok", 2)
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_local_experts = {E}")
    spec = _llama_like(c, c.count("num_key_value_heads", 8), None, 1e-5, False, 131072, theta=1e6)
    return spec | _window(c.nullable_count("sliding_window", None)) | {"E": E, "k": k}


def qwen2(c: Keys) -> dict[str, Any]:
    """Qwen2ForCausalLM: biases on q, k and v (always, no key), none on o."""
    spec = _llama_like(c, c.nullable_count("num_key_value_heads", 32), None, 1e-6, False, 32768)
    return spec | {"attention_bias": True, "out_bias": False} | _layer_windows(c, spec["N"])


def qwen3(c: Keys) -> dict[str, Any]:
    """Qwen3ForCausalLM: an RMSNorm of each query and key head; heads of 128 unless head_dim says otherwise."""
    spec = _llama_like(c, c.nullable_count("num_key_value_heads", 32), 128, 1e-6, False, 32768)
    return spec | {"attention_bias": c.flag("attention_bias", False), "qk_norm": True} | _layer_windows(c, spec["N"])


def qwen2_moe(c: Keys) -> dict[str, Any]:
    """Qwen2MoeForCausalLM: Qwen2's attention (biases on q, k, v), E experts of moe_intermediate_size in the
    layers decoder_sparse_step and mlp_only_layers choose (the others: one MLP of intermediate_size), the top k
    of a softmax over all E (renormalised with norm_topk_prob), and a shared expert gated by sigmoid(w . x)."""
    spec = _llama_like(c, c.nullable_count("num_key_value_heads", 16), None, 1e-6, False, 32768)
    biases = {"attention_bias": c.flag("qkv_bias", True), "out_bias": False} if c.flag("qkv_bias", True) else {}
    return spec | biases | _experts(c, spec["N"], 60, 4, 1408) | {
        "shared_r": c.count("shared_expert_intermediate_size", 5632), "shared_gate": True}  # fmt: skip


def qwen3_moe(c: Keys) -> dict[str, Any]:
    """Qwen3MoeForCausalLM: Qwen3's attention (query/key norms; heads of d / H unless head_dim says), experts as
    Qwen2-MoE's without a shared one."""
    spec = _llama_like(c, c.count("num_key_value_heads", 4), None, 1e-6, False, 32768)
    extras = {"attention_bias": c.flag("attention_bias", False), "qk_norm": True}
    return spec | extras | _experts(c, spec["N"], 128, 8, 768)


def _experts(c: Keys, N: int, E: int, k: int, size: int) -> dict[str, Any]:
    """Qwen-MoE's experts: which layers route (decoder_sparse_step, mlp_only_layers), how many, their size and the
    router's renormalisation; no key at all when no layer routes."""
    if c.flag("use_sliding_window", False):
        raise c.refuse("use_sliding_window", True, "tfm maps the MoE Qwen models without sliding layers")
    step, dense = c.count("decoder_sparse_step", 1), c.data.get("mlp_only_layers") or []
    if not isinstance(dense, list) or not all(isinstance(i, int) and 0 <= i < N for i in dense):
        raise c.fail("mlp_only_layers", dense, f"a list of layer indices below num_hidden_layers = {N}")
    routed = [i not in dense and (i + 1) % step == 0 for i in range(N)]
    E, k = c.count("num_experts", E, "num_local_experts"), c.count("num_experts_per_tok", k)  # (5.x: either)
    if not any(routed):
        return {}
    if k > E:
        raise c.fail("num_experts_per_tok", k, f"at most num_experts = {E}")
    out: dict[str, Any] = {"E": E, "k": k, "expert_r": c.count("moe_intermediate_size", size),
                           "router_renorm": c.flag("norm_topk_prob", False)}  # fmt: skip
    if not all(routed):
        out["feedforward_layers"] = ["routed" if kind else "dense" for kind in routed]
    return out


def gemma(c: Keys) -> dict[str, Any]:
    """GemmaForCausalLM: (1 + gamma) RMSNorm, embeddings times sqrt(d), heads of 256, GeGLU, a tied head.

    transformers 5.x reads hidden_act only, its legacy "gelu" meaning the tanh form; 4.x read hidden_activation.
    """
    if c.flag("use_bidirectional_attention", False):
        raise c.refuse("use_bidirectional_attention", True, "tfm maps Gemma's causal language model only")
    spec = _llama_like(
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
    caps = {"attn_softcap": c.nullable_number("attn_logit_softcapping", 50.0),
            "logit_softcap": c.nullable_number("final_logit_softcapping", 30.0)}  # fmt: skip
    return _gemma_like(c, caps, rope(c, c.count("max_position_embeddings", 8192), c.count("head_dim", 256)), period=2)


def gemma3_text(c: Keys) -> dict[str, Any]:
    """Gemma3ForCausalLM: Gemma 2's block with (1 + gamma) RMSNorms of each query and key head, five sliding
    layers to one full by default, the sliding layers' own rope base, soft-capping only where the file asks."""
    full, local = _gemma3_ropes(c, c.count("max_position_embeddings", 131072), c.count("head_dim", 256))
    caps = {"attn_softcap": c.nullable_number("attn_logit_softcapping", None),
            "logit_softcap": c.nullable_number("final_logit_softcapping", None)}  # fmt: skip
    spec = _gemma_like(c, caps | {"qk_norm": True}, full, period=c.count("sliding_window_pattern", 6))
    if spec.get("attention_layers") and local != spec["rope_theta"]:
        spec["rope_local_theta"] = local
    return spec


def _gemma_like(c: Keys, extras: dict[str, Any], rotary: dict[str, Any], period: int) -> dict[str, Any]:
    """Gemma 2 and 3: the block around a sandwich of norms, the scale, the layers' kinds."""
    if c.flag("use_bidirectional_attention", False):
        raise c.refuse("use_bidirectional_attention", True, "tfm maps Gemma's causal language model only")
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    m = c.count("head_dim", 256)
    scalar = c.number("query_pre_attn_scalar", 256)
    kinds = ["sliding_attention" if (i + 1) % period else "full_attention" for i in range(c.count("num_hidden_layers"))]
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers"), "H": H, "m": m, "d": d, "r": c.count("intermediate_size"),
        "V": c.count("vocab_size"), **kv_heads(c, "num_key_value_heads", c.count("num_key_value_heads", 4), H),
        "tie_embeddings": c.flag("tie_word_embeddings", True), **rotary,
        "scale": "sqrt" if scalar == m else scalar**-0.5, "norm": "sandwich", "norm_type": "rmsnorm",
        "norm_eps": c.number("rms_norm_eps", 1e-6), "norm_plus_one": True, "embed_scale": "sqrt",
        "feedforward": "gated", "activation": activation(c, "hidden_activation", "gelu_pytorch_tanh"),
        "ff_bias": False, "attention_bias": c.flag("attention_bias", False),
        **{key: value for key, value in extras.items() if value is not None},
        **_typed_layers(c, c.count("num_hidden_layers"), c.nullable_count("sliding_window", 4096), kinds),
    }  # fmt: skip


def _gemma3_ropes(c: Keys, max_positions: int, m: int) -> tuple[dict[str, Any], float]:
    """Gemma 3's rotary keys of the full layers and the sliding layers' base: 5.x's rope_parameters per layer type
    ({full_attention: {...}, sliding_attention: {...}}), or 4.x's rope_theta, rope_scaling (the full layers') and
    rope_local_base_freq."""
    nested = c.nested("rope_parameters")
    if nested is not None and any(isinstance(v, dict) for v in nested.data.values()):
        full = nested.nested("full_attention") or Keys({}, c.source, "rope_parameters.full_attention.")
        local = nested.nested("sliding_attention") or Keys({}, c.source, "rope_parameters.sliding_attention.")
        kind = local.text("rope_type", "default")
        if kind != "default":
            raise local.refuse("rope_type", kind, "tfm's sliding layers turn by their own base without scaling")
        top = Keys({k: v for k, v in c.data.items() if k not in ("rope_parameters", "rope_scaling")}
                   | {"rope_parameters": full.data},
                   c.source)  # fmt: skip
        return rope(top, max_positions, m, 1e6), local.number("rope_theta", 10000.0)
    return rope(c, max_positions, m, 1e6), c.number("rope_local_base_freq", 10000.0)


def phi3(c: Keys) -> dict[str, Any]:
    """Phi3ForCausalLM: fused qkv_proj and gate_up_proj (the same tensors), an optional window, partial rotary."""
    spec = _llama_like(c, c.count("num_key_value_heads", None), None, 1e-5, False, 4096, partial=1.0)
    return spec | _window(c.nullable_count("sliding_window", None))


def phi(c: Keys) -> dict[str, Any]:
    """PhiForCausalLM: one LayerNorm shared by parallel attention and feedforward, biases, a head with a bias."""
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    G = c.count("num_key_value_heads", None) or H
    m = c.count("head_dim", None) or whole_heads(c, d, H)
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers"), "H": H, "m": m, "d": d,
        "r": c.count("intermediate_size"), "V": c.count("vocab_size"), **kv_heads(c, "num_key_value_heads", G, H),
        "tie_embeddings": c.flag("tie_word_embeddings", False), "head_bias": True,
        **rope(c, c.count("max_position_embeddings", 2048), m, fraction=0.5, partial=True),
        "norm_eps": c.number("layer_norm_eps", 1e-5), "parallel": True, "shared_norm": True,
        "attention_bias": True, "qk_norm": c.flag("qk_layernorm", False),
        "activation": activation(c, "hidden_act", "gelu_new"),
    }  # fmt: skip


def gpt_neox(c: Keys) -> dict[str, Any]:
    """GPTNeoXForCausalLM: two LayerNorms, parallel or not, rotary on 25% of each head unless the file says."""
    d, H = c.count("hidden_size"), c.count("num_attention_heads")
    parallel = c.flag("use_parallel_residual", True)
    rotary = rope(c, c.count("max_position_embeddings", 2048), whole_heads(c, d, H), fraction=0.25, partial=True,
                  theta_keys=("rotary_emb_base",), fraction_keys=("rotary_pct",))  # fmt: skip
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers"), "H": H, "m": whole_heads(c, d, H), "d": d, "r": c.count("intermediate_size"),
        "V": c.count("vocab_size"), "tie_embeddings": c.flag("tie_word_embeddings", False), **rotary,
        "norm_eps": c.number("layer_norm_eps", 1e-5), "parallel": parallel,
        "attention_bias": c.flag("attention_bias", True), "activation": activation(c, "hidden_act", "gelu"),
    }  # fmt: skip


def falcon(c: Keys) -> dict[str, Any]:
    """FalconForCausalLM: multi-query, grouped (new_decoder_architecture) or per-head fused attention; parallel
    blocks with one or two LayerNorms, or sequential ones. Old files name the sizes n_embed, n_head, n_layer."""
    if c.flag("alibi", False):
        raise c.refuse("alibi", True, "tfm has no ALiBi position biases (alibi: false gives rotary positions)")
    d = c.count("n_embed", None) or c.count("hidden_size")  # n_embed wins, as in FalconConfig
    H = c.count("num_attention_heads", REQUIRED, "n_head")
    parallel, shared = _falcon_blocks(c)
    bias = c.flag("bias", False)
    return CAUSAL_PRE | {
        "N": c.count("num_hidden_layers", REQUIRED, "n_layer"), "H": H, "m": whole_heads(c, d, H), "d": d,
        "r": c.count("ffn_hidden_size", 4 * d), "V": c.count("vocab_size"), **_falcon_kv(c, H),
        "tie_embeddings": c.flag("tie_word_embeddings", True),
        **rope(c, c.count("max_position_embeddings", 2048), d // H),
        "norm_eps": c.number("layer_norm_epsilon", 1e-5), "parallel": parallel, "shared_norm": shared,
        "attention_bias": bias, "ff_bias": bias, "activation": activation(c, "activation", "gelu"),
    }  # fmt: skip


def _falcon_kv(c: Keys, H: int) -> dict[str, Any]:
    """G: num_kv_heads with new_decoder_architecture, else 1 (multi_query) or H (FalconAttention.__init__)."""
    G = c.nullable_count("num_kv_heads", None) or H
    if c.flag("new_decoder_architecture", False):
        return kv_heads(c, "num_kv_heads", G, H)
    if not c.flag("multi_query", True) and G != H:  # the fused tensor holds H keys, the reshape wants G
        raise c.refuse("num_kv_heads", G, "fewer key/value heads than queries need new_decoder_architecture")
    return kv_heads(c, "num_kv_heads", 1 if c.flag("multi_query", True) else H, H)


def _falcon_blocks(c: Keys) -> tuple[bool, bool]:
    """(parallel, one shared norm), as FalconDecoderLayer builds and runs them; other settings crash it."""
    new, parallel = c.flag("new_decoder_architecture", False), c.flag("parallel_attn", True)
    norms = c.count("num_ln_in_parallel_attn", 2 if new else None)
    if new and not parallel:
        raise c.refuse("parallel_attn", False, "transformers' Falcon needs parallel_attn with new_decoder_architecture")
    if new and norms not in (1, 2):
        raise c.refuse("num_ln_in_parallel_attn", norms, "transformers' Falcon builds 1 or 2 norms per block")
    if not new and parallel and norms == 2:
        raise c.refuse("num_ln_in_parallel_attn", 2, "2 norms need new_decoder_architecture in transformers' Falcon")
    return parallel, parallel and (norms == 1 or not new)


def _window(window: int | None) -> dict[str, Any]:
    """Query t sees keys t - w + 1 .. t: transformers' mask keeps kv_idx > q_idx - sliding_window, the same w."""
    return {} if window is None else {"window": window}


def _typed_layers(c: Keys, N: int, window: int | None, default: list[str]) -> dict[str, Any]:
    """layer_types (else `default`) as the blocks' attention_layers: a window on the sliding ones."""
    kinds = c.data.get("layer_types") or default
    if not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= {"full_attention", "sliding_attention"}:
        raise c.fail("layer_types", kinds, f"a list of {N} 'full_attention' or 'sliding_attention'")
    if "sliding_attention" not in kinds:
        return {}
    if window is None:
        raise c.refuse("sliding_window", None, "sliding layers (layer_types) need a sliding_window")
    layers = {"attention_layers": ["sliding" if k == "sliding_attention" else "full" for k in kinds]}
    return _window(window) | (layers if "full_attention" in kinds else {})


def _layer_windows(c: Keys, N: int) -> dict[str, Any]:
    """Qwen2/Qwen3: a window only with use_sliding_window, on layers max_window_layers.. (or as layer_types says):
    the blocks' attention_layers where some slide and some do not."""
    window = c.nullable_count("sliding_window", 4096) if c.flag("use_sliding_window", False) else None
    key, kinds = "layer_types", c.data.get("layer_types")
    if kinds is None:
        key, first = "max_window_layers", c.index("max_window_layers", 28)
        kinds = ["sliding_attention" if window and i >= first else "full_attention" for i in range(N)]
    elif not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= {"full_attention", "sliding_attention"}:
        raise c.fail(key, kinds, f"a list of {N} 'full_attention' or 'sliding_attention'")
    if "sliding_attention" not in kinds:
        return {}
    if window is None:
        raise c.refuse(key, c.data.get(key, kinds), "sliding layers need use_sliding_window and a sliding_window")
    layers = {"attention_layers": ["sliding" if k == "sliding_attention" else "full" for k in kinds]}
    return _window(window) | (layers if "full_attention" in kinds else {})


FAMILIES = {
    "gpt2": ("GPT2LMHeadModel", gpt2), "bert": ("BertModel", bert), "roberta": ("RobertaModel", roberta),
    "xlm-roberta": ("XLMRobertaModel", roberta), "distilbert": ("DistilBertModel", distilbert),
    "gpt_neo": ("GPTNeoForCausalLM", gpt_neo),
    "llama": ("LlamaForCausalLM", llama),
    "mistral": ("MistralForCausalLM", mistral), "mixtral": ("MixtralForCausalLM", mixtral),
    "qwen2": ("Qwen2ForCausalLM", qwen2), "qwen3": ("Qwen3ForCausalLM", qwen3), "gemma": ("GemmaForCausalLM", gemma),
    "qwen2_moe": ("Qwen2MoeForCausalLM", qwen2_moe), "qwen3_moe": ("Qwen3MoeForCausalLM", qwen3_moe),
    "gemma2": ("Gemma2ForCausalLM", gemma2), "gemma3_text": ("Gemma3ForCausalLM", gemma3_text),
    "phi": ("PhiForCausalLM", phi), "phi3": ("Phi3ForCausalLM", phi3), "gpt_neox": ("GPTNeoXForCausalLM", gpt_neox),
    "falcon": ("FalconForCausalLM", falcon), "t5": ("T5ForConditionalGeneration", t5),
    "bart": ("BartForConditionalGeneration", bart),
}  # fmt: skip

__all__ = ["FAMILIES"]
