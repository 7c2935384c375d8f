"""DeepSeek Sparse Attention's models (DeepSeek-V3.2, GLM-5) against transformers' own: the cache a decoder keeps
(the latents, rotary keys and the indexer's keys, at two lengths), verify-decoding on the folder with its controls,
each family's own steps, and config.json's keys. Their logits, bfloat16 runs and greedy tokens are in the tests over
every model (test_hf_transformers.py, test_generate.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from helpers_hf_transformers import IDS, TOL, build, cache_bytes, relative, theirs
from hf_exact import exact
from hf_models_mixers import INDEXED

from transformer_cli import Transformer
from transformer_cli.analysis.kv_cache import kv_cache_bytes
from transformer_cli.cli import app
from transformer_cli.hf.config import spec_from_config
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

CONTROLS = [  # (model, spec keys changed, the relative error they must at least make)
    ("deepseek_v32", {"index_topk": 13}, 1e-2),  # (every key: the selection matters)
    ("deepseek_v32", {"index_pairing": "interleaved"}, 1e-3),  # (its indexer turns half-split)
    ("deepseek_v32-yarn-wide-index-listed", {"index_topk": 13}, 1e-2),
    ("glm_moe_dsa", {"index_pairing": "half"}, 1e-3),  # (GLM-5's turns interleaved)
    ("glm_moe_dsa-shared", {"mixer_layers": None}, None),  # (layers 1 and 2 would need their own indexers)
    ("glm_moe_dsa-shared", {"mixer_layers": ("indexed", "latent", "latent", "indexed")}, 1e-2),
]


@pytest.mark.parametrize("name", INDEXED)
def test_the_cache_is_the_bytes_transformers_caches_hold(tmp_path, name):
    model = build(name)
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    for n in (5, 9):
        ids = torch.arange(2 * n).reshape(2, n) % spec.V
        with torch.no_grad():
            held = cache_bytes(model(ids, use_cache=True).past_key_values)
        assert kv_cache_bytes(spec, 2, n, "float64") == held
    latent = replace(spec, attention="latent", mixer_layers=None)  # (no indexer keys: a plan would miss them)
    assert kv_cache_bytes(latent, 2, 9, "float64") < held


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


@pytest.mark.parametrize("name", INDEXED)
def test_verify_decoding_holds_on_the_folder_and_its_controls_are_caught(tmp_path, name, runner):
    build(name).save_pretrained(tmp_path)
    result = runner.invoke(app, ["verify-decoding", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    summary = found["results"][0]["summary"] if "results" in found else found["summary"]
    assert summary["controls"] and all(err > 1000 * summary["tolerance"] for err in summary["controls"].values())


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
