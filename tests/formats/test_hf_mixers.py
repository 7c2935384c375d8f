"""Models whose blocks mix their columns by more than attention (issue 45; DeepSeek's sparse attention too), against
transformers' own: the cache a decoder keeps (transformers' cache objects after a prefill, at two lengths, so that
both the per-token and the fixed part are pinned), verify-decoding on the folder with its controls, the plan's
figures, and config.json's keys. Their logits, bfloat16 runs and greedy tokens are in the tests over every model
(test_hf_transformers.py, test_generate.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from helpers_hf_transformers import IDS, TOL, build, cache_bytes, relative, theirs
from hf_exact import exact
from hf_models_mixers import INDEXED, MIXERS

from transformer_cli import Transformer
from transformer_cli.analysis.kv_cache import kv_cache_bytes, state_bytes
from transformer_cli.cli import app
from transformer_cli.components import attention_component
from transformer_cli.hf.config import spec_from_config
from transformer_cli.spec.dependent import SHARED_KV
from transformer_cli.spec.stacks import decoder
from transformer_cli.spec.validate_mixers import RECURRENT
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")


CONTROLS = [  # (model, spec keys changed, the relative error they must at least make)
    ("lfm2", {"qk_norm": False}, 1e-3),
    ("lfm2-bias-long-kernel-untied", {"rope_theta": 1e6}, 1e-3),
    ("lfm2_moe", {"router_bias": False}, 1e-3),
    ("lfm2_moe", {"router_scale": 1.0}, 1e-3),
    ("lfm2_moe", {"router_renorm_eps": None}, 100 * TOL),  # (1e-6 against the weights' sum: small, but seen)
    ("lfm2_moe-unbiased-unnormalised", {"router_renorm": True}, 1e-3),
    ("mamba2", {"conv_bias": False}, 1e-3),
    ("mamba2", {"norm_eps": 1e-2}, 1e-3),  # (the gated norm's eps is the blocks')
    ("bamba", {"rope_fraction": 1.0}, 1e-3),  # (BambaConfig's half, fixed)
    ("granitemoehybrid", {"positional": "rope"}, 1e-3),  # (no rotary without position_embedding_type rope)
    ("granitemoehybrid", {"residual_scale": 1.0}, 1e-3),
    ("granitemoehybrid-dense-rope", {"positional": "none"}, 1e-3),
    ("falcon_h1", {"parallel_scales": None}, 1e-3),  # (each of Falcon-H1's multipliers read)
    ("falcon_h1", {"ssm_scales": None}, 1e-3),
    ("falcon_h1", {"ff_scales": None}, 1e-3),
    ("falcon_h1", {"logit_scale": 1.0}, 1e-3),
    ("falcon_h1-norm-before-gate-biases-tied", {"ssm_norm": "gated"}, 1e-3),
    ("falcon_h1-norm-after-gate", {"ssm_norm": "before_gate"}, 1e-3),
    ("kimi_linear", {"positional": "rope"}, 1e-3),  # (its latent layers turn nothing)
    ("kimi_linear", {"router_scale": 1.0}, 1e-3),
    ("kimi_linear-q-lora-default-kinds", {"router_renorm": True}, 1e-3),
    ("olmo_hybrid", {"linear_beta_scale": 1.0}, 1e-3),  # (linear_allow_neg_eigval: beta doubled)
    ("olmo_hybrid", {"linear_norm_eps": None}, 100 * TOL),  # (the output norm's 1e-5, not rms_norm_eps's 1e-6)
    ("olmo_hybrid", {"positional": "none"}, 1e-3),
    ("deepseek_v32", {"index_topk": 13}, 1e-2),  # (every key: the selection matters)
    ("deepseek_v32", {"index_pairing": "interleaved"}, 1e-3),  # (its indexer turns half-split)
    ("deepseek_v32-yarn-wide-index-listed", {"index_topk": 13}, 1e-2),
    ("glm_moe_dsa", {"index_pairing": "half"}, 1e-3),  # (GLM-5's turns interleaved)
    ("glm_moe_dsa-shared", {"mixer_layers": None}, None),  # (layers 1 and 2 would need their own indexers)
    ("glm_moe_dsa-shared", {"mixer_layers": ("indexed", "latent", "latent", "indexed")}, 1e-2),
    ("zamba2", {"mem_qkv_adapters": False}, 1e-3),  # (use_shared_attention_adapter: q, k and v adapted)
    ("zamba2", {"mem_blocks": 1}, 1e-3),  # (uses 1 and 3 run the second block)
    ("zamba2", {"positional": "none"}, 1e-3),  # (use_mem_rope)
    ("zamba2", {"scale": 0.5**0.5 / 2}, 1e-3),  # ((m / 2)^-1/2 = 1/2, not m^-1/2)
    ("zamba2-one-block-gqa-nope-biases", {"ff_bias": False}, 1e-3),  # (its MLP's biases: add_bias_linear)
    ("zamba2-one-block-gqa-nope-biases", {"linear_norm_eps": None}, 1e-3),  # (the gated norm's 1e-5, not 1e-2)
    ("glm5_next_text", {"index_topk": 15}, 1e-2),  # (every pool: the selection matters)
    ("glm5_next_text", {"linear_decay_bound": None}, 1e-3),  # (its decay bounded at -5, not Kimi's)
    ("glm5_next_text", {"latent_eps": 1e-6}, 100 * TOL),  # (its latents' norms' eps: rms_norm_eps, 1e-5)
    ("glm5_next_text", {"feedforward": "gated"}, 1e-3),  # (every SwiGLU clamped at 0.5)
    ("glm5_next_text", {"hc_head": "weighted"}, None),  # (its head reads the streams' mean: no weights)
    ("glm5_next_text", {"mixer_layers": ("kda", "indexed_pool")}, None),  # (layer 2 has no indexer)
    ("qwen4_exp_text", {"index_topk": 14}, 1e-2),  # (every block: the selection matters)
    ("qwen4_exp_text", {"hc_eps": 1e-5}, 100 * TOL),  # (its streams' norms' eps: rms_norm_eps)
    ("qwen4_exp_text-sigmoid-unnormalised-whole-rotary", {"linear_gate_fn": "silu"}, 1e-3),
    ("qwen4_exp_text-sigmoid-unnormalised-whole-rotary", {"router_renorm": True}, 1e-3),
    ("qwen4_exp_text-sigmoid-unnormalised-whole-rotary", {"rope_fraction": 0.25}, 1e-3),  # (not Qwen3.5's 0.25)
    ("mistral_large4_text", {"index_topk": 13}, 1e-2),
    ("mistral_large4_text-reuse", {"latent_layers": None}, None),  # (layers 1, 3, 5 make no latents of their own)
    ("mistral_large4_text", {"query_temperature": False}, 1e-3),  # (its learned temperatures, random here)
    ("mistral_large4_text", {"rope_learned": False}, 1e-3),  # (its frequencies times exp(alpha))
    ("mistral_large4_text", {"latent_eps": 1e-6}, 100 * TOL),  # (its latents' norms' eps: rms_norm_eps, 1e-5)
    ("hy_v4", {"index_topk": 13}, 1e-2),
    ("hy_v4", {"index_rope": "first"}, 1e-3),  # (its indexer turns the last entries of each head)
    ("hy_v4", {"rope_pairing": "interleaved"}, 1e-3),  # (DeepSeek-V3.2's main attention turns interleaved)
    ("hy_v4", {"attn_sinks": False}, 1e-3),
    ("hy_v4", {"attn_gate": False}, 1e-3),
    ("hy_v4", {"expert_clamp": None}, 1e-3),  # (the routed experts clamped at 0.2)
    ("hy_v4", {"expert_clamp": 0.2, "feedforward": "clamped", "swiglu_limit": 0.2}, 1e-3),  # (not gpt-oss's)
    ("hy_v4-defaults-kinds", {"hc_post_scale": 2.0}, 1e-3),  # (its hc_magnitude 1.5)
    ("hy_v4-defaults-kinds", {"mixer_layers": None}, None),  # (layers 2 to 4 would need their own indexers)
    ("qwen4_exp_text-ngrams", {"ngram_blocks": None}, 1e-3),  # (its two blocks' n-gram inputs)
    ("qwen4_exp_text-ngrams", {"ngram_eos": 0}, 1e-3),  # (its eos is 2: a 0 of IDS made one cuts the contexts)
    ("deepseek_v4", {"index_topk": 13}, 1e-2),  # (every entry: the indexer's choice matters)
    ("deepseek_v4", {"router_score": "sigmoid"}, 1e-3),
    ("deepseek_v4", {"attn_sinks": False}, 1e-3),
    ("deepseek_v4", {"rope_local_theta": None}, 1e-3),  # (its sliding layer turns by the main base, unscaled)
    ("deepseek_v4", {"rope_attention_factor": None}, 1e-3),  # (its YaRN's cos and sin unscaled)
    ("deepseek_v4", {"feedforward": "gated"}, 1e-3),  # (every SwiGLU clamped at 0.5)
    ("deepseek_v4", {"mixer_layers": ("shared_kv",)}, 1e-3),  # (the entries read)
    ("deepseek_v4", {"feedforward_layers": None}, None),  # (layer 0 chooses by id: it has no correction bias)
    ("deepseek_v4-defaults-kinds-sigmoid-tied", {"router_score": "sqrtsoftplus"}, 1e-3),
    ("deepseek_v4-defaults-kinds-sigmoid-tied", {"hc_sinkhorn": 20}, 1e-4),  # (its 4 Sinkhorn steps)
]


def sliding_extra(spec, b: int, n: int) -> int:
    """Past its window, a sliding layer's step attends over w keys, the new one included, which tfm's cache counts,
    where transformers keeps w - 1 between steps: one token's keys and values (float64) a sliding layer (DeepSeek-V4's
    one key that is its value: twice in a sliding layer, as transformers keeps it, once in a compressed one)."""
    if spec.window is None or n < spec.window:  # (from n = w on: w - 1 kept)
        return 0
    layers = [decoder(spec).layer(i) for i in range(spec.N)]
    windowed = [attention_component(layer) for layer in layers if layer.window is not None]
    keyed = ("standard", *SHARED_KV)
    return sum(b * mixer.cache_per_token(8, 0) for mixer in windowed if mixer.spec.attention in keyed)


@pytest.mark.parametrize("name", MIXERS | INDEXED)
def test_the_cache_is_the_bytes_transformers_caches_hold(tmp_path, name):
    model = build(name)
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    for n in (5, 9):
        ids = torch.arange(2 * n).reshape(2, n) % spec.V
        with torch.no_grad():
            held = cache_bytes(model(ids, use_cache=True).past_key_values)
        assert kv_cache_bytes(spec, 2, n, "float64") == held + sliding_extra(spec, 2, n)
    # what a plan that knows attention alone would say: the fixed states missed, or the indexer's keys
    recurrent = bool(RECURRENT & {spec.attention, *(spec.mixer_layers or ())})
    assert (state_bytes(spec, 2, "float64") > 0) == recurrent
    plain = dict(attention="standard", feedforward="gated") if name in MIXERS else dict(attention="latent")
    assert kv_cache_bytes(replace(spec, mixer_layers=None, **plain), 2, 9, "float64") != held


@pytest.mark.parametrize(("name", "off", "least"), CONTROLS, ids=lambda x: x if isinstance(x, str) else "")
def test_each_familys_own_steps_matter(tmp_path, name, off, least):
    model = build(name)
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    weights = load_weights(tmp_path, spec)
    reference = theirs(exact(model), IDS)
    assert relative(Transformer(spec, weights)(IDS), reference) < TOL
    if least is None:  # (the weights lack what the changed spec reads)
        with pytest.raises(KeyError):
            Transformer(replace(spec, **off), weights)(IDS)
    else:
        assert relative(Transformer(replace(spec, **off), weights)(IDS), reference) > least


@pytest.mark.parametrize("name", MIXERS | INDEXED)
def test_verify_decoding_holds_on_the_folder_and_its_controls_are_caught(tmp_path, name, runner):
    build(name).save_pretrained(tmp_path)
    result = runner.invoke(app, ["verify-decoding", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    summary = found["results"][0]["summary"] if "results" in found else found["summary"]
    assert summary["controls"] and all(err > 1000 * summary["tolerance"] for err in summary["controls"].values())


def test_plan_says_the_fixed_state_beside_the_tokens(tmp_path, runner):
    build("lfm2").save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    result = runner.invoke(app, ["plan", str(tmp_path), "-n", "100", "-b", "3", "--kv-dtype", "float16", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    conv_blocks, attention_blocks = 3, 1
    assert plan["kv_cache_state_bytes"] == 3 * conv_blocks * spec.d * spec.conv_kernel * 2
    assert plan["kv_cache_bytes_per_token"] == attention_blocks * 2 * spec.kv_heads * spec.m * 2
    assert plan["kv_cache_bytes"] == 3 * 100 * plan["kv_cache_bytes_per_token"] + plan["kv_cache_state_bytes"]


def test_lfm2s_keys_are_read_as_its_config_class_reads_them(tmp_path, runner):
    base = dict(MIXERS["lfm2"][2]) | {"model_type": "lfm2"}
    for changed, key, value in (
        ({"block_ff_dim": 90}, "r", 64),  # (block_ff_dim wins over intermediate_size: int(2 x 90 / 3) -> 64)
        ({"block_ffn_dim_multiplier": None}, "r", 40),  # (no multiplier: int(2 x 60 / 3), not rounded)
        ({"tie_embedding": False}, "tie_embeddings", False),
    ):
        (tmp_path / "config.json").write_text(json.dumps(base | changed))
        assert getattr(spec_from_config(tmp_path), key) == value
    for bad, said in (
        ({"layer_types": ["conv", "mamba", "conv", "conv"]}, 'key \'layer_types\': got ["conv", "mamba"'),
        ({"layer_types": ["conv"]}, "expected a list of 4 'conv' or 'full_attention'"),
    ):
        (tmp_path / "config.json").write_text(json.dumps(base | bad))
        result = runner.invoke(app, ["count", str(tmp_path)])
        assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output, result.output


def test_a_folder_written_back_is_the_model_transformers_loads(tmp_path, runner):
    build("lfm2-bias-long-kernel-untied").save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "back")])
    assert result.exit_code == 0, result.output
    reference = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "hf", dtype=torch.float64)
    again = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "back", dtype=torch.float64)
    ids = torch.arange(12)[None] % 97
    with torch.no_grad():
        np.testing.assert_allclose(again(ids).logits.numpy(), reference(ids).logits.numpy(), rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("mamba2-biases-one-group-tied", "conv_bias false: llama.cpp loads no file without ssm_conv1d.bias"),
        ("mamba-biases-untied-auto-rank", "conv_bias false: llama.cpp loads no file without ssm_conv1d.bias"),
        ("mamba2-gguf", None),
        ("lfm2-bias-long-kernel-untied", "conv_bias would differ when read back"),
        ("falcon_mamba", "ssm_bcdt_eps would differ when read back"),  # (llama.cpp: the blocks' eps)
        ("qwen3_next", "llama.cpp's qwen3next routes every layer"),  # (its layer 1 a dense MLP)
        ("qwen3_5_moe_text", "llama.cpp's qwen35moe takes the value heads' size for the key heads'"),  # (6 of 8)
        ("qwen3_5_text", "llama.cpp's qwen35 takes the value heads' size for the key heads'"),
        ("qwen3_5_text-gguf", None),
        ("qwen3_next-gguf", None),
    ],
)
def test_what_llama_cpp_cannot_run_is_not_written_as_gguf(tmp_path, runner, name, said):
    build(name).save_pretrained(tmp_path / "hf")
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "m.gguf")])
    if said is None:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output, result.output
    assert not (tmp_path / "m.gguf").exists()
