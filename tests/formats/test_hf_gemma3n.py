"""Gemma 3n (gemma3n_text) against transformers 5.24 beyond hf_models_dense's variants: six tiny random models of its
pieces (activation sparsity in some layers, sharing layers, the active stream 1 of 3 without the correct scale,
untied with a cap of 5), each exact in float64 (its float32 steps redone in float64: hf_exact_gemma3n.py); the
cache's bytes as transformers' cache objects hold them after a prefill; the per-layer table's row 0 for ids past
it; and its config's keys read or refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hf_exact import exact

from transformer_cli import count_params
from transformer_cli.cli import app

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

KINDS = ["sliding_attention", "full_attention"]
BASE = dict(vocab_size=64, vocab_size_per_layer_input=48, hidden_size=48, hidden_size_per_layer_input=6)
BASE |= dict(intermediate_size=[64, 40, 64, 80], num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2)
BASE |= dict(head_dim=16, laurel_rank=5, altup_num_inputs=4, sliding_window=4, max_position_embeddings=64)
BASE |= dict(layer_types=KINDS * 2, num_kv_shared_layers=0, activation_sparsity_pattern=[0.0] * 4, rms_norm_eps=1e-6)
SIX = dict(num_hidden_layers=6, activation_sparsity_pattern=[0.0] * 6)
MODELS = {
    "dense": BASE,
    "sparse": BASE | dict(activation_sparsity_pattern=[0.95, 0.6, 0.0, 0.0]),
    "shared": BASE
    | SIX
    | dict(intermediate_size=[64, 40, 64, 80, 48, 56], layer_types=KINDS * 3, num_kv_shared_layers=2),
    "sparse-shared": BASE
    | SIX
    | dict(intermediate_size=64, num_kv_shared_layers=3, activation_sparsity_pattern=[0.95, 0.95, 0.8, 0.0, 0.0, 0.0])
    | dict(layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2),
    "active-1-of-3": BASE
    | dict(altup_active_idx=1, altup_num_inputs=3, altup_correct_scale=False)
    | dict(activation_sparsity_pattern=[0.9, 0.0, 0.0, 0.0]),
    "untied-cap-5": BASE | dict(tie_word_embeddings=False, final_logit_softcapping=5.0),
}
IDS = np.random.default_rng(1).integers(0, 64, size=(2, 11))  # (past the window of 4; ids past 48 read row 0)


def _model(name: str, folder):
    model = transformers.Gemma3nForCausalLM(transformers.Gemma3nTextConfig(**MODELS[name]))
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():  # (correct_output_scale random too: zeros as built, which hides the per-layer inputs)
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.2 + (0.1 if p.ndim == 1 else 0.0))
    model = model.double().eval()
    model.save_pretrained(folder)
    return model


def _ours(folder, ids=IDS):
    from transformer_cli.hf.config import spec_from_config
    from transformer_cli.model.transformer import Transformer
    from transformer_cli.tasks.sources import load_weights

    spec = spec_from_config(folder)
    return spec, Transformer(spec, load_weights(folder, spec)).forward(ids)


def _theirs(model, ids=IDS):
    with torch.no_grad():
        return model(torch.from_numpy(ids)).logits.numpy().transpose(0, 2, 1)


def _relative(a, b) -> float:
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("name", MODELS)
def test_each_piece_runs_as_transformers_does(tmp_path, name):
    model = exact(_model(name, tmp_path))
    spec, ours = _ours(tmp_path)
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
    assert _relative(ours, _theirs(model)) < 1e-10


def test_ids_past_the_per_layer_table_read_its_row_0(tmp_path):
    """vocab_size_per_layer_input 48 of 64: an id of 50 reads the per-layer table's row 0, as transformers."""
    model = exact(_model("dense", tmp_path))
    ids = np.array([[50, 3, 60, 0]])
    same = np.array([[50, 3, 60, 0]])
    _, ours = _ours(tmp_path, ids)
    assert _relative(ours, _theirs(model, same)) < 1e-10
    with torch.no_grad():  # (the row matters: changed, both change alike)
        model.model.embed_tokens_per_layer.weight[0] += 1.0
    model.save_pretrained(tmp_path / "changed")
    _, changed = _ours(tmp_path / "changed", ids)
    assert _relative(changed, ours) > 1e-3 and _relative(changed, _theirs(model, same)) < 1e-10


@pytest.mark.parametrize("name", ["shared", "sparse-shared"])
def test_the_cache_is_the_bytes_transformers_caches_hold(tmp_path, name):
    """Only the layers with keys and values of their own hold them (the sharing layers hold none): equal to
    transformers' cache after a prefill that fits the window; past it tfm counts the w keys a sliding layer's step
    attends over, the new one included, where transformers keeps w - 1 between steps."""
    from transformer_cli.analysis.kv_cache import kv_cache_bytes

    model = _model(name, tmp_path)
    spec, _ = _ours(tmp_path)
    kinds = MODELS[name]["layer_types"][: spec.N - spec.kv_shared]
    for n in (3, 9):
        ids = IDS[:, :n]
        with torch.no_grad():
            cache = model(torch.from_numpy(ids), use_cache=True).past_key_values
        held = sum(
            t.numel() * t.element_size()
            for layer in cache.layers
            for t in (getattr(layer, "keys", None), getattr(layer, "values", None))
            if isinstance(t, torch.Tensor)
        )
        sliding = kinds.count("sliding_attention") if n > 4 else 0
        assert kv_cache_bytes(spec, 2, n, "float64") == held + sliding * 2 * 2 * 2 * 16 * 8


def test_keys_transformers_ignores_are_said_and_bad_ones_refused(tmp_path, runner):
    config = {"model_type": "gemma3n_text"} | BASE | {"query_pre_attn_scalar": 16, "attn_logit_softcapping": 50.0}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = runner.invoke(app, ["count", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "key 'query_pre_attn_scalar': 16 is ignored" in result.stderr
    assert "key 'attn_logit_softcapping': 50.0 is ignored" in result.stderr
    for bad, said in (
        ({"activation_sparsity_pattern": 0.5}, "key 'activation_sparsity_pattern': got 0.5, expected a list of 4"),
        ({"num_kv_shared_layers": 4}, "key 'num_kv_shared_layers': got 4, expected below num_hidden_layers = 4"),
        ({"intermediate_size": [64, 40]}, "key 'intermediate_size': got [64, 40], expected a positive integer or"),
        ({"altup_active_idx": 4}, "key 'altup_active_idx': got 4, expected a stream below altup_num_inputs = 4"),
    ):
        (tmp_path / "config.json").write_text(json.dumps(config | bad))
        result = runner.invoke(app, ["count", str(tmp_path)])
        assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output, result.output
