"""Logits equal transformers', continued: BERT, GPT-2, Phi, GPT-NeoX, Falcon and Phi-3, their weights mapped by hand."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_transformers import SMALL, TOL, _compare, _float64_rotary, _llama_like, _randomised, count

from transformer_cli import Spec, Transformer

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")


def test_bert_final_columns_equal_transformers():
    """BertModel: post-norm, learned positions, token type 0, a norm of the embedded columns, GELU (erf), no head."""
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=97,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=40,
        max_position_embeddings=64,
        type_vocab_size=2,
        attn_implementation="sdpa",
    )
    model = BertModel(cfg).double().eval()
    _randomised(model)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    spec = Spec(
        N=2,
        H=4,
        m=8,
        d=32,
        r=40,
        V=97,
        head=False,
        type_vocab=2,
        embed_norm=True,
        pooler=True,
        scale="sqrt",
        positional="learned",
        max_len=64,
        norm="post",
        norm_eps=cfg.layer_norm_eps,
        attention_bias=True,
        activation="gelu_exact",
    )
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    e = "embeddings."
    w = {
        "embedding.E": sd[e + "word_embeddings.weight"].T,
        "embedding.T": sd[e + "token_type_embeddings.weight"].T,
        "positional.P": sd[e + "position_embeddings.weight"].T,
        "embedding.norm.gamma": sd[e + "LayerNorm.weight"],
        "embedding.norm.beta": sd[e + "LayerNorm.bias"],
        "pooler.W": sd["pooler.dense.weight"],
        "pooler.b": sd["pooler.dense.bias"],
    }
    for i in range(2):
        p, q = f"encoder.layer.{i}.", f"blocks.{i}."
        for ours, theirs in (("Q", "query"), ("K", "key"), ("V", "value")):
            w[q + f"attention.W_{ours}"] = sd[p + f"attention.self.{theirs}.weight"].reshape(4, 8, 32)
            w[q + f"attention.b_{ours}"] = sd[p + f"attention.self.{theirs}.bias"].reshape(4, 8)
        w[q + "attention.W_O"] = sd[p + "attention.output.dense.weight"].reshape(32, 4, 8).transpose(1, 0, 2)
        w[q + "attention.b_O"] = sd[p + "attention.output.dense.bias"]
        w[q + "norm1.gamma"], w[q + "norm1.beta"] = (
            sd[p + "attention.output.LayerNorm.weight"],
            sd[p + "attention.output.LayerNorm.bias"],
        )
        w[q + "ff.W1"], w[q + "ff.b1"] = sd[p + "intermediate.dense.weight"], sd[p + "intermediate.dense.bias"]
        w[q + "ff.W2"], w[q + "ff.b2"] = sd[p + "output.dense.weight"], sd[p + "output.dense.bias"]
        w[q + "norm2.gamma"], w[q + "norm2.beta"] = sd[p + "output.LayerNorm.weight"], sd[p + "output.LayerNorm.bias"]
    ids = np.random.default_rng(0).integers(0, 97, size=(2, 13))
    with torch.no_grad():
        theirs = model(torch.from_numpy(ids)).last_hidden_state.numpy().transpose(0, 2, 1)  # (b, d, n)
    ours = Transformer(spec, w)(ids)
    assert np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)) < TOL


def test_gpt2_logits_equal_transformers():
    """GPT-2's Conv1D layers store (in, out): transposed into tfm's (out, in); c_attn splits into q, k, v."""
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=97, n_embd=32, n_layer=2, n_head=4, n_positions=64, attn_implementation="sdpa")
    model = GPT2LMHeadModel(cfg).double().eval()
    _randomised(model)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    d, H, m = 32, 4, 8
    spec = Spec(
        N=2,
        H=H,
        m=m,
        d=d,
        r=4 * d,
        V=97,
        tie_embeddings=True,
        scale="sqrt",
        mask="causal",
        positional="learned",
        max_len=64,
        norm="pre",
        norm_eps=cfg.layer_norm_epsilon,
        attention_bias=True,
        activation="gelu",
    )
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    t = "transformer."
    w = {
        "embedding.E": sd[t + "wte.weight"].T,
        "positional.P": sd[t + "wpe.weight"].T,
        "final_norm.gamma": sd[t + "ln_f.weight"],
        "final_norm.beta": sd[t + "ln_f.bias"],
    }
    for i in range(2):
        p, q = f"{t}h.{i}.", f"blocks.{i}."
        W, b = sd[p + "attn.c_attn.weight"], sd[p + "attn.c_attn.bias"]  # (d, 3d): x @ W gives [q | k | v]
        for j, x in enumerate("QKV"):
            w[q + f"attention.W_{x}"] = W[:, j * d : (j + 1) * d].T.reshape(H, m, d)
            w[q + f"attention.b_{x}"] = b[j * d : (j + 1) * d].reshape(H, m)
        w[q + "attention.W_O"] = sd[p + "attn.c_proj.weight"].T.reshape(d, H, m).transpose(1, 0, 2)
        w[q + "attention.b_O"] = sd[p + "attn.c_proj.bias"]
        w[q + "ff.W1"], w[q + "ff.b1"] = sd[p + "mlp.c_fc.weight"].T, sd[p + "mlp.c_fc.bias"]
        w[q + "ff.W2"], w[q + "ff.b2"] = sd[p + "mlp.c_proj.weight"].T, sd[p + "mlp.c_proj.bias"]
        for ln, theirs in (("norm1", "ln_1"), ("norm2", "ln_2")):
            w[q + f"{ln}.gamma"], w[q + f"{ln}.beta"] = sd[p + f"{theirs}.weight"], sd[p + f"{theirs}.bias"]
    assert _compare(model, spec, w, 97) < TOL


def test_phi_parallel_blocks_and_partial_rotary_equal_transformers():
    """Phi-2's shape: one shared layer norm, X + Attn(LN(X)) + FF(LN(X)), rotary on 40% of each head, biases
    everywhere, an untied head with a bias, GELU (tanh form)."""
    from transformers import PhiConfig, PhiForCausalLM

    cfg = PhiConfig(
        vocab_size=97,
        hidden_size=40,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
        partial_rotary_factor=0.4,
        attn_implementation="sdpa",
    )
    model = PhiForCausalLM(cfg).double().eval()
    _randomised(model)
    m, rotated = 10, 4  # int(10 * 0.4)
    model.model.rotary_emb.forward = _float64_rotary(10000.0, rotated)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    spec = Spec(
        N=2,
        H=4,
        m=m,
        d=40,
        r=48,
        V=97,
        head_bias=True,
        scale="sqrt",
        mask="causal",
        positional="rope",
        rope_fraction=0.4,
        norm="pre",
        norm_eps=cfg.layer_norm_eps,
        parallel=True,
        shared_norm=True,
        attention_bias=True,
        activation="gelu",
    )
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    w = {
        "embedding.E": sd["model.embed_tokens.weight"].T,
        "head.W": sd["lm_head.weight"],
        "head.b": sd["lm_head.bias"],
        "final_norm.gamma": sd["model.final_layernorm.weight"],
        "final_norm.beta": sd["model.final_layernorm.bias"],
    }
    for i in range(2):
        p, q = f"model.layers.{i}.", f"blocks.{i}."
        for ours, theirs in (("Q", "q_proj"), ("K", "k_proj"), ("V", "v_proj")):
            w[q + f"attention.W_{ours}"] = sd[p + f"self_attn.{theirs}.weight"].reshape(4, m, 40)
            w[q + f"attention.b_{ours}"] = sd[p + f"self_attn.{theirs}.bias"].reshape(4, m)
        w[q + "attention.W_O"] = sd[p + "self_attn.dense.weight"].reshape(40, 4, m).transpose(1, 0, 2)
        w[q + "attention.b_O"] = sd[p + "self_attn.dense.bias"]
        w[q + "ff.W1"], w[q + "ff.b1"] = sd[p + "mlp.fc1.weight"], sd[p + "mlp.fc1.bias"]
        w[q + "ff.W2"], w[q + "ff.b2"] = sd[p + "mlp.fc2.weight"], sd[p + "mlp.fc2.bias"]
        w[q + "norm1.gamma"], w[q + "norm1.beta"] = sd[p + "input_layernorm.weight"], sd[p + "input_layernorm.bias"]
    assert _compare(model, spec, w, 97) < TOL


def test_gpt_neox_interleaved_qkv_and_parallel_blocks_equal_transformers():
    """Pythia's shape: query_key_value interleaved per head [q_h | k_h | v_h], two layer norms in parallel
    blocks, rotary on 25% of each head, GELU (erf), an untied head."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    cfg = GPTNeoXConfig(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=40,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
        rotary_pct=0.25,
        hidden_act="gelu",
        use_parallel_residual=True,
        attn_implementation="sdpa",
    )
    model = GPTNeoXForCausalLM(cfg).double().eval()
    _randomised(model)
    H, m, d = 4, 8, 32
    model.gpt_neox.rotary_emb.forward = _float64_rotary(10000.0, 2)  # int(8 * 0.25)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    spec = Spec(
        N=2,
        H=H,
        m=m,
        d=d,
        r=40,
        V=97,
        scale="sqrt",
        mask="causal",
        positional="rope",
        rope_fraction=0.25,
        norm="pre",
        norm_eps=cfg.layer_norm_eps,
        parallel=True,
        attention_bias=True,
        activation="gelu_exact",
    )
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    g = "gpt_neox."
    head = sd["embed_out.weight"] if "embed_out.weight" in sd else sd["lm_head.weight"]
    w = {
        "embedding.E": sd[g + "embed_in.weight"].T,
        "head.W": head,
        "final_norm.gamma": sd[g + "final_layer_norm.weight"],
        "final_norm.beta": sd[g + "final_layer_norm.bias"],
    }
    for i in range(2):
        p, q = f"{g}layers.{i}.", f"blocks.{i}."
        W = sd[p + "attention.query_key_value.weight"].reshape(H, 3, m, d)  # rows per head: q, k, v
        b = sd[p + "attention.query_key_value.bias"].reshape(H, 3, m)
        for j, x in enumerate("QKV"):
            w[q + f"attention.W_{x}"], w[q + f"attention.b_{x}"] = W[:, j], b[:, j]
        w[q + "attention.W_O"] = sd[p + "attention.dense.weight"].reshape(d, H, m).transpose(1, 0, 2)
        w[q + "attention.b_O"] = sd[p + "attention.dense.bias"]
        w[q + "ff.W1"], w[q + "ff.b1"] = sd[p + "mlp.dense_h_to_4h.weight"], sd[p + "mlp.dense_h_to_4h.bias"]
        w[q + "ff.W2"], w[q + "ff.b2"] = sd[p + "mlp.dense_4h_to_h.weight"], sd[p + "mlp.dense_4h_to_h.bias"]
        for ln, theirs in (("norm1", "input_layernorm"), ("norm2", "post_attention_layernorm")):
            w[q + f"{ln}.gamma"], w[q + f"{ln}.beta"] = sd[p + f"{theirs}.weight"], sd[p + f"{theirs}.bias"]
    assert _compare(model, spec, w, 97) < TOL


def test_falcon_multi_query_and_shared_norm_equal_transformers():
    """Falcon-7B's shape: multi-query attention fused as [all queries | one key | one value], parallel blocks
    sharing one layer norm, no linear biases, rotary positions, GELU (erf), a tied head."""
    from transformers import FalconConfig, FalconForCausalLM

    cfg = FalconConfig(
        vocab_size=97,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        multi_query=True,
        new_decoder_architecture=False,
        parallel_attn=True,
        bias=False,
        alibi=False,
        max_position_embeddings=64,
        attn_implementation="sdpa",
    )
    model = FalconForCausalLM(cfg).double().eval()
    _randomised(model)
    H, m, d = 4, 8, 32
    model.transformer.rotary_emb.forward = _float64_rotary(10000.0, m)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    spec = Spec(
        N=2,
        H=H,
        G=1,
        m=m,
        d=d,
        r=4 * d,
        V=97,
        tie_embeddings=True,
        scale="sqrt",
        mask="causal",
        positional="rope",
        norm="pre",
        norm_eps=cfg.layer_norm_epsilon,
        parallel=True,
        shared_norm=True,
        activation="gelu_exact",
        ff_bias=False,
    )
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    t = "transformer."
    w = {
        "embedding.E": sd[t + "word_embeddings.weight"].T,
        "final_norm.gamma": sd[t + "ln_f.weight"],
        "final_norm.beta": sd[t + "ln_f.bias"],
    }
    for i in range(2):
        p, q = f"{t}h.{i}.", f"blocks.{i}."
        W = sd[p + "self_attention.query_key_value.weight"]  # (d + 2m, d): the H queries, then one key, one value
        w[q + "attention.W_Q"] = W[:d].reshape(H, m, d)
        w[q + "attention.W_K"], w[q + "attention.W_V"] = W[d : d + m][None], W[d + m :][None]
        w[q + "attention.W_O"] = sd[p + "self_attention.dense.weight"].reshape(d, H, m).transpose(1, 0, 2)
        w[q + "ff.W1"], w[q + "ff.W2"] = sd[p + "mlp.dense_h_to_4h.weight"], sd[p + "mlp.dense_4h_to_h.weight"]
        w[q + "norm1.gamma"], w[q + "norm1.beta"] = sd[p + "input_layernorm.weight"], sd[p + "input_layernorm.bias"]
    assert _compare(model, spec, w, 97) < TOL


def test_phi3_fused_projections_equal_transformers():
    """Phi-3's checkpoint fuses q, k, v into qkv_proj and gate, up into gate_up_proj: split by rows."""
    from transformers import Phi3Config, Phi3ForCausalLM

    model, cfg, m = _llama_like(
        Phi3ForCausalLM, Phi3Config, num_key_value_heads=2, rope_theta=10000.0, pad_token_id=0, **SMALL
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
        positional="rope",
        norm="pre",
        norm_type="rmsnorm",
        norm_eps=1e-5,
        feedforward="gated",
        activation="silu",
        ff_bias=False,
    )
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    w = {
        "embedding.E": sd["model.embed_tokens.weight"].T,
        "head.W": sd["lm_head.weight"],
        "final_norm.gamma": sd["model.norm.weight"],
    }
    for i in range(2):
        p, q = f"model.layers.{i}.", f"blocks.{i}."
        qkv = sd[p + "self_attn.qkv_proj.weight"]  # (Hm + 2Gm, d)
        w[q + "attention.W_Q"] = qkv[: 4 * m].reshape(4, m, 32)
        w[q + "attention.W_K"] = qkv[4 * m : 6 * m].reshape(2, m, 32)
        w[q + "attention.W_V"] = qkv[6 * m :].reshape(2, m, 32)
        w[q + "attention.W_O"] = sd[p + "self_attn.o_proj.weight"].reshape(32, 4, m).transpose(1, 0, 2)
        gate_up = sd[p + "mlp.gate_up_proj.weight"]  # (2r, d): gate rows, then up rows
        w[q + "ff.W1"], w[q + "ff.W3"], w[q + "ff.W2"] = gate_up[:40], gate_up[40:], sd[p + "mlp.down_proj.weight"]
        w[q + "norm1.gamma"] = sd[p + "input_layernorm.weight"]
        w[q + "norm2.gamma"] = sd[p + "post_attention_layernorm.weight"]
    assert _compare(model, spec, w, 97) < TOL
