"""tfm against the `transformers` library itself: small random models of each family, built offline, weights
mapped by hand, logits compared in float64.

transformers computes RMSNorm and the rotary angles in float32 even in a float64 model (it casts to float32
inside LlamaRMSNorm.forward and LlamaRotaryEmbedding.forward, and its inv_freq buffer is made in float32), and
Gemma's sqrt(d) embedding scale is a float32 constant. The tests recompute these in float64 with the same
formulas, so the comparison measures the two implementations, not float32's rounding (about 1e-7 and 2e-8
relative on their own).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers_transformers import SMALL, TOL, _compare, _float64_router, _llama_like, count

from transformer_cli import Spec

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")


def _llama_weights(model, cfg, m: int) -> dict[str, np.ndarray]:
    """transformers' LLaMA names and (out, in) layouts onto tfm's column layout."""
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    H, G, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.hidden_size
    w = {"embedding.E": sd["model.embed_tokens.weight"].T, "final_norm.gamma": sd["model.norm.weight"]}
    if not cfg.tie_word_embeddings:
        w["head.W"] = sd["lm_head.weight"]
    for i in range(cfg.num_hidden_layers):
        p, q = f"model.layers.{i}.", f"blocks.{i}."
        for ours, theirs, heads in (("W_Q", "q_proj", H), ("W_K", "k_proj", G), ("W_V", "v_proj", G)):
            w[q + f"attention.{ours}"] = sd[p + f"self_attn.{theirs}.weight"].reshape(heads, m, d)
            if p + f"self_attn.{theirs}.bias" in sd:
                w[q + f"attention.b_{ours[-1]}"] = sd[p + f"self_attn.{theirs}.bias"].reshape(heads, m)
        w[q + "attention.W_O"] = sd[p + "self_attn.o_proj.weight"].reshape(d, H, m).transpose(1, 0, 2)
        for x in "qk":  # Qwen3's per-head query and key norms
            if p + f"self_attn.{x}_norm.weight" in sd:
                w[q + f"attention.{x}_norm.gamma"] = sd[p + f"self_attn.{x}_norm.weight"]
        if p + "mlp.gate.weight" in sd:  # Mixtral: a router and E experts, gate and up fused as (E, 2r, d)
            r = sd[p + "mlp.experts.down_proj"].shape[-1]
            w[q + "ff.router"] = sd[p + "mlp.gate.weight"]
            gate_up = sd[p + "mlp.experts.gate_up_proj"]
            w[q + "ff.W1"], w[q + "ff.W3"] = gate_up[:, :r], gate_up[:, r:]
            w[q + "ff.W2"] = sd[p + "mlp.experts.down_proj"]
        else:
            w[q + "ff.W1"], w[q + "ff.W3"] = sd[p + "mlp.gate_proj.weight"], sd[p + "mlp.up_proj.weight"]
            w[q + "ff.W2"] = sd[p + "mlp.down_proj.weight"]
        w[q + "norm1.gamma"], w[q + "norm2.gamma"] = (
            sd[p + "input_layernorm.weight"],
            sd[p + "post_attention_layernorm.weight"],
        )
    return w


@pytest.mark.parametrize("G", [4, 2, 1])
@pytest.mark.parametrize("tied", [False, True])
def test_llama_logits_equal_transformers(G, tied):
    from transformers import LlamaConfig, LlamaForCausalLM

    model, cfg, m = _llama_like(
        LlamaForCausalLM, LlamaConfig, num_key_value_heads=G, tie_word_embeddings=tied, rope_theta=10000.0, **SMALL
    )
    spec = Spec(
        N=2,
        H=4,
        G=G,
        m=m,
        d=32,
        r=40,
        V=97,
        tie_embeddings=tied,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        norm_eps=1e-5,
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    )
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def test_mistral_sliding_window_logits_equal_transformers():
    from transformers import MistralConfig, MistralForCausalLM

    model, cfg, m = _llama_like(
        MistralForCausalLM, MistralConfig, num_key_value_heads=2, sliding_window=4, rope_theta=10000.0, **SMALL
    )
    spec = Spec(
        N=2,
        H=4,
        G=2,
        m=m,
        d=32,
        r=40,
        V=97,
        scale="sqrt",
        mask="causal",
        window=4,
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        norm_eps=1e-5,
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    )
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def test_qwen2_biases_on_q_k_v_only_equal_transformers():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    model, cfg, m = _llama_like(Qwen2ForCausalLM, Qwen2Config, num_key_value_heads=2, rope_theta=10000.0, **SMALL)
    spec = Spec(
        N=2,
        H=4,
        G=2,
        m=m,
        d=32,
        r=40,
        V=97,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        norm_eps=1e-5,
        attention_bias=True,
        out_bias=False,
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    )
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def test_gemma_logits_equal_transformers():
    """(1 + gamma) RMSNorm, embedding times sqrt(d), GeGLU (tanh form), heads of m != d/H, tied, multi-query."""
    from transformers import GemmaConfig, GemmaForCausalLM

    model, cfg, m = _llama_like(
        GemmaForCausalLM,
        GemmaConfig,
        num_key_value_heads=1,
        head_dim=12,
        rope_theta=10000.0,
        hidden_activation="gelu_pytorch_tanh",
        **SMALL,
    )
    spec = Spec(
        N=2,
        H=4,
        G=1,
        m=12,
        d=32,
        r=40,
        V=97,
        tie_embeddings=True,
        embed_scale="sqrt",
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        norm_plus_one=True,
        norm_eps=1e-5,
        feedforward="gated",
        activation="gelu",
        ff_bias=False,
    )
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def test_qwen3_query_and_key_norms_equal_transformers():
    from transformers import Qwen3Config, Qwen3ForCausalLM

    model, cfg, m = _llama_like(
        Qwen3ForCausalLM, Qwen3Config, num_key_value_heads=2, head_dim=8, rope_theta=10000.0, **SMALL
    )
    spec = Spec(
        N=2,
        H=4,
        G=2,
        m=8,
        d=32,
        r=40,
        V=97,
        qk_norm=True,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        norm_eps=1e-5,
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    )
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def test_mixtral_experts_equal_transformers():
    from transformers import MixtralConfig, MixtralForCausalLM

    model, cfg, m = _llama_like(
        MixtralForCausalLM,
        MixtralConfig,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        rope_theta=10000.0,
        experts_implementation="eager",
        **SMALL,
    )
    for module in model.modules():
        if type(module).__name__.endswith("TopKRouter"):
            module.forward = _float64_router.__get__(module)
    spec = Spec(
        N=2,
        H=4,
        G=2,
        m=m,
        d=32,
        r=40,
        V=97,
        E=4,
        k=2,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        norm_eps=1e-5,
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    )
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def test_the_float32_rotary_angles_alone_would_exceed_the_tolerance():
    """The trap the tests avoid: transformers' own float32 angles differ from exact ones by far more than TOL."""
    from transformers import LlamaConfig, LlamaForCausalLM

    model, cfg, m = _llama_like(LlamaForCausalLM, LlamaConfig, num_key_value_heads=4, rope_theta=10000.0, **SMALL)
    weights = _llama_weights(model, cfg, m)
    del model.model.rotary_emb.forward  # back to the library's float32 angles
    spec = Spec(
        N=2,
        H=4,
        m=m,
        d=32,
        r=40,
        V=97,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        norm_eps=1e-5,
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    )
    assert _compare(model, spec, weights, 97) > 10 * TOL  # measured: 2.3e-9 at n = 13
