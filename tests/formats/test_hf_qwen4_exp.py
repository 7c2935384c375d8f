"""Qwen4-Exp's text model (issue 45) against transformers' own, beyond the tests over every model (logits,
bfloat16, greedy tokens, the cache, verify-decoding, its own steps, the folder there and back): its config.json
read as Qwen4ExpTextConfig reads it, what tfm refuses, a prompt past its linear attention's chunk, and its n-gram
inputs across end-of-sequence ids, in a pass and decoding, and at its config class's sizes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers_hf_transformers import TOL, build, relative, theirs
from hf_exact import exact
from hf_models_mixers import MIXERS

from transformer_cli import Transformer
from transformer_cli.errors import SpecError
from transformer_cli.hf.config import spec_from_config
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")


def _config(tmp_path, **changes):
    base = {k: v for k, v in MIXERS["qwen4_exp_text"][2].items() if k != "experts_implementation"}
    base |= {"model_type": "qwen4_exp_text"}
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in (base | changes).items() if v is not None}))
    return tmp_path


def test_its_config_is_read_as_qwen4exptextconfig_reads_it(tmp_path):
    """Without layer_types one layer in four attends (indexed_attention); without a partial_rotary_factor the whole
    head turns (Qwen3.5's is 0.25); the linear attention's gate is hidden_act's without output_gate_type."""
    folder = _config(tmp_path, num_hidden_layers=8, layer_types=None, rope_parameters=None, hidden_act="silu")
    spec = spec_from_config(folder)
    theirs_ = transformers.Qwen4ExpTextConfig(**json.loads((folder / "config.json").read_text()))
    kinds = [spec.mixer_layers[i % len(spec.mixer_layers)] for i in range(spec.N)]
    assert kinds == ["qsa" if k == "indexed_attention" else "deltanet" for k in theirs_.layer_types]
    assert kinds.count("qsa") == 2 and spec.rope_fraction == 1.0 and spec.linear_gate_fn == "silu"


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"ple_layer_ids": [2]}, "key 'ple_layer_ids': \\[2\\] is not supported: linear_attention layers"),
        ({"ple_layer_ids": [5]}, "key 'ple_layer_ids': got \\[5\\], expected layer numbers from 1 to 4"),
        ({"ple_layer_ids": [1], "ple_embed_dim": 15}, "key 'ngram_dim': got 15, expected a multiple of"),
        ({"ple_layer_ids": [1], "eos_token_id": None}, "key 'eos_token_id'"),
        ({"indexer_kv_heads": 2}, "key 'indexer_kv_heads': 2 is not supported: 1"),
        ({"output_gate_type": "tanh"}, 'key .output_gate_type.: got "tanh", expected silu or sigmoid'),
        ({"indexer_budget": 5}, "key 'index_pool': got 2, expected a divisor of index_topk = 5"),
    ],
)
def test_what_tfm_cannot_hold_is_refused_in_one_line(tmp_path, changes, said):
    with pytest.raises(SpecError, match=said) as raised:
        spec_from_config(_config(tmp_path, **changes))
    assert "\n" not in str(raised.value)


@pytest.mark.slow
def test_a_prompt_past_its_linear_attentions_chunk_is_transformers(tmp_path):
    """70 tokens: transformers' Gated DeltaNet runs two chunks of 64; 35 blocks of 2, 2 of them kept by each query."""
    model = build("qwen4_exp_text")
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    ids = np.random.default_rng(7).integers(0, 97, size=(1, 70))
    assert relative(Transformer(spec, load_weights(tmp_path, spec))(ids), theirs(exact(model), ids)) < TOL


def test_its_ngrams_restart_after_an_eos_in_a_pass_and_decoding(tmp_path):
    """Prompts with end-of-sequence ids inside (2, at 0, 5 and 6 in a row, and last): each n-gram's context stops
    after the last one before it, in the pass and decoded from prefills ending before, at and after one; control:
    the same ids with no eos (another id in their place) differ from the first one on."""
    from transformer_cli.model.decoding import decode

    model = exact(build("qwen4_exp_text-ngrams"))
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    ours = Transformer(spec, load_weights(tmp_path, spec))
    ids = np.random.default_rng(5).integers(3, 97, size=(2, 14))
    ids[0, [0, 5, 6, 13]] = 2
    ids[1, 9] = 2
    reference = theirs(model, ids)
    assert relative(ours(ids), reference) < TOL
    for prompt in (4, 5, 7, 10):
        assert relative(decode(ours, ids, prompt=prompt), reference) < TOL
    other = np.where(ids == 2, 3, ids)
    assert relative(ours(other)[:, :, 1:], reference[:, :, 1:]) > 1e-3


def test_its_ngram_tables_at_the_config_class_sizes_count_as_transformers(tmp_path):
    """Two n-gram blocks of Qwen4ExpTextConfig's default sizes (16 heads of tables of about 20 million rows each, the
    primes after 20,000,000): counted equal to transformers' model of that config on the meta device."""
    from helpers_hf_transformers import parameters

    from transformer_cli import count_params

    config = transformers.Qwen4ExpTextConfig(
        num_hidden_layers=4, ple_layer_ids=[1, 3], indexer_n_heads=4, indexer_kv_heads=1, indexer_head_dim=256,
        indexer_budget=64, indexer_compress_ratio=16, eos_token_id=2,
    )  # fmt: skip
    with torch.device("meta"):
        model = transformers.Qwen4ExpForCausalLM(config)
    (tmp_path / "config.json").write_text(config.to_json_string())
    assert count_params(spec_from_config(tmp_path)).total == parameters(model) > 2 * 16 * 20_000_000 * 128
