"""The KV cache figure equals, byte for byte, what tfm's own decoder holds while the n-th token attends: for
grouped-query attention, a sliding window and an encoder-decoder's cross-attention (issue 14, item 1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from transformer_cli import Spec, init_weights
from transformer_cli.analysis.costs import costs
from transformer_cli.analysis.kv_cache import kv_cache_bytes
from transformer_cli.model import decoding
from transformer_cli.model.transformer import Transformer

SPECS = {
    "multi-head": Spec(N=2, H=4, m=4, d=16, r=8, mask="causal", norm="pre"),
    "grouped-query G=2": Spec(N=3, H=4, G=2, m=6, d=16, r=8, mask="causal", positional="rope", norm="pre"),
    "multi-query window 3": Spec(N=2, H=4, G=1, m=4, d=16, r=8, mask="causal", window=3, norm="pre"),
    "sliding and full layers": Spec(
        N=3,
        H=4,
        G=2,
        m=4,
        d=16,
        r=8,
        mask="causal",
        window=2,
        norm="pre",
        positional="rope",
        attention_layers=("sliding", "full"),
        E=3,
        k=2,
        feedforward_layers=("dense", "routed", "routed"),
    ),
    "sandwich": Spec(N=2, H=4, G=2, m=4, d=16, r=8, mask="causal", norm="sandwich", positional="rope"),
}


def _held_at_last_step(model: Transformer, X: np.ndarray, monkeypatch, **options) -> int:
    """Bytes of every key and value array the decoder's attention reads at the last step (self and cross)."""
    steps: list[int] = []
    real = type(model).attend

    def attend(self, Q, K, V, *args, **kwargs):  # type: ignore[no-untyped-def]
        steps.append(K.nbytes + V.nbytes)
        return real(self, Q, K, V, *args, **kwargs)

    monkeypatch.setattr(type(model), "attend", attend)
    decoding.decode(model, X, **options)
    monkeypatch.undo()
    per_step = len(steps) // X.shape[-1]
    return sum(steps[-per_step:])


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_cache_is_what_the_decoder_holds(monkeypatch, name, dtype):
    spec, b, n = SPECS[name], 2, 7
    model = Transformer(spec, init_weights(spec), dtype)
    X = np.random.default_rng(0).standard_normal((b, spec.d, n))
    assert _held_at_last_step(model, X, monkeypatch) == kv_cache_bytes(spec, b, n, dtype)


def test_a_window_caps_the_cache_and_a_longer_context_does_not_grow_it():
    spec = SPECS["multi-query window 3"]
    assert kv_cache_bytes(spec, 1, 100, "float16") == kv_cache_bytes(spec, 1, 3, "float16") == 2 * 2 * 1 * 4 * 3 * 2
    assert kv_cache_bytes(spec, 1, 2, "float16") < kv_cache_bytes(spec, 1, 3, "float16")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_an_encoder_decoders_cache_adds_the_sources_keys_and_values(monkeypatch, dtype):
    from transformer_cli.model.encoder_decoder import EncoderDecoder

    spec = Spec(N=2, N_enc=1, H=4, G=2, m=4, d=16, r=8, cross_H=3, cross_m=5, mask="causal", norm="pre")
    b, n, n_src = 2, 6, 9
    model = EncoderDecoder(spec, init_weights(spec), dtype)
    rng = np.random.default_rng(0)
    memory = model.encode(rng.standard_normal((b, spec.d, n_src)))
    held = _held_at_last_step(model.decoder, rng.standard_normal((b, spec.d, n)), monkeypatch, memory=memory)
    assert held == kv_cache_bytes(spec, b, n, dtype, n_src)


def test_the_json_gives_the_total_under_kv_cache_bytes_and_mistral_at_32k_is_half_a_gib():
    from transformer_cli import load_spec
    from transformer_cli.analysis.kv_cache import KV_BYTES

    # Mistral-7B's window of 4096 tokens: 2 x 32 blocks x 8 heads x 128 x 4096 tokens x 2 bytes
    mistral = load_spec(Path(__file__).parents[2] / "examples" / "models" / "Mistral-7B-v0.1.yaml")
    assert costs(mistral, 1, 32768, "float32").to_dict()["memory"]["kv_cache"]["bfloat16"] == 2**29
    assert costs(mistral, 1, 32768, "float32").to_dict()["kv_cache_bytes"] == 2**30  # float32, the command's dtype
    assert set(KV_BYTES) == {"float64", "float32", "float16", "bfloat16", "float8", "int8"} | {
        "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"  # (GGML's, as llama.cpp's -ctk)
    }  # fmt: skip
    q8_0 = kv_cache_bytes(mistral, 1, 32768, "q8_0")
    assert q8_0 == 2 * 32 * 8 * 4096 * (128 // 32) * 34  # blocks of 32 entries in 34 bytes, K and V
    int8 = kv_cache_bytes(mistral, 1, 32768, "int8")
    assert int8 == 2**28 + 2 * 32 * 8 * 4096 * 2  # one byte an element and a float16 scale per head and token


def test_check_holds_specs_to_a_kv_cache_budget_and_diff_shows_the_cache(runner):
    """Mistral's 4096-token window keeps its cache at 32k within 1 GiB; Llama-2-7B's full attention does not."""
    from transformer_cli.cli import app

    models = Path(__file__).parents[2] / "examples" / "models"
    mistral, llama = str(models / "Mistral-7B-v0.1.yaml"), str(models / "Llama-2-7b.yaml")
    result = runner.invoke(app, ["check", mistral, "--no-verify", "-n", "32768", "--max-kv-cache", "1G"])
    assert result.exit_code == 0, result.output
    import json

    args = ["check", mistral, llama, "--no-verify", "-n", "32768", "--max-kv-cache", "1G", "--json"]
    result = runner.invoke(app, args)
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and [s["over_budget"] for s in report["specs"]] == [
        [],
        ["KV cache at n = 32768 (bfloat16): 16 GiB > 1 GiB"],
    ]

    result = runner.invoke(app, ["diff", mistral, llama, "-n", "32768", "--json"])
    rows = {r["name"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["KV cache at n, bfloat16"]["a"] == 2**29 and rows["KV cache at n, bfloat16"]["b"] == 2**34


@pytest.mark.parametrize("name", SPECS)
@pytest.mark.parametrize("prompt", [1, 3, 7])
def test_a_prefilled_prompt_then_steps_give_the_parallel_pass(name, prompt):
    """The prompt through the parallel pass fills the cache (with a window: only its latest w columns, each in its
    ring slot); the steps after it read that cache and give what the parallel pass gives."""
    spec, b, n = SPECS[name], 2, 7
    model = Transformer(spec, init_weights(spec), "float64")
    X = np.random.default_rng(1).standard_normal((b, spec.d, n))
    parallel = model(X)
    decoded = decoding.decode(model, X, prompt=prompt)
    assert np.max(np.abs(decoded - parallel)) <= 1e-12 * np.max(np.abs(parallel))


def test_each_step_reads_views_of_one_cache_allocated_once(monkeypatch):
    spec = SPECS["grouped-query G=2"]
    model = Transformer(spec, init_weights(spec), "float64")
    bases: list[int] = []
    real = type(model).attend

    def attend(self, Q, K, V, *args, **kwargs):  # type: ignore[no-untyped-def]
        bases.append(id(K.base))
        return real(self, Q, K, V, *args, **kwargs)

    monkeypatch.setattr(type(model), "attend", attend)
    decoding.decode(model, np.random.default_rng(0).standard_normal((1, spec.d, 6)))
    assert len(set(bases)) == spec.N  # one cache array per block, every step


def test_an_encoder_decoders_prefill_reads_the_source_too():
    from transformer_cli.model.encoder_decoder import EncoderDecoder

    spec = Spec(
        N=2, N_enc=1, H=4, G=2, m=4, d=16, r=8, cross_H=3, cross_m=5, mask="causal", norm="pre", positional="relative"
    )
    model = EncoderDecoder(spec, init_weights(spec), "float64")
    rng = np.random.default_rng(2)
    source, target = rng.standard_normal((2, spec.d, 9)), rng.standard_normal((2, spec.d, 6))
    parallel = model(source, target)
    decoded = decoding.decode(model.decoder, target, memory=model.encode(source), prompt=4)
    assert np.max(np.abs(decoded - parallel)) <= 1e-12 * np.max(np.abs(parallel))


LATENT = Spec(
    N=2,
    H=4,
    m=12,
    d=16,
    r=8,
    mask="causal",
    norm="pre",
    norm_type="rmsnorm",
    positional="rope",
    attention="latent",
    kv_rank=6,
    q_rank=5,
    rope_m=4,
    v_m=5,
    rope_pairing="interleaved",
)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_latent_attention_caches_its_latent_and_rotary_key_only(dtype):
    """DeepSeek's cache: kv_rank + rope_m numbers per token and block, what tfm's decoder allocates and fills (its
    steps then expand the latents), against 2 H m for the same heads cached in full; decoding it reproduces the
    parallel pass."""
    b, n = 2, 7
    model = Transformer(LATENT, init_weights(LATENT), dtype)
    X = np.random.default_rng(0).standard_normal((b, LATENT.d, n))
    decoder = decoding.Decoder(model, b, n)
    held = sum(cache.K.nbytes + cache.V.nbytes for cache in decoder.caches)
    size = np.dtype(dtype).itemsize
    assert held == kv_cache_bytes(LATENT, b, n, dtype) == LATENT.N * b * n * (6 + 4) * size
    assert kv_cache_bytes(LATENT, b, n, dtype) < 2 * LATENT.N * b * n * LATENT.H * LATENT.m * size / 9
    parallel = model(X)
    assert np.max(np.abs(decoding.decode(model, X) - parallel)) < 1e-6 * np.max(np.abs(parallel))


def test_deepseek_v3s_cache_at_32k_is_its_latents():
    """The published DeepSeek-V3 at 32,768 tokens in bfloat16: 61 blocks x (512 + 64) x 2 bytes a token, 2.3 GB
    (caching every head's keys and values in full, 128 x (192 + 128) a token and block, would be 71 times that)."""
    import json

    from transformer_cli.hf.config import spec_of_config

    entry = next(
        e
        for e in json.loads((Path(__file__).parents[1] / "data/real-models-2.json").read_text())
        if e["name"] == "DeepSeek-V3"
    )
    spec = spec_of_config({"model_type": "deepseek_v3"} | entry["config"], "DeepSeek-V3")
    assert kv_cache_bytes(spec, 1, 32768, "bfloat16") == 61 * (512 + 64) * 2 * 32768 == 2_302_672_896


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # 18 full layers caching all 32,768 tokens, 18 sliding ones their 128; 8 key/value heads of 64; bf16
        ("gpt-oss-120b", 18 * 2 * 8 * 64 * 2 * 32768 + 18 * 2 * 8 * 64 * 2 * 128),  # 1,212,678,144
        # 23 full and 23 sliding (4,096) layers, 16 key/value heads of 128 (past Gemma 2's own 8,192: as asked)
        ("gemma-2-27b", 23 * 2 * 16 * 128 * 2 * 32768 + 23 * 2 * 16 * 128 * 2 * 4096),  # 6,945,767,424
    ],
)
def test_the_published_hybrid_stacks_cache_their_windows_per_layer(name, expected):
    """gpt-oss-120b and Gemma 2 27B at 32,768 tokens in bfloat16: each sliding layer keeps its window only."""
    import json

    from transformer_cli.hf.config import spec_of_config

    entry = next(
        e for e in json.loads((Path(__file__).parents[1] / "data/real-models-2.json").read_text()) if e["name"] == name
    )
    spec = spec_of_config({"model_type": entry["model_type"]} | entry["config"], name)
    assert kv_cache_bytes(spec, 1, 32768, "bfloat16") == expected
