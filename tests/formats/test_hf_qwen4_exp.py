"""Qwen4-Exp's text model (issue 45) against transformers' own, beyond the tests over every model (logits,
bfloat16, greedy tokens, the cache, verify-decoding, its own steps, the folder there and back): its config.json
read as Qwen4ExpTextConfig reads it, what tfm refuses, and a prompt past its linear attention's chunk."""

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
        ({"ple_layer_ids": [1]}, "key 'ple_layer_ids': \\[1\\] is not supported: none"),
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
