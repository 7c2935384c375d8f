"""T5Gemma against transformers 5.24: tiny random T5GemmaForConditionalGeneration folders (saved by save_pretrained,
every parameter random) read by tfm from the folder alone. Counts equal; logits to 1e-10 in float64 (transformers'
float32 RMSNorms, rotary angles and softmax recomputed in float64: hf_exact.py); greedy tokens equal to generate's;
the caches' bytes equal to those transformers' cache objects hold after a prefill; and the pieces that make it
T5Gemma (the encoder's inclusive two-sided window, its own sizes, the cross-attention's sandwich) each a control
that must break the agreement."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hf_exact import exact

from transformer_cli import count_params
from transformer_cli.cli import app

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

STACK = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)
STACK |= dict(num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8, sliding_window=4)
WIDE = STACK | dict(hidden_size=48, intermediate_size=96, num_hidden_layers=3, num_attention_heads=6)
WIDE |= dict(num_key_value_heads=3, sliding_window=3)
NARROW = STACK | dict(vocab_size=80, hidden_size=24, num_attention_heads=2, num_key_value_heads=1, head_dim=12)
NARROW |= dict(query_pre_attn_scalar=16, intermediate_size=40, num_hidden_layers=1, sliding_window=2)
MIXED = STACK | dict(hidden_size=40, num_key_value_heads=4, head_dim=10, intermediate_size=72, num_hidden_layers=3)
MIXED |= dict(query_pre_attn_scalar=10, sliding_window=3, rope_parameters={"rope_type": "default", "rope_theta": 500.0})
MIXED |= dict(layer_types=["full_attention", "sliding_attention", "sliding_attention"])
NO_CAPS = dict(attn_logit_softcapping=None, final_logit_softcapping=None)
MODELS = {  # name: (encoder, decoder, top-level keys)
    "tied": (STACK, STACK, {}),
    "untied": (STACK, STACK, dict(tie_word_embeddings=False)),
    "wide-encoder": (WIDE, STACK, {}),  # (cross-attention's keys and values of 48 rows)
    "narrow-encoder-own-vocab-untied": (NARROW, MIXED, dict(tie_word_embeddings=False)),
    "no-softcaps-biases": (
        STACK | NO_CAPS | dict(attention_bias=True),
        STACK | NO_CAPS | dict(attention_bias=True),
        {},
    ),
    "all-full-encoder": (STACK | dict(layer_types=["full_attention"] * 2), STACK, {}),
}


def _model(name: str, folder):
    encoder, decoder, top = MODELS[name]
    config = transformers.T5GemmaConfig(encoder=dict(encoder), decoder=dict(decoder), **top)
    model = transformers.T5GemmaForConditionalGeneration(config)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    model = model.double().eval()
    model.save_pretrained(folder)
    return exact(model)


def _ids(rng, vocabulary: int, n: int) -> np.ndarray:
    return rng.integers(3, vocabulary, size=(2, n))  # (no padding 0, end 1 or start 2)


def _logits(model, src, tgt) -> np.ndarray:
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(src), decoder_input_ids=torch.from_numpy(tgt)).logits
    return out.numpy().transpose(0, 2, 1)


def _ours(spec, folder, src, tgt, run_as=None) -> np.ndarray:
    """tfm's logits of the folder's weights, run as its spec or as `run_as` (a control)."""
    from transformer_cli.model.encoder_decoder import EncoderDecoder
    from transformer_cli.tasks.sources import load_weights

    return EncoderDecoder(run_as or spec, load_weights(folder, spec))(src, tgt)


def _relative(ours, theirs) -> float:
    return float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))


@pytest.mark.parametrize("name", MODELS)
def test_the_folder_counts_and_runs_as_transformers_does(tmp_path, name):
    from transformer_cli.hf.config import spec_from_config

    model = _model(name, tmp_path)
    spec = spec_from_config(tmp_path)
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
    rng = np.random.default_rng(0)
    src, tgt = _ids(rng, spec.V_src, 11), _ids(rng, spec.V, 9)  # (longer than every window)
    assert _relative(_ours(spec, tmp_path, src, tgt), _logits(model, src, tgt)) < 1e-10


def _with_encoder(spec, **changes):
    return replace(spec, encoder=tuple((dict(spec.encoder or ()) | changes).items()))


def test_each_piece_of_t5gemma_is_needed(tmp_path):
    """Controls: each is a spec one piece away from the folder's, and each must miss transformers' logits."""
    from transformer_cli.hf.config import spec_from_config

    model = _model("wide-encoder", tmp_path)
    spec = spec_from_config(tmp_path)
    rng = np.random.default_rng(0)
    src, tgt = _ids(rng, spec.V_src, 11), _ids(rng, spec.V, 9)
    theirs = _logits(model, src, tgt)
    assert _relative(_ours(spec, tmp_path, src, tgt), theirs) < 1e-10
    one_sided = _with_encoder(spec, window=3)  # transformers' sliding_window itself: one key short on each side
    assert _relative(_ours(spec, tmp_path, src, tgt, one_sided), theirs) > 1e-3
    uncapped = replace(spec, attn_softcap=None)  # (the scores here reach past 50 only through the cap's input)
    assert _relative(_ours(spec, tmp_path, src, tgt, uncapped), theirs) > 1e-6
    base = _with_encoder(spec, rope_theta=500.0)  # the encoder's rotary its own
    assert _relative(_ours(spec, tmp_path, src, tgt, base), theirs) > 1e-3


def test_the_cross_attention_sandwich_norm_is_read(tmp_path):
    """post_cross_attn_layernorm is the cross-attention's output norm: a folder whose norm is changed gives
    other logits in both, and tfm follows transformers."""
    from transformer_cli.hf.config import spec_from_config

    model = _model("tied", tmp_path / "a")
    with torch.no_grad():
        model.model.decoder.layers[1].post_cross_attn_layernorm.weight.mul_(3.0)
    model.save_pretrained(tmp_path / "b")
    spec = spec_from_config(tmp_path / "b")
    rng = np.random.default_rng(0)
    src, tgt = _ids(rng, spec.V_src, 7), _ids(rng, spec.V, 5)
    ours_a, ours_b = _ours(spec, tmp_path / "a", src, tgt), _ours(spec, tmp_path / "b", src, tgt)
    assert _relative(ours_a, ours_b) > 1e-3
    assert _relative(ours_b, _logits(model, src, tgt)) < 1e-10


@pytest.mark.parametrize("name", ["tied", "wide-encoder", "narrow-encoder-own-vocab-untied"])
def test_greedy_tokens_are_transformers_generate(tmp_path, name, runner):
    """No decoder_start_token_id in a T5Gemma folder: generation starts from bos_token_id, as transformers does."""
    model = _model(name, tmp_path / "hf")
    assert model.generation_config.decoder_start_token_id is None
    prompt = _ids(np.random.default_rng(1), model.config.encoder.vocab_size, 7)
    np.save(tmp_path / "src.npy", prompt)
    args = ["generate", str(tmp_path / "hf"), "-i", str(tmp_path / "src.npy"), "-k", "8", "--dtype", "float64"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    ours = np.array(json.loads(result.stdout)["tokens"])
    with torch.no_grad():
        reference = model.generate(torch.from_numpy(prompt), max_new_tokens=8, do_sample=False, eos_token_id=None)
    assert reference[0, 0] == model.config.bos_token_id
    assert np.array_equal(ours, reference.numpy()[:, 1:]), (ours, reference)


@pytest.mark.parametrize("name", ["wide-encoder", "narrow-encoder-own-vocab-untied"])
def test_the_cache_is_the_bytes_transformers_caches_hold(tmp_path, name):
    """The decoder's keys and values (grouped, per layer kind) and the cross-attention's of the encoder's output,
    after a prefill: equal where the targets fit every window; past one, tfm counts a sliding layer's w keys a
    step attends over, the new one included, where transformers keeps w - 1 between steps."""
    from transformer_cli.analysis.kv_cache import kv_cache_bytes
    from transformer_cli.hf.config import spec_from_config
    from transformer_cli.spec.stacks import decoder

    model = _model(name, tmp_path)
    spec = spec_from_config(tmp_path)
    sliding = [g for g in decoder(spec).groups() if g.spec.window is not None][0]
    for n_src, n in ((5, 2), (11, 9)):
        rng = np.random.default_rng(n)
        src, tgt = _ids(rng, spec.V_src, n_src), _ids(rng, spec.V, n)
        with torch.no_grad():
            cache = model(input_ids=torch.from_numpy(src), decoder_input_ids=torch.from_numpy(tgt)).past_key_values
        held = sum(
            t.numel() * t.element_size()
            for stack in (cache.self_attention_cache, cache.cross_attention_cache)
            for layer in stack.layers
            for t in (layer.keys, layer.values)
        )
        one_more = 0 if n <= sliding.spec.window else 2 * 2 * sliding.spec.N * spec.kv_heads * spec.m * 8
        assert kv_cache_bytes(spec, 2, n, "float64", n_src) == held + one_more


def test_a_source_holding_the_padding_token_is_refused(tmp_path, runner):
    """transformers' encoder masks the padding it finds in the source; tfm runs unpadded sources and says so."""
    _model("tied", tmp_path / "hf")
    np.save(tmp_path / "src.npy", np.array([[5, 0, 7]]))
    result = runner.invoke(app, ["generate", str(tmp_path / "hf"), "-i", str(tmp_path / "src.npy"), "-k", "2"])
    assert result.exit_code != 0
    assert "token id 0 at index (0, 1) is the padding token (pad_id)" in result.output
    assert "Traceback" not in result.output


def test_verify_plan_and_attention_take_an_encoder_of_its_own_width(tmp_path, runner):
    model = _model("wide-encoder", tmp_path / "hf")
    planned = runner.invoke(app, ["plan", str(tmp_path / "hf"), "-n", "16", "--source-len", "12", "--json"])
    assert planned.exit_code == 0, planned.output
    assert json.loads(planned.stdout)["params"] == sum(p.numel() for p in model.parameters())
    np.save(tmp_path / "src.npy", np.arange(3, 9))
    np.save(tmp_path / "tgt.npy", np.arange(3, 7))
    for kind in ("encoder", "self", "cross"):  # (the cross maps: 4 targets of 6 sources, keys of 48 rows)
        args = ["attention", str(tmp_path / "hf"), "-i", str(tmp_path / "src.npy"), "-t", str(tmp_path / "tgt.npy")]
        maps = runner.invoke(app, [*args, "--kind", kind])
        assert maps.exit_code == 0, maps.output
    result = runner.invoke(app, ["verify", str(tmp_path / "hf"), "--json"])
    assert result.exit_code == 0, result.output
    checks = {c["check"]: c["observed"] for c in json.loads(result.stdout)["checks"]}
    assert checks["source reach"] == checks["memory order"] == checks["decoding"] == "holds"
    assert checks["source order"] == checks["encoder equivariance"] == "breaks"  # (the encoder's rotary positions)


def test_a_folder_converts_to_tfm_and_back_to_the_same_tensors(tmp_path, runner):
    from safetensors.numpy import load_file

    _model("narrow-encoder-own-vocab-untied", tmp_path / "hf")
    first = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "w.safetensors")])
    assert first.exit_code == 0, first.output
    back = runner.invoke(app, ["convert", str(tmp_path / "w.safetensors"), "-o", str(tmp_path / "again")])
    assert back.exit_code == 0, back.output
    before, after = (
        load_file(tmp_path / "hf" / "model.safetensors"),
        load_file(tmp_path / "again" / "model.safetensors"),
    )
    assert sorted(after) == sorted(before)
    assert all(np.array_equal(after[k], before[k]) for k in before)
