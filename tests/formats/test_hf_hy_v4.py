"""HY-V4 (issue 45) against transformers' own, beyond the tests over every model (logits, bfloat16, greedy tokens,
the cache, verify-decoding and its own steps: test_hf_transformers.py, test_generate.py, test_hf_mixers.py): its
indexer's key norm, which changes the selection only (so the logits cannot pin its eps), and its config.json read as
HYV4Config reads it."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from helpers_hf_transformers import IDS, build
from hf_exact import exact
from hf_models_mixers import INDEXED

from transformer_cli.errors import SpecError
from transformer_cli.hf.config import spec_from_config
from transformer_cli.model.transformer import Transformer
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")


def test_the_indexers_keys_and_weights_are_transformers_with_its_eps(tmp_path):
    """HYV4Indexer's key, LayerNorm(W_K x) of eps rms_norm_eps (1e-5, where DeepSeek-V3.2's is 1e-6), its last r
    entries turned (compared on the others, which no rotation touches), and its heads' weights; the indexer's input
    caught from transformers' own pass."""
    model = exact(build("hy_v4"))
    model.save_pretrained(tmp_path)
    indexer, caught = model.model.layers[0].self_attn.indexer, {}
    indexer.register_forward_hook(lambda m, args, out: caught.update(x=args[0], low=args[1]))
    indexer.k_norm.register_forward_hook(lambda m, args, out: caught.update(key=out))
    with torch.no_grad():
        model(torch.from_numpy(IDS))
    spec = spec_from_config(tmp_path)
    ours = Transformer(spec, load_weights(tmp_path, spec))
    X, low = (caught[k].numpy().transpose(2, 0, 1).copy() for k in ("x", "low"))  # (d, b, n), (q, b, n)
    theirs = caught["key"].numpy().transpose(0, 2, 1)  # (b, D_I, n)
    kept = spec.index_m - spec.rotated_dims  # (the entries before the turned ones)

    def keys(spec) -> np.ndarray:
        attention = type(ours.layers[0][0])(spec)
        return attention.index(ours.rotations[0], ours.weights.block(0)[0], X, low, 0, 0)[1]

    assert spec.index_eps == 1e-5
    np.testing.assert_allclose(keys(spec)[:, :kept], theirs[:, :kept], rtol=1e-12, atol=1e-14)
    deepseeks = keys(replace(spec, index_eps=1e-6))[:, :kept]
    assert np.max(np.abs(deepseeks - theirs[:, :kept])) > 1e-9 * np.max(np.abs(theirs))


def _config(tmp_path, **changes):
    base = dict(INDEXED["hy_v4"][2]) | {"model_type": "hy_v4"}
    for key in ("attn_implementation", "experts_implementation"):
        base.pop(key)
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in (base | changes).items() if v is not None}))
    return tmp_path


def test_its_config_is_read_as_hyv4config_reads_it(tmp_path):
    """Without mlp_layer_types the first layer is dense, without indexer_types layers 0, 1, 5, 9, ... have their own
    indexers (GLM-5's pattern keys and first_k_dense_replace unread); num_key_value_heads is set to the heads."""
    folder = _config(tmp_path, num_hidden_layers=10, mlp_layer_types=None, indexer_types=None,
                     first_k_dense_replace=3, index_topk_freq=2, num_key_value_heads=2)  # fmt: skip
    spec = spec_from_config(folder)
    theirs = transformers.HYV4Config(**json.loads((folder / "config.json").read_text()))
    kinds = ["indexed" if k == "full" else "indexed_shared" for k in theirs.indexer_types]
    ours = spec.mixer_layers or ()  # (a list that repeats is held as its period)
    assert [ours[i % len(ours)] for i in range(spec.N)] == kinds and kinds.count("indexed") == 4
    routed = ["dense" if k == "dense" else "routed" for k in theirs.mlp_layer_types]
    assert [spec.feedforward_layers[i % len(spec.feedforward_layers)] for i in range(spec.N)] == routed
    assert spec.feedforward_layers[:2] == ("dense", "routed") and theirs.num_key_value_heads == spec.H


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"swiglu_limit": 0.0}, "key 'swiglu_limit': got 0.0, expected a positive number"),
        ({"indexer_types": ["shared"] * 6}, "key 'indexer_types'"),
        ({"indexer_types": ["full"] * 5}, 'expected 6 layers\' "full" or "shared"'),
        ({"hc_mult": 1}, "key 'hc_streams': got 1, expected at least 2 streams"),
    ],
)
def test_what_tfm_cannot_hold_is_refused_in_one_line(tmp_path, changes, said):
    with pytest.raises(SpecError, match=said) as raised:
        spec_from_config(_config(tmp_path, **changes))
    assert "\n" not in str(raised.value)
