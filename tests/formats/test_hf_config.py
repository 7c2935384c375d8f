"""hf/config.py: a Hugging Face config.json mapped onto tfm's spec, checked against the published counts of the
real models, against the hand-written presets, and against the models transformers itself builds from the same
file (on the meta device: shapes only, no memory)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from helpers_hf_config import _write, assert_refused_in_one_line

from transformer_cli import SpecError, count_params, spec_from_mapping
from transformer_cli.hf.config import config_to_spec_mapping, spec_from_config
from transformer_cli.spec.stacks import decoder

ROOT = Path(__file__).resolve().parents[2]


def test_the_mapping_is_a_spec_mapping_and_names_the_model(tmp_path):
    config = json.loads((ROOT / "examples/hf/gemma-2b/config.json").read_text())
    path = _write(tmp_path / "folder", config | {"_name_or_path": "google/gemma-2b"}) / "config.json"
    mapping = config_to_spec_mapping(json.loads(path.read_text()), str(path))
    assert mapping["name"] == "google/gemma-2b" and mapping["G"] == 1 and mapping["embed_scale"] == "sqrt"
    assert spec_from_mapping(mapping, str(path)) == spec_from_config(path)  # the file, or its folder
    assert spec_from_config(path.parent) == spec_from_config(path)


# ---- small configs, counted by transformers itself

SMALL = {
    "vocab_size": 97,
    "hidden_size": 32,
    "intermediate_size": 40,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
}
LLAMA3 = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 32,
}
GPT2 = {"vocab_size": 97, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64}
FALCON = {"vocab_size": 97, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4}

# id: (model_type, "4.x" = the keys written as JSON by hand, "5.x" = written by the config class's save_pretrained)
VARIANTS = {
    "gpt2": ("gpt2", "4.x", GPT2),
    "gpt2-untied-n_inner-unscaled": (
        "gpt2",
        "4.x",
        GPT2 | dict(n_inner=50, tie_word_embeddings=False, scale_attn_weights=False, reorder_and_upcast_attn=True),
    ),
    "gpt2-one-block-layer-scaling": ("gpt2", "4.x", GPT2 | dict(n_layer=1, scale_attn_by_inverse_layer_idx=True)),
    "bert": ("bert", "4.x", SMALL | dict(type_vocab_size=3)),
    "bert-decoder": ("bert", "5.x", SMALL | dict(is_decoder=True, hidden_act="relu")),
    "llama-mha-untied": ("llama", "4.x", SMALL | dict(rope_theta=10000.0)),
    "llama-gqa-tied-head_dim-biases": (
        "llama",
        "4.x",
        SMALL | dict(num_key_value_heads=2, tie_word_embeddings=True, head_dim=12, attention_bias=True, mlp_bias=True),
    ),
    "llama-rope_scaling-llama3": ("llama", "4.x", SMALL | dict(rope_scaling=LLAMA3, num_key_value_heads=1)),
    "llama-rope_scaling-type-default": ("llama", "4.x", SMALL | dict(rope_theta=5e5, rope_scaling={"type": "default"})),
    "llama-rope_parameters-llama3": ("llama", "5.x", SMALL | dict(rope_parameters=LLAMA3)),
    "llama3-L-from-max_position_embeddings": (
        "llama",
        "4.x",
        SMALL | dict(rope_scaling={k: v for k, v in LLAMA3.items() if k != "original_max_position_embeddings"}),
    ),
    "mistral-defaults": ("mistral", "4.x", SMALL | dict(hidden_size=64, num_attention_heads=16)),
    "mistral-window-null": ("mistral", "4.x", SMALL | dict(sliding_window=None, num_key_value_heads=2)),
    "mistral-window-5.x": ("mistral", "5.x", SMALL | dict(sliding_window=7, num_key_value_heads=2)),
    "mixtral": (
        "mixtral",
        "4.x",
        SMALL
        | dict(num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, sliding_window=None, head_dim=None),
    ),
    "mixtral-5.x-window": (
        "mixtral",
        "5.x",
        SMALL | dict(num_key_value_heads=2, num_local_experts=3, sliding_window=9),
    ),
    "qwen2-kv-null": ("qwen2", "4.x", SMALL | dict(num_key_value_heads=None)),
    "qwen2-full": ("qwen2", "4.x", SMALL | dict(num_key_value_heads=2, sliding_window=8, max_window_layers=1)),
    "qwen2-sliding-all": (
        "qwen2",
        "4.x",
        SMALL
        | dict(
            num_key_value_heads=4,
            use_sliding_window=True,
            sliding_window=8,
            max_window_layers=0,
            tie_word_embeddings=True,
        ),
    ),
    "qwen2-sliding-none-past-N": (
        "qwen2",
        "5.x",
        SMALL | dict(num_key_value_heads=1, use_sliding_window=True, max_window_layers=2),
    ),
    "qwen2-sliding-some-layers": (
        "qwen2",
        "4.x",
        SMALL
        | dict(
            num_hidden_layers=3, num_key_value_heads=2, use_sliding_window=True, sliding_window=8, max_window_layers=1
        ),
    ),
    "qwen3-layer_types-5.x": (
        "qwen3",
        "5.x",
        SMALL
        | dict(
            num_hidden_layers=3,
            num_key_value_heads=1,
            use_sliding_window=True,
            sliding_window=6,
            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        ),
    ),
    "qwen2-sliding-5.x": (
        "qwen2",
        "5.x",
        SMALL | dict(num_key_value_heads=2, use_sliding_window=True, sliding_window=5, max_window_layers=0),
    ),
    "qwen3-head_dim-default": ("qwen3", "4.x", SMALL | dict(num_key_value_heads=2)),
    "qwen3-bias-tied": (
        "qwen3",
        "5.x",
        SMALL | dict(num_key_value_heads=1, head_dim=16, attention_bias=True, tie_word_embeddings=True),
    ),
    "gemma-legacy-gelu": (
        "gemma",
        "4.x",
        SMALL | dict(num_key_value_heads=1, hidden_act="gelu", hidden_activation="gelu_pytorch_tanh"),
    ),
    "gemma-untied-head_dim": (
        "gemma",
        "5.x",
        SMALL | dict(num_key_value_heads=4, head_dim=12, tie_word_embeddings=False),
    ),
    "phi-partial-4.x": ("phi", "4.x", SMALL | dict(hidden_size=40, partial_rotary_factor=0.4, rope_theta=10000.0)),
    "phi-default-partial": ("phi", "4.x", SMALL),
    "phi-qk_layernorm-gqa": ("phi", "5.x", SMALL | dict(qk_layernorm=True, num_key_value_heads=2)),
    "phi3-partial-window": (
        "phi3",
        "5.x",
        SMALL | dict(num_key_value_heads=2, partial_rotary_factor=0.5, sliding_window=7, pad_token_id=0),
    ),
    "phi3-tied": ("phi3", "4.x", SMALL | dict(tie_word_embeddings=True, rope_theta=20000.0, pad_token_id=0)),
    "gpt_neox-4.x": ("gpt_neox", "4.x", SMALL | dict(rotary_pct=0.5, rotary_emb_base=20000, hidden_act="gelu_fast")),
    "gpt_neox-sequential-nobias": ("gpt_neox", "5.x", SMALL | dict(use_parallel_residual=False, attention_bias=False)),
    "gpt_neox-default-rotary": ("gpt_neox", "4.x", SMALL),
    "falcon-multi-query": ("falcon", "4.x", FALCON),
    "falcon-per-head-sequential-bias": (
        "falcon",
        "4.x",
        FALCON | dict(multi_query=False, parallel_attn=False, bias=True, ffn_hidden_size=40),
    ),
    "falcon-new-arch-two-norms": (
        "falcon",
        "4.x",
        FALCON | dict(new_decoder_architecture=True, num_kv_heads=2, tie_word_embeddings=False),
    ),
    "falcon-new-arch-one-norm": (
        "falcon",
        "5.x",
        FALCON | dict(new_decoder_architecture=True, num_kv_heads=1, num_ln_in_parallel_attn=1, bias=True),
    ),
    "falcon-n_embed": ("falcon", "4.x", {k: v for k, v in FALCON.items() if k != "hidden_size"} | dict(n_embed=48)),
}


def _library():
    torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
    transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")
    return torch, transformers


def _save(folder: Path, model_type: str, style: str, keys: dict) -> Path:
    if style == "5.x":
        _, transformers = _library()
        transformers.AutoConfig.for_model(model_type, **keys).save_pretrained(folder)
        return folder
    return _write(folder, {"model_type": model_type} | keys)


def _theirs(folder: Path):
    """transformers' reading of the file and the count of the model it builds (BertModel for bert)."""
    torch, transformers = _library()
    config = transformers.AutoConfig.from_pretrained(folder)
    builder = transformers.AutoModel if config.model_type == "bert" else transformers.AutoModelForCausalLM
    with torch.device("meta"):
        model = builder.from_config(config)
    return config, sum(p.numel() for p in model.parameters())


def _their_windows(config) -> list[int | None]:
    """The window transformers' mask applies in each layer (Qwen2, Qwen3: the sliding layers of layer_types)."""
    kinds = getattr(config, "layer_types", None) or ["sliding_attention"] * config.num_hidden_layers
    return [getattr(config, "sliding_window", None) if k == "sliding_attention" else None for k in kinds]


def _our_windows(spec) -> list[int | None]:
    stack = decoder(spec)
    return [stack.layer(i).window for i in range(spec.N)]


@pytest.mark.parametrize("variant", VARIANTS)
def test_counts_equal_the_model_transformers_builds(variant, tmp_path):
    model_type, style, keys = VARIANTS[variant]
    folder = _save(tmp_path / variant, model_type, style, keys)
    spec = spec_from_config(folder)
    config, total = _theirs(folder)
    assert count_params(spec).total == total
    assert _our_windows(spec) == _their_windows(config)
    rope = getattr(config, "rope_parameters", None)
    if spec.positional == "rope":  # theta, rotated share and llama3's bands as transformers read them
        assert spec.rope_theta == rope["rope_theta"]
        assert spec.rope_fraction == rope.get("partial_rotary_factor", 1.0)
        assert spec.rope_scaling == ("llama3" if rope["rope_type"] == "llama3" else "none")
        if spec.rope_scaling == "llama3":
            assert (spec.rope_factor, spec.rope_low_freq_factor, spec.rope_high_freq_factor) == (8, 1, 4)
            assert spec.rope_original_max_len == rope["original_max_position_embeddings"]


def test_the_variants_reach_the_settings_they_name(tmp_path):
    """The sweep above must hold the cases it claims: windows on and off, partial rotary, llama3, G != H."""
    specs = {v: spec_from_config(_save(tmp_path / v, *VARIANTS[v])) for v in VARIANTS if "5.x" not in VARIANTS[v][1]}
    assert specs["mistral-defaults"].window == 4096 and specs["mistral-defaults"].G == 8
    assert specs["mistral-window-null"].window is None and specs["qwen2-kv-null"].G is None
    assert specs["qwen2-sliding-all"].window == 8 and specs["qwen2-full"].window is None
    assert _our_windows(specs["qwen2-sliding-some-layers"]) == [None, 8, 8]
    assert specs["llama3-L-from-max_position_embeddings"].rope_original_max_len == 64
    assert specs["qwen3-head_dim-default"].m == 128 and specs["phi-default-partial"].rope_fraction == 0.5
    assert specs["gpt_neox-default-rotary"].rope_fraction == 0.25 and specs["gemma-legacy-gelu"].activation == "gelu"
    assert specs["falcon-multi-query"].G == 1 and specs["falcon-n_embed"].d == 48


@pytest.mark.parametrize(
    ("model_type", "keys", "flip"),
    [
        ("gemma", SMALL | {"num_key_value_heads": 4}, {"tie_embeddings": False}),  # Gemma ties by default
        ("mistral", SMALL | {"hidden_size": 64, "num_attention_heads": 16}, {"G": None}),  # Mistral: 8 kv heads
        ("falcon", FALCON, {"G": None}),  # multi_query by default
        ("gpt_neox", SMALL, {"attention_bias": False}),  # biases by default
    ],
    ids=["gemma-tie", "mistral-G", "falcon-G", "gpt_neox-bias"],
)
def test_a_wrong_default_would_change_the_count(model_type, keys, flip, tmp_path):
    """The control: the same check fails when one default the file leaves out is read the other way."""
    folder = _save(tmp_path, model_type, "4.x", keys)
    spec, (_, total) = spec_from_config(folder), _theirs(folder)
    assert count_params(spec).total == total
    assert count_params(replace(spec, **flip)).total != total


# ---- bad input: one line naming the file and the key

LLAMA = {"model_type": "llama"} | SMALL
QWEN2 = {"model_type": "qwen2", "num_key_value_heads": 2} | SMALL
GEMMA = {"model_type": "gemma", "num_key_value_heads": 1} | SMALL
BAD = {
    "not-json": ('{"model_type": ', "not JSON"),
    "not-an-object": ("[1, 2]", "expected a JSON object of config keys, got a JSON array"),
    "no-model_type": ({"hidden_size": 32}, "key 'model_type': missing, expected one of "),
    "unsupported-model_type": ({"model_type": "rwkv"}, "key 'model_type': \"rwkv\" is not supported: supported"),
    "missing-size": ({k: v for k, v in LLAMA.items() if k != "hidden_size"}, "key 'hidden_size': missing, expected a"),
    "size-a-string": (LLAMA | {"hidden_size": "big"}, "key 'hidden_size': got \"big\", expected a positive integer"),
    "negative-count": (LLAMA | {"num_hidden_layers": -2}, "key 'num_hidden_layers': got -2, expected a positive"),
    "float-count": (LLAMA | {"num_attention_heads": 4.0}, "key 'num_attention_heads': got 4.0, expected a positive"),
    "flag-a-string": (LLAMA | {"tie_word_embeddings": "yes"}, "key 'tie_word_embeddings': got \"yes\", expected true"),
    "nan-eps": (json.dumps(LLAMA | {"rms_norm_eps": float("nan")}), "key 'rms_norm_eps': got NaN, expected a"),
    "rope-not-object": (LLAMA | {"rope_parameters": 5}, "key 'rope_parameters': got 5, expected a JSON object"),
    "rope-unknown": (
        LLAMA | {"rope_scaling": {"type": "mrope", "factor": 2.0}},
        "key 'rope_scaling.type': \"mrope\" is not supported: tfm knows the rope types default,",
    ),
    "llama3-no-factor": (
        LLAMA | {"rope_parameters": {k: v for k, v in LLAMA3.items() if k != "factor"}},
        "key 'rope_parameters.factor': missing, expected a positive number",
    ),
    "partial-rotary-llama": (LLAMA | {"partial_rotary_factor": 0.5}, "key 'partial_rotary_factor': 0.5 is not"),
    "G-not-a-divisor": (LLAMA | {"num_key_value_heads": 3}, "key 'num_key_value_heads': got 3, expected a divisor"),
    "activation": (LLAMA | {"hidden_act": "quick_gelu"}, "key 'hidden_act': \"quick_gelu\" is not supported"),
    "heads-do-not-divide": ({"model_type": "gpt2"} | GPT2 | {"n_head": 5}, "key 'n_head': got 5, expected a divisor"),
    "gpt2-layer-scaling": (
        {"model_type": "gpt2"} | GPT2 | {"scale_attn_by_inverse_layer_idx": True},
        "key 'scale_attn_by_inverse_layer_idx': true is not supported",
    ),
    "gpt2-cross-attention": (
        {"model_type": "gpt2"} | GPT2 | {"add_cross_attention": True},
        "key 'add_cross_attention': true is not supported",
    ),
    "bert-relative": (
        {"model_type": "bert"} | SMALL | {"position_embedding_type": "relative_key"},
        "key 'position_embedding_type': \"relative_key\" is not supported",
    ),
    "falcon-alibi": ({"model_type": "falcon", "alibi": True} | FALCON, "key 'alibi': true is not supported: tfm"),
    "falcon-kv-heads": (
        {"model_type": "falcon", "multi_query": False, "num_kv_heads": 2} | FALCON,
        "key 'num_kv_heads': 2 is not supported",
    ),
    "falcon-two-norms-old": (
        {"model_type": "falcon", "num_ln_in_parallel_attn": 2} | FALCON,
        "key 'num_ln_in_parallel_attn': 2 is not supported",
    ),
    "falcon-new-sequential": (
        {"model_type": "falcon", "new_decoder_architecture": True, "parallel_attn": False} | FALCON,
        "key 'parallel_attn': false is not supported",
    ),
    "qwen2-layers-without-a-window": (
        QWEN2 | {"layer_types": ["full_attention", "sliding_attention"]},
        'key \'layer_types\': ["full_attention", "sliding_attention"] is not '
        "supported: sliding layers need use_sliding_window",
    ),
    "qwen2-layer_types": (
        QWEN2 | {"layer_types": ["full_attention"]},
        "key 'layer_types': got [\"full_attention\"], expected a list of 2",
    ),
    "mixtral-k": (
        {"model_type": "mixtral", "num_local_experts": 2, "num_experts_per_tok": 3} | SMALL,
        "key 'num_experts_per_tok': got 3, expected at most num_local_experts = 2",
    ),
    "gemma-activations-disagree": (
        GEMMA | {"hidden_activation": "relu"},
        "key 'hidden_activation': \"relu\" is not supported: it differs from hidden_act",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_config_is_one_line_naming_file_and_key(case, tmp_path):
    assert_refused_in_one_line(tmp_path, *BAD[case])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "is a directory with no config.json in it"),
        (lambda p: _write(p, "").joinpath("config.json").write_bytes(b'{"model_type": "\xff"}'), "is not UTF-8"),
        (lambda p: _write(p, "[" * 200_000 + "]" * 200_000), "not a JSON config this reader accepts"),
        (lambda p: _write(p, " " * (5 << 20)), "expected a Hugging Face config.json of at most"),
    ],
    ids=["empty-folder", "not-utf8", "nested-too-deep", "too-large"],
)
def test_unreadable_config_is_one_line_naming_it(make, message, tmp_path):
    make(tmp_path / "model")
    with pytest.raises(SpecError, match=message) as caught:
        spec_from_config(tmp_path / "model")
    assert str(tmp_path / "model") in str(caught.value) and "\n" not in str(caught.value)


def test_falcon_old_size_names_read_as_the_new(tmp_path):
    """Falcon's first files (RefinedWeb) named the sizes n_embed, n_head, n_layer; transformers 5.24 reads only
    n_embed (n_head and n_layer came from the remote code's attribute_map), tfm reads all three."""
    config = json.loads((ROOT / "examples/hf/falcon-7b/config.json").read_text())
    renamed = {"hidden_size": "n_embed", "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}
    old = {renamed.get(k, k): v for k, v in config.items()}
    assert count_params(spec_from_config(_write(tmp_path, old))).total == 6921720704
