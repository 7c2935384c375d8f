"""The Hugging Face families and features added for 2026's models (issue 24) against transformers, with their
controls: rope scaling (linear, yarn), sliding layers per block (Qwen2, Qwen3), RoBERTa's and XLM-R's positions
after the padding index, and every command on their folders. The models are hf_models.py's MODELS,
built the same way (float64, every parameter perturbed, transformers' float32 steps recomputed in float64)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from helpers_hf_transformers import IDS, TOL, build, parameters, relative, theirs, unpadded
from hf_exact import exact

from transformer_cli import Transformer
from transformer_cli.cli import app
from transformer_cli.hf.config import spec_from_config
from transformer_cli.tasks.sources import load_weights


@pytest.mark.parametrize("name", ["roberta", "xlm-roberta-pad-3"])
def test_robertas_positions_start_after_the_padding_index_and_padding_is_refused(tmp_path, name, runner):
    """The control: the same weights with BERT's positions (from 0) differ; a padding token in tfm's input is one
    line naming it."""
    model = build(name)
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    assert (
        spec.position_offset == spec.pad_id + 1
        and spec.max_len == model.config.max_position_embeddings - spec.pad_id - 1
    )
    ids, weights = unpadded(spec), load_weights(tmp_path, spec)
    reference = theirs(exact(model), ids)
    bert = replace(spec, position_offset=None, pad_id=None)
    shifted = {k: (v[:, spec.pad_id + 1 :] if k == "positional.P" else v) for k, v in weights.items()}
    assert relative(Transformer(bert, shifted)(ids), reference) < TOL  # the same positions, read from column 0
    assert relative(Transformer(bert, weights)(ids), reference) > 1e-3
    np.save(tmp_path / "ids.npy", np.array([[5, spec.pad_id, 7]]))
    result = runner.invoke(app, ["run", str(tmp_path), "-i", str(tmp_path / "ids.npy")])
    assert result.exit_code != 0 and f"token id {spec.pad_id} at index (0, 1) is the padding token" in result.stderr


SCALED = [
    "llama-rope-linear",
    "llama-rope-dynamic",
    "llama-rope-yarn",
    "llama-rope-yarn-mscale-untruncated",
    "phi3-longrope",
]


@pytest.mark.parametrize("name", SCALED)
def test_scaled_rotary_frequencies_are_transformers_and_the_scaling_matters(tmp_path, name):
    """tfm's float64 frequencies and YaRN's or LongRoPE's factor on cos and sin against transformers' own (its
    frequencies in float32: to 1e-6), for passes up to and past the original context (dynamic and longrope
    choose by the length), and the control: the same weights without the scaling compute something else."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    from transformer_cli.components.positional import Rotary

    model = build(name)
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    ours = Rotary(spec)
    init = ROPE_INIT_FUNCTIONS[model.config.rope_parameters["rope_type"]]
    for length in (5, 13):  # within and past every original context here (8)
        inv_freq, factor = init(model.config, None, seq_len=length)
        assert np.allclose(ours.frequencies(length), inv_freq.double().numpy(), rtol=1e-6, atol=0)
        assert ours.attention_factor == pytest.approx(factor, rel=1e-12)
    if spec.rope_scaling in ("dynamic", "longrope"):
        assert not np.allclose(ours.frequencies(5), ours.frequencies(13), rtol=1e-3)
    reference = theirs(exact(model), IDS)
    weights = load_weights(tmp_path, spec)
    assert relative(Transformer(spec, weights)(IDS), reference) < TOL
    assert relative(Transformer(replace(spec, rope_scaling="none"), weights)(IDS), reference) > 1e-3
    if spec.rope_scaling in ("dynamic", "longrope"):  # the pass of 13 chose its frequencies by its length
        short = replace(spec, rope_original_max_len=64)
        assert relative(Transformer(short, weights)(IDS), reference) > 1e-3


@pytest.mark.parametrize(
    "name", ["qwen2-sliding-some-layers", "qwen3-layer_types", "gpt_neo-global-local", "gemma2", "gemma3_text"]
)
def test_the_kind_of_each_layer_matters(tmp_path, name):
    """The control for the layers above: the same weights with the window in every block, or in none, compute
    something else than transformers (by far more than the tolerance), so the per-layer kinds were exercised."""
    model = build(name)
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    assert spec.attention_layers is not None
    reference = theirs(exact(model), IDS)
    weights = load_weights(tmp_path, spec)
    for uniform in (replace(spec, attention_layers=None), replace(spec, attention_layers=None, window=None)):
        assert relative(Transformer(uniform, weights)(IDS), reference) > 1e-3


@pytest.mark.parametrize(
    "name",
    [
        "roberta",
        "xlm-roberta-pad-3",
        "distilbert",
        "distilbert-sinusoidal-relu",
        "llama-rope-linear",
        "llama-rope-dynamic",
        "llama-rope-yarn",
        "phi3-longrope",
        "qwen2-sliding-some-layers",
        "gpt_neo-global-local",
        "gpt_neo-local-untied",
        "gemma2",
        "gemma3_text",
        "qwen2_moe",
        "qwen3_moe",
        "olmo2",
        "deepseek_v2",
        "deepseek_v3",
        "gpt_oss",
        "gptj",
        "opt",
        "opt-post-norm-untied",
        "bloom",
        "starcoder2",
        "stablelm",
        "stablelm-parallel",
        "stablelm-qk-layernorm",
        "granite",
        "cohere",
        "cohere-qk-norm",
        "phimoe",
        "opt-350m-projected",
        "opt-projected-pre-untied",
        "longcat_flash",
        "gemma4_text",
        "gemma4_text-moe",
        "gemma4_text-ple",
        "gemma4_text-kv-shared",
        "gemma3n_text",
        "gemma3n_text-kv-shared",
    ],
)
def test_verify_attention_and_plan_take_the_new_families_folders(tmp_path, name, runner):
    """The properties as theory predicts them, on the checkpoint's own weights, one block's attention maps, and the
    serving and training plan (its weights the checkpoint's parameters)."""
    model = build(name)
    model.save_pretrained(tmp_path / "m")
    result = runner.invoke(app, ["verify", str(tmp_path / "m"), "--json"])
    assert result.exit_code == 0, result.output
    planned = runner.invoke(app, ["plan", str(tmp_path / "m"), "-n", "16", "--json"])
    assert planned.exit_code == 0, planned.output
    assert json.loads(planned.stdout)["params"] == parameters(model)
    np.save(tmp_path / "ids.npy", unpadded(spec_from_config(tmp_path / "m"))[0])
    maps = runner.invoke(app, ["attention", str(tmp_path / "m"), "--input", str(tmp_path / "ids.npy")])
    assert maps.exit_code == 0, maps.output


def test_soft_capped_logits_stay_within_the_cap(tmp_path):
    """Gemma 2's cap bounds every logit (tanh; in floats it may reach the cap itself), even for inputs far out;
    uncapped, the same model exceeds it."""
    model = build("gemma2")
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    weights = {k: (v * 5 if k == "embedding.E" else v) for k, v in load_weights(tmp_path, spec).items()}
    capped = Transformer(spec, weights)(IDS)
    assert np.abs(capped).max() <= spec.logit_softcap
    assert np.abs(Transformer(replace(spec, logit_softcap=None), weights)(IDS)).max() > spec.logit_softcap


def test_attention_sinks_take_part_of_every_column_and_verify_says_so(tmp_path, runner):
    """With sinks each query's weights sum to less than 1 (the sink takes the rest): verify's softmax check holds
    as predicted, and decoding with the sinks equals the parallel pass."""
    import json

    build("gpt_oss").save_pretrained(tmp_path / "m")
    result = runner.invoke(app, ["verify", str(tmp_path / "m"), "--json"])
    assert result.exit_code == 0, result.output
    checks = {c["check"]: c for c in json.loads(result.stdout)["checks"]}
    assert "sinks take the rest" in checks["softmax"]["reason"] and checks["decoding"]["observed"] == "holds"
    spec = spec_from_config(tmp_path / "m")
    weights = Transformer(spec, load_weights(tmp_path / "m", spec)).attention_weights(IDS)
    sums = np.concatenate([A.sum(axis=-2).ravel() for A in weights])
    assert 0 < sums.min() and sums.max() < 1


def test_opts_positions_read_two_columns_on(tmp_path):
    """The control for OPT: its table read from column 0 (no offset) computes something else."""
    model = build("opt")
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    weights = load_weights(tmp_path, spec)
    reference = theirs(exact(model), IDS)
    shifted = {k: (v[:, 2:] if k == "positional.P" else v) for k, v in weights.items()}
    assert relative(Transformer(replace(spec, position_offset=None), shifted)(IDS), reference) < TOL
    assert relative(Transformer(replace(spec, position_offset=None), weights)(IDS), reference) > 1e-3


# Each family's own steps, one by one: the same weights without the step compute something else (by far more
# than the tolerance), so the conformance tests above exercised it.
CONTROLS = [
    ("gemma2", {"attn_softcap": None}),
    ("gemma2", {"logit_softcap": None}),
    ("gemma2", {"norm": "pre"}),
    ("gemma3_text", {"rope_local_theta": None}),
    ("gemma3_text", {"qk_norm": False}),
    ("gemma3_text-all-sliding", {"rope_theta": 1e5, "rope_scaling": "linear", "rope_factor": 2.0}),
    ("gemma3_text-four-layers", {"rope_theta": 1e4}),
    ("gemma3_text-one-base-scaled", {"rope_local_theta": None}),
    ("qwen2_moe", {"router_renorm": True}),
    ("qwen2_moe", {"shared_gate": False}),
    ("qwen3_moe", {"router_renorm": False}),
    ("deepseek_v3", {"router_bias": False}),
    ("deepseek_v3", {"router_groups": None, "router_topk_groups": None}),
    ("deepseek_v3", {"router_scale": 1.0}),
    ("deepseek_v3", {"rope_pairing": "half"}),
    ("deepseek_v3", {"router_score": "softmax"}),
    ("deepseek_v2", {"router_groups": None, "router_topk_groups": None}),
    ("deepseek_v2", {"router_scale": 1.0}),
    ("deepseek_v2", {"shared_r": None}),
    ("gpt_oss", {"attn_sinks": False}),
    ("gpt_oss", {"router_logit_bias": False}),
    ("gpt_oss", {"swiglu_limit": 1e6}),
    ("gpt_oss", {"feedforward": "gated"}),
    ("gptj", {"rope_pairing": "half"}),
    ("gptj", {"rope_fraction": 1.0}),
    ("gptj", {"head_bias": False}),
    ("bloom", {"positional": "none"}),
    ("bloom", {"embed_norm": False}),
    ("starcoder2", {"window": None}),
    ("stablelm", {"rope_fraction": 1.0}),
    ("stablelm-parallel", {"rope_fraction": 0.25}),
    ("stablelm-qk-layernorm", {"qk_norm": False}),
    ("granite", {"embed_scale": "none"}),
    ("granite", {"scale": "sqrt"}),
    ("granite", {"residual_scale": 1.0}),
    ("granite", {"logit_scale": 1.0}),
    ("cohere", {"rope_pairing": "half"}),
    ("cohere", {"logit_scale": 1.0}),
    ("cohere-qk-norm", {"qk_norm": False}),
    ("phimoe", {"router_jitter": 1e-9}),
    ("phimoe", {"router_score": "softmax"}),
    ("phimoe", {"rope_long_factor": (1.0, 2.0, 4.0, 9.0)}),
    ("phimoe", {"rope_attention_factor": None}),
    ("mpnet", {"positional": "learned"}),
    ("mpnet", {"rel_max_distance": 12}),
    ("modernbert", {"window": None}),
    ("modernbert", {"window": 3}),  # (one key fewer either way: the band is |s - t| <= local_attention / 2)
    ("modernbert-biases-every-2", {"rope_local_theta": None}),
    ("modernbert-decoder", {"window": 4}),
    ("modernbert-decoder-biases-untied", {"head_transform": "linear"}),
    ("deberta-v2", {"rel_terms": "c2p"}),
    ("deberta-v2", {"rel_terms": "p2c"}),
    ("deberta-v2", {"rel_max_distance": 12}),
    ("laguna", {"attn_gate_fn": "sigmoid"}),
    ("laguna", {"rope_local_fraction": None}),
    ("laguna-per-entry-capped", {"router_softcap": None}),
    ("jetmoe", {"expert_out_bias": False}),
    ("jetmoe", {"out_bias": False}),
    ("mimo_v2_flash", {"value_scale": 1.0}),
    ("mimo_v2_flash", {"local_sinks": False}),
    ("mimo_v2_flash-groups-biased", {"router_scale": 1.0}),
    ("longcat_flash", {"routed_later": False}),
    ("longcat_flash", {"zero_experts": None, "k": 3}),
    ("longcat_flash", {"latent_scale": False}),
    ("longcat_flash-yarn-no-zero", {"router_bias": False}),
    ("gemma4_text", {"v_norm": False}),
    ("gemma4_text", {"layer_scale": False}),
    ("gemma4_text", {"rope_pairing": "half"}),
    ("gemma4_text-default-kinds", {"rope_scaling": "none"}),
    ("gemma4_text-default-kinds", {"rope_local_theta": None}),
    ("gemma4_text-k-eq-v", {"v_norm": False}),
    ("gemma4_text-ple", {"ple_dim": None}),
    ("gemma4_text-kv-shared", {"layer_scale": False}),
    ("gemma3n_text", {"sparsity_layers": None}),
    ("gemma3n_text", {"laurel_rank": None}),
    ("gemma3n_text", {"altup_active": 1}),
    ("gemma3n_text", {"altup_correct_scale": False}),
    ("gemma3n_text", {"ple_dim": None}),
    ("gemma3n_text", {"v_norm": False}),
    ("gemma3n_text-active-1-untied", {"altup_active": 0}),
    ("gemma3n_text-active-1-untied", {"rope_theta": 500.0}),  # (every layer slides: the sliding base, 50)
    ("gemma3n_text-kv-shared", {"sparsity_layers": (0.9,)}),
]


@pytest.mark.parametrize(("name", "off"), CONTROLS, ids=lambda x: x if isinstance(x, str) else "-".join(map(str, x)))
def test_each_familys_own_steps_matter(tmp_path, name, off):
    """Gemma's soft-capping, sandwich, local rope base and query/key norms; Qwen-MoE's renormalisation and shared
    gate; DeepSeek's correction bias, groups, scaling, sigmoid, interleaved pairs and shared experts; gpt-oss's
    sinks, router bias and clamps; GPT-J's pairing, partial rotation and head bias; BLOOM's ALiBi and embedding
    norm; StableLM's and Cohere's per-head norms; Granite's multipliers; Cohere's pairs and logit scale;
    PhiMoE's sparsemixer threshold and router, and its LongRoPE as transformers runs it (short factors, mscale)."""
    model = build(name)
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    reference = theirs(exact(model), IDS)
    assert relative(Transformer(replace(spec, **off), load_weights(tmp_path, spec))(IDS), reference) > 1e-3


def test_blooms_gelu_constant_is_the_one_its_code_writes(tmp_path):
    """BLOOM's GELU writes sqrt(2/pi) as 0.79788456: with the exact constant tfm's logits miss transformers' by more
    than the tolerance (measured 1.6e-10 on this model), with BLOOM's they agree."""
    model = build("bloom")
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    weights, reference = load_weights(tmp_path, spec), theirs(exact(model), IDS)
    assert relative(Transformer(spec, weights)(IDS), reference) < TOL
    assert relative(Transformer(replace(spec, activation="gelu"), weights)(IDS), reference) > TOL
