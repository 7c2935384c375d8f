"""Zamba2 (issue 45) against transformers' own, beyond the tests over every model (logits, bfloat16, greedy tokens,
the cache, verify-decoding, its own steps, the folder there and back: test_hf_transformers.py, test_generate.py,
test_hf_mixers.py, test_hf_convert_families.py): its config.json read as Zamba2Config reads it, what tfm refuses,
the shared blocks counted once and run by every use, and a YAML spec of the same blocks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers_hf_transformers import IDS, build
from hf_models_mixers import MIXERS

from transformer_cli import Transformer, count_params
from transformer_cli.errors import SpecError
from transformer_cli.hf.config import spec_from_config
from transformer_cli.spec.load import spec_from_mapping
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")


def _config(tmp_path, **changes):
    base = dict(MIXERS["zamba2"][2]) | {"model_type": "zamba2"}
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in (base | changes).items() if v is not None}))
    return tmp_path


def test_its_config_is_read_as_zamba2config_reads_it(tmp_path):
    """Without layers_block_type, Zamba2-2.7B's 54 layers, 9 of them hybrid; intermediate_size 4d by default; the
    legacy "mamba" kind is a Mamba-2 layer; the shared attention's heads are 2d / H wide."""
    spec = spec_from_config(_config(tmp_path, layers_block_type=None, num_hidden_layers=54, intermediate_size=None))
    theirs = transformers.Zamba2Config(**json.loads((tmp_path / "config.json").read_text()))
    kinds = spec.mixer_layers or ()
    hybrid = [i for i in range(spec.N) if kinds[i % len(kinds)] == "mamba2_memory"]
    assert hybrid == theirs.hybrid_layer_ids and len(hybrid) == 9
    assert (spec.r, spec.m) == (theirs.intermediate_size, theirs.attention_head_dim) == (64, 8)


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"tie_word_embeddings": False}, "key 'tie_word_embeddings': false is not supported"),
        ({"num_key_value_heads": 2}, "key 'num_key_value_heads': 2 is not supported: 4 with use_shared_attention"),
        ({"layers_block_type": ["mamba", "hybrid"]}, "key 'layers_block_type': got"),
    ],
)
def test_what_tfm_cannot_hold_is_refused_in_one_line(tmp_path, changes, said):
    with pytest.raises(SpecError, match=said) as raised:
        spec_from_config(_config(tmp_path, **changes))
    assert "\n" not in str(raised.value)


def test_the_shared_blocks_are_counted_once_and_each_use_runs_its_own(tmp_path):
    """transformers' parameters (its shared blocks once, every use's adapters) are tfm's count; the file holds each
    shared block once; changing block 1's weights changes the output, as changing use 3's adapter does, and the
    first use's adapter is not the third's (the control: every use reading use 0's adapter)."""
    model = build("zamba2")
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    assert count_params(spec).total == model.num_parameters() == sum(p.numel() for p in model.parameters())
    weights = dict(load_weights(tmp_path, spec).items())
    assert sorted(k for k in weights if k.startswith("memory.") and k.endswith("W_Q")) == [
        "memory.0.attention.W_Q",
        "memory.1.attention.W_Q",
    ]
    base = Transformer(spec, weights)(IDS)
    for name in ("memory.1.attention.W_V", "adapters.3.ff.W_up"):
        changed = weights | {name: weights[name] * 1.5}
        assert not np.allclose(Transformer(spec, changed)(IDS), base)
    same = weights | {
        f"adapters.{k}.{p}": weights[f"adapters.0.{p}"] for k in range(4) for p in ("ff.W_down", "ff.W_up")
    }
    assert not np.allclose(Transformer(spec, same)(IDS), base)


YAML = {"N": 3, "H": 2, "m": 8, "d": 8, "r": 12, "V": 30, "mask": "causal", "norm": "pre", "norm_type": "rmsnorm"}
YAML |= {"attention": "mamba2", "mixer_layers": ["mamba2", "mamba2_memory", "mamba2_memory"], "feedforward": "none"}
YAML |= {"ssm_heads": 2, "ssm_head_dim": 8, "ssm_state": 4, "mem_blocks": 1, "mem_rank": 2}


def test_a_yaml_spec_of_shared_blocks_counts_to_its_closed_form_and_decodes_as_it_runs(tmp_path, runner):
    from transformer_cli.cli import app

    spec = spec_from_mapping(YAML, "z.yaml")
    counted = count_params(spec)
    assert counted.total == counted.closed_total
    (tmp_path / "z.json").write_text(json.dumps(YAML))
    result = runner.invoke(app, ["verify-decoding", str(tmp_path / "z.json"), "--json"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"mem_blocks": None}, "key 'mem_blocks': missing, expected a positive integer with a mamba2_memory block"),
        ({"feedforward": "gated"}, "key 'feedforward': got 'gated', expected feedforward none and norm pre"),
        ({"mixer_layers": None}, "key 'mem_blocks': got 1, expected no mem_blocks without a mamba2_memory block"),
        ({"mem_qkv_adapters": True, "G": 1}, "key 'G': got 1, expected 2 (every head's"),
    ],
)
def test_shared_blocks_keys_that_do_not_fit_are_refused_in_one_line(changes, said):
    keys = {k: v for k, v in (YAML | changes).items() if v is not None}
    with pytest.raises(SpecError, match=said.replace("(", r"\(")):
        spec_from_mapping(keys, "z.yaml")
