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

from transformer_cli import Spec, Transformer

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

TOL = 1e-10  # relative, on the logits


def _float64_rms_norm(self, hidden):  # LlamaRMSNorm and its copies, without the cast to float32
    variance = hidden.pow(2).mean(-1, keepdim=True)
    return self.weight * (hidden * torch.rsqrt(variance + self.variance_epsilon))


def _float64_gemma_rms_norm(self, hidden):  # GemmaRMSNorm: x / rms * (1 + weight), without the cast
    return (hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + self.eps)) * (1.0 + self.weight)


def _float64_rotary(theta: float, rotated: int):
    def forward(x, position_ids):
        inv_freq = 1.0 / theta ** (torch.arange(0, rotated, 2, dtype=torch.float64) / rotated)
        freqs = position_ids[..., None].double() * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    return forward


def _randomised(model) -> None:
    """Every parameter random and non-zero (the library's init leaves biases and norms at 0 and 1)."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.2 + (1.0 if p.dim() == 1 else 0.0) * 0.1)


def _llama_like(model_cls, config_cls, **config):
    """A float64 model of a LLaMA-layout family, its rotary and RMSNorm recomputed in float64."""
    cfg = config_cls(attn_implementation="sdpa", **config)
    model = model_cls(cfg).double().eval()
    _randomised(model)
    m = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    model.model.rotary_emb.forward = _float64_rotary(cfg.rope_theta if hasattr(cfg, "rope_theta")
                                                     else cfg.rope_parameters["rope_theta"], m)  # fmt: skip
    embed = model.model.embed_tokens
    if hasattr(embed, "embed_scale"):  # Gemma: sqrt(d), made in float32 by the library
        embed.embed_scale = torch.tensor(cfg.hidden_size**0.5, dtype=torch.float64)
    for module in model.modules():
        name = type(module).__name__
        if name.endswith("RMSNorm"):
            norm = _float64_gemma_rms_norm if name.startswith("Gemma") else _float64_rms_norm
            module.forward = norm.__get__(module)
    return model, cfg, m


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


def _compare(model, spec: Spec, weights: dict[str, np.ndarray], V: int) -> float:
    ids = np.random.default_rng(0).integers(0, V, size=(2, 13))
    with torch.no_grad():
        theirs = model(torch.from_numpy(ids)).logits.numpy().transpose(0, 2, 1)  # (b, V, n)
    ours = Transformer(spec, weights)(ids)
    return float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))


SMALL = dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=64, rms_norm_eps=1e-5)  # fmt: skip


@pytest.mark.parametrize("G", [4, 2, 1])
@pytest.mark.parametrize("tied", [False, True])
def test_llama_logits_equal_transformers(G, tied):
    from transformers import LlamaConfig, LlamaForCausalLM

    model, cfg, m = _llama_like(LlamaForCausalLM, LlamaConfig, num_key_value_heads=G, tie_word_embeddings=tied,
                                rope_theta=10000.0, **SMALL)  # fmt: skip
    spec = Spec(N=2, H=4, G=G, m=m, d=32, r=40, V=97, tie_embeddings=tied, scale="sqrt", mask="causal",
                positional="rope", norm="pre", norm_type="rmsnorm", norm_eps=1e-5, feedforward="gated",
                activation="silu", ff_bias=False)  # fmt: skip
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def test_mistral_sliding_window_logits_equal_transformers():
    from transformers import MistralConfig, MistralForCausalLM

    model, cfg, m = _llama_like(MistralForCausalLM, MistralConfig, num_key_value_heads=2, sliding_window=4,
                                rope_theta=10000.0, **SMALL)  # fmt: skip
    spec = Spec(N=2, H=4, G=2, m=m, d=32, r=40, V=97, scale="sqrt", mask="causal", window=4, positional="rope",
                norm="pre", norm_type="rmsnorm", norm_eps=1e-5, feedforward="gated", activation="silu",
                ff_bias=False)  # fmt: skip
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def test_qwen2_biases_on_q_k_v_only_equal_transformers():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    model, cfg, m = _llama_like(Qwen2ForCausalLM, Qwen2Config, num_key_value_heads=2, rope_theta=10000.0, **SMALL)
    spec = Spec(N=2, H=4, G=2, m=m, d=32, r=40, V=97, scale="sqrt", mask="causal", positional="rope", norm="pre",
                norm_type="rmsnorm", norm_eps=1e-5, attention_bias=True, out_bias=False, feedforward="gated",
                activation="silu", ff_bias=False)  # fmt: skip
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def test_gemma_logits_equal_transformers():
    """(1 + gamma) RMSNorm, embedding times sqrt(d), GeGLU (tanh form), heads of m != d/H, tied, multi-query."""
    from transformers import GemmaConfig, GemmaForCausalLM

    model, cfg, m = _llama_like(GemmaForCausalLM, GemmaConfig, num_key_value_heads=1, head_dim=12, rope_theta=10000.0,
                                hidden_activation="gelu_pytorch_tanh", **SMALL)  # fmt: skip
    spec = Spec(N=2, H=4, G=1, m=12, d=32, r=40, V=97, tie_embeddings=True, embed_scale="sqrt", scale="sqrt",
                mask="causal", positional="rope", norm="pre", norm_type="rmsnorm", norm_plus_one=True, norm_eps=1e-5,
                feedforward="gated", activation="gelu", ff_bias=False)  # fmt: skip
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def test_qwen3_query_and_key_norms_equal_transformers():
    from transformers import Qwen3Config, Qwen3ForCausalLM

    model, cfg, m = _llama_like(Qwen3ForCausalLM, Qwen3Config, num_key_value_heads=2, head_dim=8, rope_theta=10000.0,
                                **SMALL)  # fmt: skip
    spec = Spec(N=2, H=4, G=2, m=8, d=32, r=40, V=97, qk_norm=True, scale="sqrt", mask="causal", positional="rope",
                norm="pre", norm_type="rmsnorm", norm_eps=1e-5, feedforward="gated", activation="silu",
                ff_bias=False)  # fmt: skip
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def _float64_router(self, hidden):  # MixtralTopKRouter without its cast to float32
    logits = torch.nn.functional.linear(hidden.reshape(-1, self.hidden_dim), self.weight)
    top, index = torch.topk(torch.softmax(logits, dim=-1), self.top_k, dim=-1)
    return logits, top / top.sum(dim=-1, keepdim=True), index


def test_mixtral_experts_equal_transformers():
    from transformers import MixtralConfig, MixtralForCausalLM

    model, cfg, m = _llama_like(MixtralForCausalLM, MixtralConfig, num_key_value_heads=2, num_local_experts=4,
                                num_experts_per_tok=2, rope_theta=10000.0, experts_implementation="eager",
                                **SMALL)  # fmt: skip
    for module in model.modules():
        if type(module).__name__.endswith("TopKRouter"):
            module.forward = _float64_router.__get__(module)
    spec = Spec(N=2, H=4, G=2, m=m, d=32, r=40, V=97, E=4, k=2, scale="sqrt", mask="causal", positional="rope",
                norm="pre", norm_type="rmsnorm", norm_eps=1e-5, feedforward="gated", activation="silu",
                ff_bias=False)  # fmt: skip
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    assert _compare(model, spec, _llama_weights(model, cfg, m), 97) < TOL


def test_the_float32_rotary_angles_alone_would_exceed_the_tolerance():
    """The trap the tests avoid: transformers' own float32 angles differ from exact ones by far more than TOL."""
    from transformers import LlamaConfig, LlamaForCausalLM

    model, cfg, m = _llama_like(LlamaForCausalLM, LlamaConfig, num_key_value_heads=4, rope_theta=10000.0, **SMALL)
    weights = _llama_weights(model, cfg, m)
    del model.model.rotary_emb.forward  # back to the library's float32 angles
    spec = Spec(N=2, H=4, m=m, d=32, r=40, V=97, scale="sqrt", mask="causal", positional="rope", norm="pre",
                norm_type="rmsnorm", norm_eps=1e-5, feedforward="gated", activation="silu", ff_bias=False)  # fmt: skip
    assert _compare(model, spec, weights, 97) > 10 * TOL  # measured: 2.3e-9 at n = 13


def count(spec: Spec) -> int:
    from transformer_cli import count_params

    return count_params(spec).total


def test_bert_final_columns_equal_transformers():
    """BertModel: post-norm, learned positions, token type 0, a norm of the embedded columns, GELU (erf), no head."""
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
                     max_position_embeddings=64, type_vocab_size=2, attn_implementation="sdpa")  # fmt: skip
    model = BertModel(cfg).double().eval()
    _randomised(model)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    spec = Spec(N=2, H=4, m=8, d=32, r=40, V=97, head=False, type_vocab=2, embed_norm=True, pooler=True,
                scale="sqrt", positional="learned", max_len=64, norm="post", norm_eps=cfg.layer_norm_eps,
                attention_bias=True, activation="gelu_exact")  # fmt: skip
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    e = "embeddings."
    w = {"embedding.E": sd[e + "word_embeddings.weight"].T, "embedding.T": sd[e + "token_type_embeddings.weight"].T,
         "positional.P": sd[e + "position_embeddings.weight"].T, "embedding.norm.gamma": sd[e + "LayerNorm.weight"],
         "embedding.norm.beta": sd[e + "LayerNorm.bias"], "pooler.W": sd["pooler.dense.weight"],
         "pooler.b": sd["pooler.dense.bias"]}  # fmt: skip
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
    spec = Spec(N=2, H=H, m=m, d=d, r=4 * d, V=97, tie_embeddings=True, scale="sqrt", mask="causal",
                positional="learned", max_len=64, norm="pre", norm_eps=cfg.layer_norm_epsilon, attention_bias=True,
                activation="gelu")  # fmt: skip
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    t = "transformer."
    w = {"embedding.E": sd[t + "wte.weight"].T, "positional.P": sd[t + "wpe.weight"].T,
         "final_norm.gamma": sd[t + "ln_f.weight"], "final_norm.beta": sd[t + "ln_f.bias"]}  # fmt: skip
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

    cfg = PhiConfig(vocab_size=97, hidden_size=40, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                    max_position_embeddings=64, partial_rotary_factor=0.4, attn_implementation="sdpa")  # fmt: skip
    model = PhiForCausalLM(cfg).double().eval()
    _randomised(model)
    m, rotated = 10, 4  # int(10 * 0.4)
    model.model.rotary_emb.forward = _float64_rotary(10000.0, rotated)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    spec = Spec(N=2, H=4, m=m, d=40, r=48, V=97, head_bias=True, scale="sqrt", mask="causal", positional="rope",
                rope_fraction=0.4, norm="pre", norm_eps=cfg.layer_norm_eps, parallel=True, shared_norm=True,
                attention_bias=True, activation="gelu")  # fmt: skip
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

    cfg = GPTNeoXConfig(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
                        num_attention_heads=4, max_position_embeddings=64, rotary_pct=0.25, hidden_act="gelu",
                        use_parallel_residual=True, attn_implementation="sdpa")  # fmt: skip
    model = GPTNeoXForCausalLM(cfg).double().eval()
    _randomised(model)
    H, m, d = 4, 8, 32
    model.gpt_neox.rotary_emb.forward = _float64_rotary(10000.0, 2)  # int(8 * 0.25)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    spec = Spec(N=2, H=H, m=m, d=d, r=40, V=97, scale="sqrt", mask="causal", positional="rope", rope_fraction=0.25,
                norm="pre", norm_eps=cfg.layer_norm_eps, parallel=True, attention_bias=True,
                activation="gelu_exact")  # fmt: skip
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

    cfg = FalconConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, multi_query=True,
                       new_decoder_architecture=False, parallel_attn=True, bias=False, alibi=False,
                       max_position_embeddings=64, attn_implementation="sdpa")  # fmt: skip
    model = FalconForCausalLM(cfg).double().eval()
    _randomised(model)
    H, m, d = 4, 8, 32
    model.transformer.rotary_emb.forward = _float64_rotary(10000.0, m)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    spec = Spec(N=2, H=H, G=1, m=m, d=d, r=4 * d, V=97, tie_embeddings=True, scale="sqrt", mask="causal",
                positional="rope", norm="pre", norm_eps=cfg.layer_norm_epsilon, parallel=True, shared_norm=True,
                activation="gelu_exact", ff_bias=False)  # fmt: skip
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    t = "transformer."
    w = {"embedding.E": sd[t + "word_embeddings.weight"].T, "final_norm.gamma": sd[t + "ln_f.weight"],
         "final_norm.beta": sd[t + "ln_f.bias"]}  # fmt: skip
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

    model, cfg, m = _llama_like(Phi3ForCausalLM, Phi3Config, num_key_value_heads=2, rope_theta=10000.0,
                                pad_token_id=0, **SMALL)  # fmt: skip
    spec = Spec(N=2, H=4, G=2, m=m, d=32, r=40, V=97, scale="sqrt", mask="causal", positional="rope", norm="pre",
                norm_type="rmsnorm", norm_eps=1e-5, feedforward="gated", activation="silu", ff_bias=False)  # fmt: skip
    assert sum(p.numel() for p in model.parameters()) == count(spec)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    w = {"embedding.E": sd["model.embed_tokens.weight"].T, "head.W": sd["lm_head.weight"],
         "final_norm.gamma": sd["model.norm.weight"]}  # fmt: skip
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
