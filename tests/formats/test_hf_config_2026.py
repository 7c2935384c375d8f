"""Issue 44's families: the configs transformers 5.24 cannot build, or that tfm cannot hold, refused in one line
naming the file and the key (what they build is held to transformers' own models in test_hf_transformers.py)."""

from __future__ import annotations

import json

import pytest

from transformer_cli import SpecError, count_params
from transformer_cli.families import RECORDS
from transformer_cli.hf.config import spec_from_config

SMALL = dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=4, num_attention_heads=4)
GEMMA4 = {"model_type": "gemma4_text", "hidden_size_per_layer_input": 0}


@pytest.mark.parametrize(
    "keys, words",
    [
        ({"model_type": "exaone4", "sliding_window": None, "num_key_value_heads": 2}, "without layer_types"),
        ({"model_type": "exaone4", "sliding_window_pattern": "LG", "num_key_value_heads": 2}, '"LG" is not supported'),
        ({"model_type": "smollm3", "no_rope_layers": [1, 1, 2, 0]}, "expected a list of 4"),
        ({"model_type": "olmo3", "layer_types": ["sliding_attention"]}, "'layer_types'"),
        ({"model_type": "arcee", "hidden_act": "tanh"}, "key 'hidden_act'"),
        ({"model_type": "cohere2", "sliding_window": None}, "runs Cohere2 with a window only"),
        ({"model_type": "ministral"}, "MinistralAttention needs a head_dim"),
        ({"model_type": "helium", "head_dim": 16}, "4 heads of 16 must make 32"),
        ({"model_type": "helium"}, "4 heads of 128 must make 32"),
        ({"model_type": "exaone_moe", "sliding_window": None}, "takes an integer window only"),
        ({"model_type": "ernie4_5_moe", "use_bias": True}, "ERNIE's routed experts have no biases"),
        ({"model_type": "cohere2_moe", "sliding_window": None}, "runs with a window only"),
        ({"model_type": "apertus1p5_text", "output_vocab_size": 48}, "as wide as the vocabulary, 97"),
        ({"model_type": "dbrx", "d_model": 32, "n_heads": 4, "n_layers": 2}, "runs with a clip_qkv only"),
        ({"model_type": "cohere2_moe", "expert_selection_fn": "relu"}, "routes by softmax or sigmoid"),
        ({"model_type": "granite_swa", "layer_rope_theta": [1e4, 50.0, 60.0, 50.0]}, "one base for the full layers"),
        ({"model_type": "granite_swa", "layer_rope_theta": [1e4, 50.0]}, "expected a list of 4 numbers from 0"),
        ({"model_type": "hy_v3", "mlp_bias": True, "num_key_value_heads": 2}, "HY-V3's routed experts have no"),
        ({"model_type": "youtu", "num_key_value_heads": 4, "head_dim": 8}, "Youtu turns qk_rope_head_dim = 64"),
        ({"model_type": "dots1", "n_routed_experts": 4, "num_experts_per_tok": 2}, "'n_shared_experts': missing"),
        (GEMMA4 | {"num_kv_shared_layers": 2}, "'num_kv_shared_layers': got 2, expected a layer of each sharing"),
        (GEMMA4 | {"num_kv_shared_layers": 4}, "below num_hidden_layers = 4"),
        (GEMMA4 | {"enable_moe_block": True, "num_experts": 2, "top_k_experts": 3}, "at most num_experts = 2"),
        (
            GEMMA4
            | {
                "layer_types": ["sliding_attention", "full_attention"] * 2,
                "per_layer_config": {"1": {"head_dim": 8}, "3": {"head_dim": 16}},
            },
            "one head size",
        ),
        (GEMMA4 | {"use_bidirectional_attention": "all"}, "causal language model only"),
        (GEMMA4 | {"per_layer_config": {"1": {"num_key_value_heads": 1}}}, "on the full layers only"),
        (GEMMA4 | {"per_layer_config": {"3": {"head_dim": 16, "sliding_window": 2}}}, "a head_dim and key/value"),
        (
            GEMMA4 | {"rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 2.0}}},
            "default or proportional",
        ),
    ],
)
def test_a_config_transformers_or_tfm_cannot_build_is_one_line_naming_the_key(tmp_path, keys, words):
    (tmp_path / "config.json").write_text(json.dumps(SMALL | keys))
    with pytest.raises(SpecError, match="^" + str(tmp_path / "config.json")) as caught:
        spec_from_config(tmp_path)
    assert words in str(caught.value) and "\n" not in str(caught.value)


NEW = ["arcee", "olmo3", "seed_oss", "helium", "ministral", "cwm", "smollm3", "exaone4", "ernie4_5", "glm4"]
NEW += [
    "olmoe",
    "flex_olmo",
    "granitemoe",
    "granitemoeshared",
    "cohere2",
    "nemotron",
    "vaultgemma",
    "olmo",
    "jais2",
    "persimmon",
    "glm4_moe",
    "glm4_moe_lite",
    "dots1",
    "solar_open",
    "exaone_moe",
    "minimax_m2",
    "ernie4_5_moe",
    "youtu",
    "hy_v3",
    "codegen",
    "mpt",
    "granite_swa",
    "ministral3",
    "nanochat",
    "apertus",
    "cohere2_moe",
    "afmoe",
    "llama4_text",
    "eurobert",
    "mistral4",
    "apertus1p5_text",
    "electra",
    "albert",
    "mpnet",
    "modernbert",
    "modernbert-decoder",
    "deberta-v2",
    "laguna",
    "jetmoe",
    "mimo_v2_flash",
    "longcat_flash",
    "gemma4_text",
]  # (DBRX's config class cannot build a model without attn_config's clip_qkv and rope_theta: refused below)


_G = {
    "glm4_moe_lite": 4,
    "youtu": 4,
    "mistral4": 4,
    "longcat_flash": 4,
}  # (latent attention: a key per head; transformers' model fails on fewer)
_NO_DEFAULT = {  # the keys a type's config class has no usable default for (the tests above show tfm asks for them)
    "helium": {"head_dim": 8},
    "ministral": {"head_dim": 8},
    "codegen": {"rotary_dim": 4},  # (its 64 is past these heads of 8: transformers' forward fails)
    "dots1": {"n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1},
    "gemma4_text": {"global_head_dim": 8, "vocab_size_per_layer_input": 97},  # (its own table of 262144 rows)
}


@pytest.mark.parametrize("model_type", NEW)
def test_a_config_without_the_optional_keys_takes_transformers_defaults(tmp_path, model_type):
    """A config.json of the sizes alone: its rotary base, norms' eps, tied head, window and head size as the family's
    config class fills them (a wrong default would not show in the logits tests, whose files name every key)."""
    transformers = pytest.importorskip("transformers")

    keys = SMALL | {"model_type": model_type, "num_key_value_heads": _G.get(model_type, 2)}
    keys |= {} if model_type in ("youtu", "longcat_flash") else {"head_dim": 8}  # (theirs: the rotated part)
    keys |= _NO_DEFAULT.get(model_type, {})
    (tmp_path / "config.json").write_text(json.dumps(keys))
    ours = spec_from_config(tmp_path)
    theirs = transformers.AutoConfig.for_model(**keys)
    rope = getattr(theirs, "rope_parameters", None) or {"rope_theta": 10000.0}  # (CodeGen's base: in its code)
    full = rope.get("full_attention", rope) if isinstance(rope.get("full_attention"), dict) else rope
    assert ours.rope_theta == full["rope_theta"]
    eps = [e for key in ("rms_norm_eps", "layer_norm_eps", "norm_eps") if (e := getattr(theirs, key, None)) is not None]
    assert ours.norm_eps == (eps[0] if eps else 1e-5)  # (OLMo 1's config has none: its norms' is 1e-5)
    assert ours.tie_embeddings == theirs.tie_word_embeddings or not ours.head  # (an encoder's base model: no head)
    assert ours.m == (theirs.head_dim if model_type not in _G else theirs.qk_nope_head_dim + theirs.qk_rope_head_dim)
    kinds = getattr(theirs, "layer_types", None)
    if kinds is not None and "sliding_attention" in kinds and getattr(theirs, "use_sliding_window", True):
        assert ours.window == theirs.sliding_window + (ours.mask == "none")  # (unmasked: |s - t| < w)


@pytest.mark.parametrize("model_type", NEW)
def test_a_config_of_the_sizes_alone_counts_as_transformers_model_on_the_meta_device(tmp_path, model_type):
    """The sizes the config leaves to its class (experts, their size, shared and dense layers, heads) as transformers
    fills them: the count equals its model's, built on the meta device; and the router's scale and renormalisation
    are its class's (a wrong one would not show in a count)."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")

    keys = SMALL | {"model_type": model_type, "num_key_value_heads": _G.get(model_type, 2), "num_hidden_layers": 3}
    keys |= {"pad_token_id": 0} | _NO_DEFAULT.get(model_type, {})  # (some classes' pad token is past 97 tokens)
    (tmp_path / "config.json").write_text(json.dumps(keys))
    ours = spec_from_config(tmp_path)
    theirs = transformers.AutoConfig.for_model(**keys)
    with torch.device("meta"):
        model = getattr(transformers, RECORDS[model_type].hf_class)(theirs)
    from helpers_hf_transformers import parameters

    assert count_params(ours).total == parameters(model)
    if ours.E:
        scale = getattr(theirs, "routed_scaling_factor", getattr(theirs, "router_scaling_factor", 1.0))  # (HY-V3's)
        assert ours.router_scale == scale
        if hasattr(theirs, "norm_topk_prob"):
            assert ours.router_renorm == theirs.norm_topk_prob


@pytest.mark.parametrize("model_type", ["olmo3", "ministral", "cwm", "exaone4", "smollm3"])
def test_a_pattern_shorter_than_the_blocks_is_written_back_for_every_block(model_type):
    """Eight blocks of a repeating pattern: the spec keeps the shortest pattern, and its config.json names all eight
    layers' kinds again (config_keys.layer_types), so the file reads back as the same model."""
    from transformer_cli.families import RECORDS
    from transformer_cli.hf.config import spec_of_config

    kinds = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"] * 2
    keys = SMALL | {"model_type": model_type, "num_hidden_layers": 8, "num_key_value_heads": 2, "head_dim": 8}
    keys |= {"sliding_window": 5, "layer_types": kinds, "use_sliding_window": True}
    keys |= {"no_rope_layers": [1, 1, 1, 0] * 2} if model_type == "smollm3" else {}
    spec = spec_of_config(keys, "config.json")
    assert spec.attention_layers == ("sliding", "sliding", "sliding", "full")
    written = {"model_type": model_type} | RECORDS[model_type].config(spec)
    assert written["layer_types"] == kinds
    assert spec_of_config(written, "written").model_keys() == spec.model_keys()


@pytest.mark.parametrize("model_type", ["glm4_moe_lite", "exaone_moe", "hy_v3", "cohere2_moe"])
def test_a_feedforward_pattern_shorter_than_the_blocks_is_written_back_for_every_block(model_type):
    """Three blocks routed, dense, routed: the spec keeps the pattern (routed, dense), and the config.json written
    from it lists all three layers' kinds again (config_keys.feedforward_kinds), so it reads back as the same
    model (the kinds written as the pattern, two of them, were a file transformers cannot build)."""
    from transformer_cli.hf.config import spec_of_config

    keys = SMALL | {"model_type": model_type, "num_hidden_layers": 3, "num_key_value_heads": 4, "sliding_window": 4}
    keys |= {"mlp_layer_types": ["sparse", "dense", "sparse"], "num_experts": 4, "n_routed_experts": 4}
    keys |= {"num_experts_per_tok": 2, "moe_intermediate_size": 6}
    spec = spec_of_config(keys, "config.json")
    assert spec.feedforward_layers == ("routed", "dense")
    written = {"model_type": model_type} | RECORDS[model_type].config(spec)
    assert written["mlp_layer_types"] == ["sparse", "dense", "sparse"]
    assert spec_of_config(written, "written").model_keys() == spec.model_keys()


@pytest.mark.parametrize("model_type", ["deepseek_v2", "deepseek_v3"])
def test_a_latent_model_of_dense_layers_only_is_read_as_transformers_builds_it(model_type):
    """Three layers and the default first_k_dense_replace (V3's 3; V2's 0, here 3): every layer dense, no router. V3
    was refused ("no router_score without experts"), found by the sweep once its latent models kept a key per head."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    from transformer_cli.hf.config import spec_of_config

    keys = SMALL | {"num_hidden_layers": 3, "num_key_value_heads": 4, "q_lora_rank": 8, "kv_lora_rank": 10}
    keys |= {"qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6}
    keys |= {"first_k_dense_replace": 3} if model_type == "deepseek_v2" else {}
    spec = spec_of_config({"model_type": model_type} | keys, "config.json")
    assert spec.E is None and spec.router_score == "softmax"
    with torch.device("meta"):
        model = getattr(transformers, RECORDS[model_type].hf_class)(
            transformers.AutoConfig.for_model(model_type, **keys)
        )
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
