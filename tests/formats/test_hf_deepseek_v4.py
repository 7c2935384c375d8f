"""DeepSeek-V4 (issue 45) against transformers' own, beyond the tests over every model (logits, bfloat16, greedy tokens,
the cache, verify-decoding and its own steps: test_hf_transformers.py, test_generate.py, test_hf_mixers.py): a prompt
of several windows in every layer kind, its config.json read as DeepseekV4Config reads it, what it refuses, and the
token ids its hashed layers need."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers_hf_transformers import TOL, build, relative, theirs
from hf_exact import exact
from hf_models_mixers import INDEXED

from transformer_cli.cli import app
from transformer_cli.errors import SpecError
from transformer_cli.hf.config import spec_from_config
from transformer_cli.model.decoding import decode
from transformer_cli.model.transformer import Transformer
from transformer_cli.spec.stacks import kind_of
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")


def test_a_long_prompt_is_transformers_and_decodes_to_the_same(tmp_path):
    """41 tokens: ten windows of the sliding layer, ten HCA entries, twenty CSA entries of which each query keeps two
    (index_topk 2), decoded from a prefill of 7 (a window and an entry pending) to the same logits."""
    model = exact(build("deepseek_v4"))
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    ids = np.random.default_rng(1).integers(0, 97, size=(2, 41))
    reference = theirs(model, ids)
    ours = Transformer(spec, load_weights(tmp_path, spec))
    assert relative(ours(ids), reference) < TOL
    assert relative(decode(ours, ids, prompt=7), reference) < TOL


def _config(tmp_path, **changes):
    base = dict(INDEXED["deepseek_v4"][2]) | {"model_type": "deepseek_v4"}
    for key in ("attn_implementation", "experts_implementation"):
        base.pop(key)
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in (base | changes).items() if v is not None}))
    return tmp_path


@pytest.mark.parametrize(
    "changes",
    [
        {"num_hidden_layers": 7, "layer_types": None, "mlp_layer_types": None},  # (HCA twice, then CSA and HCA)
        {
            "num_hidden_layers": 5,
            "layer_types": None,
            "compress_ratios": [0, 4, 128, 4, 0],
            "num_hash_layers": 1,
            "mlp_layer_types": None,
        },  # (the legacy keys)  # fmt: skip
    ],
)
def test_its_config_is_read_as_deepseekv4config_reads_it(tmp_path, changes):
    folder = _config(tmp_path, **changes)
    spec = spec_from_config(folder)
    theirs_ = transformers.DeepseekV4Config(**json.loads((folder / "config.json").read_text()))
    kinds = {"sliding_attention": "shared_kv", "heavily_compressed_attention": "compressed"}
    expected = [kinds.get(k, "compressed_sparse") for k in theirs_.layer_types]
    assert [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)] == expected
    hashed = ["hashed" if k == "hash_moe" else "routed" for k in theirs_.mlp_layer_types]
    assert [kind_of(spec.feedforward_layers, i, "routed") for i in range(spec.N)] == hashed
    rates = theirs_.compress_rates
    assert (spec.compress_rate, spec.compress_heavy_rate) == (
        rates["compressed_sparse_attention"],
        rates["heavily_compressed_attention"],
    )


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"mlp_bias": True}, "key 'mlp_bias': true is not supported"),
        ({"scoring_func": "softmax"}, "key 'scoring_func'"),
        ({"layer_types": ["full_attention"] * 4}, "key 'layer_types'"),
        ({"mlp_layer_types": ["dense"] * 4}, "key 'mlp_layer_types'"),
        ({"o_groups": 3}, "key 'o_groups': got 3, expected a divisor of H = 4"),
    ],
)
def test_what_tfm_cannot_hold_is_refused_in_one_line(tmp_path, changes, said):
    with pytest.raises(SpecError, match=said) as raised:
        spec_from_config(_config(tmp_path, **changes))
    assert "\n" not in str(raised.value)


def test_its_hashed_layers_read_the_ids_below_real_columns(tmp_path, runner):
    """Real columns carry the ids the hashed layers choose by in a last row (floor(x) mod V): token ids and their
    embedded columns with the ids below run alike, `tfm run` takes such columns, and the table is read (another
    table, other logits)."""
    model = build("deepseek_v4")
    model.save_pretrained(tmp_path / "hf")
    spec = spec_from_config(tmp_path / "hf")
    ours = Transformer(spec, load_weights(tmp_path / "hf", spec))
    ids = np.arange(26).reshape(2, 13) * 7 % 97
    columns = ours.W_E[:, ids].transpose(1, 0, 2)  # (b, d, n): the embedding's output
    below = np.concatenate([columns, ids[:, None, :] + 0.5], axis=1)  # (the ids' row: floor(x) mod V)
    assert spec.input_width == spec.d + 1
    np.testing.assert_allclose(ours(below), ours(ids), rtol=1e-13, atol=1e-13)
    assert relative(ours(np.concatenate([columns, below[:, -1:] + 1], axis=1)), ours(ids)) > 1e-3
    np.save(tmp_path / "x.npy", below[0])
    done = runner.invoke(app, ["run", str(tmp_path / "hf"), "--input", str(tmp_path / "x.npy")])
    assert done.exit_code == 0, done.output
    with torch.no_grad():
        table = model.model.layers[0].mlp.gate.tid2eid
        table.copy_(table.roll(1, dims=0))
    model.save_pretrained(tmp_path / "rolled")
    rolled = Transformer(spec, load_weights(tmp_path / "rolled", spec))
    assert relative(rolled(ids), theirs(exact(model), ids)) < TOL
    assert relative(ours(ids), rolled(ids)) > 1e-3
