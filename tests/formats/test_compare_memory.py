"""Issue 43, item 3: compare's memory. What compare keeps of A through both passes (its logits at the positions
scored, each block's outputs, the scoring's scratch) is counted against --max-memory before anything is read: a budget
that holds the models but not A's logits is refused naming them; one that holds all but the block outputs drops those
and says so, with the same figures; and `tfm compare --max-memory`'s peak RSS stays within its budget (a subprocess),
above what the two models' passes alone would have been allowed (so the kept bytes were real)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rss import tfm as measured

import transformer_cli as tfm
from transformer_cli.analysis.memory import MemoryLimitError
from transformer_cli.analysis.modes import mode_estimates, stored_form
from transformer_cli.tasks.comparison import KEPT, kept_bytes
from transformer_cli.tasks.perplexity import chunks
from transformer_cli.tasks.sources import load_weights

CONFIG = dict(
    model_type="llama",
    vocab_size=16000,
    hidden_size=256,
    intermediate_size=512,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    rms_norm_eps=1e-5,
)
CTX = 128


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A (bfloat16 folder) and B (its q8_0 GGUF file), and 6,000 token ids: 46 chunks of 128."""
    root = tmp_path_factory.mktemp("compare-memory")
    (root / "config.json").write_text(json.dumps(CONFIG))
    tfm.init(root / "config.json", root / "f32", seed=2)
    tfm.convert(root / "f32", root / "bf16", dtype="bfloat16")
    tfm.convert(root / "f32", root / "q8_0.gguf", gguf_type="q8_0")
    np.save(root / "ids.npy", np.random.default_rng(3).integers(0, CONFIG["vocab_size"], size=6000))
    return root


def _figures(root, ids: np.ndarray, ctx: int | None = CTX):
    """The larger of the two models' streamed estimates, and what compare keeps (logits, block outputs)."""
    models = [tfm.load(root / "bf16"), tfm.load(root / "q8_0.gguf")]
    length = ctx or ids.size
    streamed = max(
        mode_estimates(m.spec, 1, length, "float32", stored_form(load_weights(m.weights_path, m.spec)))[
            "streamed"
        ].total
        for m in models
    )
    return streamed, *kept_bytes(models[0].spec, models[1].spec, chunks(ids.size, ctx), "float32")


def test_a_budget_without_room_for_as_logits_is_refused_naming_them(pair):
    ids = np.load(pair / "ids.npy")
    streamed, logits, taps = _figures(pair, ids)
    assert logits > 100 * 2**20  # (2,898 positions x 16,000 in float32: what the budget below leaves no room for)
    budget = f"{(streamed + logits // 2) // 1024}K"
    with pytest.raises(MemoryLimitError, match=f"A's passes, .* needs about .*{KEPT}"):
        tfm.compare(pair / "bf16", pair / "q8_0.gguf", ids, ctx=CTX, dtype="float32", max_memory=budget)


def test_a_budget_without_room_for_the_block_outputs_drops_them_and_says_so(pair):
    ids = np.load(pair / "ids.npy")[:1024]
    streamed, logits, taps = _figures(pair, ids)
    compare = dict(ctx=CTX, dtype="float32")
    every = tfm.compare(pair / "bf16", pair / "q8_0.gguf", ids, **compare)
    budget = f"{(streamed + logits + taps // 2) // 1024}K"
    fewer = tfm.compare(pair / "bf16", pair / "q8_0.gguf", ids, max_memory=budget, **compare)
    assert every.blocks is not None and every.blocks_note is None
    assert fewer.blocks is None and fewer.first_divergent_block is None
    assert fewer.blocks_note is not None and fewer.blocks_note.startswith("blocks not compared: A's block outputs")
    assert fewer.figures == every.figures  # (the same passes; only the block outputs were not kept)


@pytest.mark.slow
def test_compare_keeps_its_peak_rss_within_max_memory_with_as_logits_kept(pair):
    ids = np.load(pair / "ids.npy")
    streamed, logits, taps = _figures(pair, ids)
    budget = f"{(streamed + logits + taps) // 2**20 + 2}M"
    args = ("compare", pair / "bf16", pair / "q8_0.gguf", "--ctx", CTX, "--dtype", "float32", "--json")
    done = measured(*args, "-i", pair / "ids.npy", "--max-memory", budget)
    assert done.code == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["blocks"] is not None and data["positions"] == 46 * (CTX - 1 - CTX // 2)
    np.save(pair / "few.npy", ids[:CTX])  # the same command over one chunk: the interpreter, NumPy, tfm's modules
    base = measured(*args, "-i", pair / "few.npy").peak
    beyond = done.peak - base
    assert beyond <= int(budget[:-1]) * 2**20, f"{beyond / 2**20:.1f} MiB beyond the start, over {budget}"
    assert beyond > streamed + logits // 2  # (A's logits were held: a budget of the passes alone is too small)
