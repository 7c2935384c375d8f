"""DeepSeek Sparse Attention's models (DeepSeek-V3.2, GLM-5) against transformers' own: config.json's keys, what
tfm refuses, a longer prompt. Their cache bytes, verify-decoding and own steps are test_hf_mixers.py's; their logits,
bfloat16 runs and greedy tokens the tests' over every model (test_hf_transformers.py, test_generate.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from helpers_hf_transformers import TOL, relative, theirs
from hf_exact import exact
from hf_models_mixers import INDEXED

from transformer_cli import Transformer
from transformer_cli.cli import app
from transformer_cli.hf.config import spec_from_config
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")


def _config(tmp_path, **changes):
    base = dict(INDEXED["glm_moe_dsa"][2]) | {"model_type": "glm_moe_dsa"} | changes
    (tmp_path / "config.json").write_text(json.dumps(base))
    return tmp_path


@pytest.mark.parametrize(
    ("changes", "kinds"),
    [
        ({}, None),  # every layer its own indexer (GlmMoeDsaConfig's default)
        ({"indexer_types": ["full", "shared", "full"]}, ("indexed", "indexed_shared", "indexed")),
        ({"index_topk_pattern": "FFS"}, ("indexed", "indexed", "indexed_shared")),
        ({"index_topk_freq": 2, "index_skip_topk_offset": 1}, ("indexed", "indexed_shared", "indexed")),
    ],
)
def test_glm5s_indexer_kinds_are_read_as_its_config_class_reads_them(tmp_path, changes, kinds):
    spec = spec_from_config(_config(tmp_path, **changes))
    held = spec.mixer_layers  # (as the shortest pattern repeated over the blocks)
    assert (held and [held[i % len(held)] for i in range(3)]) == (kinds and list(kinds))
    theirs_ = transformers.GlmMoeDsaConfig(**dict(INDEXED["glm_moe_dsa"][2]) | changes).indexer_types
    ours = ["shared" if k == "indexed_shared" else "full" for k in (kinds or ("indexed",) * 3)]
    assert theirs_ == ours


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"q_lora_rank": None}, "the lightning indexer reads the queries' low-rank part"),
        ({"indexer_types": ["shared", "full", "full"]}, 'the first "full"'),
        ({"indexer_types": ["full", "full"]}, '3 layers\' "full" or "shared"'),
        ({"num_key_value_heads": 2}, "latent attention gives every one of the 4 heads its own keys"),
    ],
)
def test_what_tfm_cannot_hold_is_refused_in_one_line(tmp_path, runner, changes, said):
    result = runner.invoke(app, ["count", str(_config(tmp_path, **changes))])
    assert result.exit_code != 0
    assert said in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_at_600_tokens_each_query_keeps_the_keys_transformers_keeps(tmp_path):
    """A longer prompt, 128 of up to 600 keys selected per query in two blocks: equal to transformers in float64
    (in float32 both round the index scores, and which of two near-equal keys wins the cut differs between them:
    benchmarks/mixers_prefill.py)."""
    config = dict(INDEXED["deepseek_v32"][2]) | dict(
        vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=8,
        num_key_value_heads=8, q_lora_rank=96, kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16,
        v_head_dim=32, index_n_heads=16, index_head_dim=64, index_topk=128, first_k_dense_replace=2,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.DeepseekV32ForCausalLM(transformers.DeepseekV32Config(**config)).double().eval()
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    ids = np.random.default_rng(0).integers(0, 1000, size=(1, 600))
    weights = load_weights(tmp_path, spec)
    ours = Transformer(spec, weights)(ids)
    assert relative(ours, theirs(exact(model), ids)) < TOL
    assert relative(Transformer(replace(spec, index_topk=600), weights)(ids), ours) > 1e-3  # (the selection matters)
