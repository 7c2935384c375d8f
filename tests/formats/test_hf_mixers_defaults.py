"""Each new type's config class defaults (transformers sets them to its flagship's sizes: Qwen3-Next-80B-A3B's,
Jamba's 52B, Granite 4's, ...) counted by tfm from the config.json they make, equal to transformers' model of that
config built on the meta device (no memory): the counts at full scale, beside the tiny models' exact runs. The
sparse attention's cache at full scale: DeepSeek-V3.2's latents, rotary keys and indexer keys a token."""

from __future__ import annotations

import pytest

from transformer_cli import count_params
from transformer_cli.hf.config import spec_from_config

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

DEFAULTS = [  # (config class, model class, the keys its defaults leave unset)
    ("Lfm2Config", "Lfm2ForCausalLM", {}),
    ("Lfm2MoeConfig", "Lfm2MoeForCausalLM", {"layer_types": ["conv", "conv", "full_attention", "conv"] * 8}),
    ("Lfm3Config", "Lfm3ForCausalLM", {}),
    ("Mamba2Config", "Mamba2ForCausalLM", {}),
    ("MambaConfig", "MambaForCausalLM", {}),
    ("FalconMambaConfig", "FalconMambaForCausalLM", {}),
    ("BambaConfig", "BambaForCausalLM", {}),
    ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", {}),
    ("NemotronHConfig", "NemotronHForCausalLM", {}),
    ("JambaConfig", "JambaForCausalLM", {}),
    ("Qwen3NextConfig", "Qwen3NextForCausalLM", {}),
    ("Qwen3_5TextConfig", "Qwen3_5ForCausalLM", {}),
    ("Qwen3_5MoeTextConfig", "Qwen3_5MoeForCausalLM", {}),
    ("FalconH1Config", "FalconH1ForCausalLM", {}),
    ("KimiLinearConfig", "KimiLinearForCausalLM", {}),
    ("DeepseekV32Config", "DeepseekV32ForCausalLM", {}),
    ("GlmMoeDsaConfig", "GlmMoeDsaForCausalLM", {}),
    ("OlmoHybridConfig", "OlmoHybridForCausalLM", {}),
    ("GlmMoeDsaConfig", "GlmMoeDsaForCausalLM", {"index_topk_freq": 4}),  # (a full indexer every 4 layers)
    ("HYV4Config", "HYV4ForCausalLM", {}),
    ("Zamba2Config", "Zamba2ForCausalLM", {}),
    ("Glm5NextTextConfig", "Glm5NextTextModel", {}),
    ("MistralLarge4TextConfig", "MistralLarge4TextModel", {}),
    (
        "Qwen4ExpTextConfig",
        "Qwen4ExpForCausalLM",
        dict(  # (its indexer's five keys: none by default)
            indexer_n_heads=16, indexer_kv_heads=1, indexer_head_dim=256, indexer_budget=2048, indexer_compress_ratio=16
        ),
    ),
    ("Zamba2Config", "Zamba2ForCausalLM", {"num_mem_blocks": 2, "use_shared_attention_adapter": True}),
    ("DeepseekV4Config", "DeepseekV4ForCausalLM", {}),
]


@pytest.mark.parametrize(
    ("config_class", "model_class", "unset"), DEFAULTS, ids=lambda x: x if isinstance(x, str) else ""
)
def test_the_default_configs_count_as_transformers_models_of_them(tmp_path, config_class, model_class, unset):
    from helpers_hf_transformers import parameters

    config = getattr(transformers, config_class)(**unset)
    with torch.device("meta"):
        model = getattr(transformers, model_class)(config)
    (tmp_path / "config.json").write_text(config.to_json_string())
    assert count_params(spec_from_config(tmp_path)).total == parameters(model)


def test_qwen3_nexts_cache_is_its_attention_layers_tokens_and_its_linear_layers_states(tmp_path):
    """The docs' figure (docs/plan.md): Qwen3-Next-80B-A3B at 32,768 tokens in bfloat16, its 12 attention layers'
    keys and values beside its 36 linear layers' convolution windows (bfloat16) and states (float32)."""
    from dataclasses import replace

    from transformer_cli.analysis.kv_cache import kv_cache_bytes, state_bytes

    (tmp_path / "config.json").write_text(transformers.Qwen3NextConfig().to_json_string())
    spec = spec_from_config(tmp_path)
    attention = 12 * 2 * 2 * 256 * 32768 * 2  # layers x (K, V) x G x head_dim x tokens x bytes
    states = 36 * ((2 * 16 * 128 + 32 * 128) * 4 * 2 + 32 * 128 * 128 * 4)  # the convolution's 4 columns, S
    assert state_bytes(spec, 1, "bfloat16") == states == 77_856_768
    assert kv_cache_bytes(spec, 1, 32768, "bfloat16") == attention + states == 883_163_136
    every = replace(spec, mixer_layers=None, attention="standard")  # (the figure of a stack attending throughout)
    assert kv_cache_bytes(every, 1, 32768, "bfloat16") == 48 * 2 * 2 * 256 * 32768 * 2


def test_deepseek_v32s_cache_is_its_latents_rotary_keys_and_indexer_keys(tmp_path):
    """The docs' figure (docs/plan.md): DeepSeek-V3.2 at 131,072 tokens in bfloat16, each of its 61 layers caching a
    latent of 512, a rotary key part of 64 and an indexer key of 128 a token, where the stack attending to every key
    would cache the same less the indexer's keys."""
    from dataclasses import replace

    from transformer_cli.analysis.kv_cache import kv_cache_bytes

    (tmp_path / "config.json").write_text(transformers.DeepseekV32Config().to_json_string())
    spec = spec_from_config(tmp_path)
    assert kv_cache_bytes(spec, 1, 131072, "bfloat16") == 61 * (512 + 64 + 128) * 131072 * 2 == 11_257_511_936
    latent = replace(spec, attention="latent")
    assert kv_cache_bytes(latent, 1, 131072, "bfloat16") == 61 * (512 + 64) * 131072 * 2
