"""Generation (`tfm generate`, model/generate.py) against transformers' generate: greedy tokens equal token for
token for every decoder family of tests/formats/hf_models.py (float64, transformers' float32 steps recomputed in
float64), and for T5 and BART; stop tokens end a sequence and pad it as transformers does; top-k and top-p keep the
tokens transformers' TopK/TopP warpers keep; sampling draws from the softmax it states."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers_hf_transformers import build
from hf_exact import exact
from hf_models import MODELS

from transformer_cli import Transformer
from transformer_cli.cli import app
from transformer_cli.hf.config import spec_from_config
from transformer_cli.model.generate import Sampling, choose, generate
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="the references run on PyTorch")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

CAUSAL = [name for name, (_, cls, _) in MODELS.items() if cls.endswith(("ForCausalLM", "LMHeadModel"))]
PROMPT = np.random.default_rng(3).integers(0, 97, size=(2, 7))
NEW = 6


def theirs(model, prompt, new, **options) -> np.ndarray:
    model.generation_config.eos_token_id = options.pop("eos_token_id", None)
    model.generation_config.pad_token_id = options.pop("pad_token_id", 0)
    with torch.no_grad():
        out = model.generate(torch.from_numpy(prompt), max_new_tokens=new, do_sample=False, **options)
    return out.numpy()


@pytest.mark.parametrize("name", CAUSAL)
def test_greedy_tokens_are_transformers_generate(tmp_path, name):
    model = build(name)
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    ours = generate(Transformer(spec, load_weights(tmp_path, spec)), PROMPT, NEW).sequences
    assert np.array_equal(ours, theirs(exact(model), PROMPT, NEW)), name


def test_a_stop_token_ends_a_sequence_and_pads_it_as_transformers_does(tmp_path):
    model = build("llama")
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    free = generate(Transformer(spec, load_weights(tmp_path, spec)), PROMPT, NEW).sequences
    stop = int(free[0, PROMPT.shape[1] + 1])  # the first sequence's second new token
    ours = generate(Transformer(spec, load_weights(tmp_path, spec)), PROMPT, NEW, stop=[stop], pad=5)
    reference = theirs(exact(model), PROMPT, NEW, eos_token_id=stop, pad_token_id=5)
    assert np.array_equal(ours.sequences, reference)
    assert ours.stopped[0] and ours.sequences[0, PROMPT.shape[1] + 2 :].tolist() == [5] * (ours.sequences.shape[1] - 9)
    assert not np.array_equal(ours.sequences, free)  # (the control: without the stop, the first sequence goes on)


@pytest.mark.parametrize("k,p", [(5, None), (None, 0.5), (7, 0.8), (1, None)])
def test_top_k_and_top_p_keep_what_transformers_warpers_keep(k, p):
    from transformers.generation.logits_process import TopKLogitsWarper, TopPLogitsWarper

    logits = np.random.default_rng(0).normal(size=(3, 50)) * 2
    kept = []
    scores = torch.from_numpy(logits.copy())
    if k is not None:
        scores = TopKLogitsWarper(top_k=k)(None, scores)
    if p is not None:
        scores = TopPLogitsWarper(top_p=p)(None, scores)
    theirs_kept = torch.isfinite(scores).numpy()
    rng = np.random.default_rng(1)
    for _ in range(400):  # every token drawn is one transformers keeps, and every kept one is drawn
        kept.append(choose(logits, Sampling(1.0, k, p), rng))
    drawn = np.zeros_like(theirs_kept)
    for row in kept:
        drawn[np.arange(3), row] = True
    assert np.array_equal(drawn, theirs_kept)


def test_sampling_draws_from_the_softmax_at_the_temperature():
    logits = np.array([[0.0, 1.0, 2.0, 3.0]])
    rng = np.random.default_rng(0)
    draws = np.array([choose(logits, Sampling(2.0), rng)[0] for _ in range(20000)])
    frequencies = np.bincount(draws, minlength=4) / draws.size
    expected = np.exp(logits[0] / 2) / np.exp(logits[0] / 2).sum()
    assert np.max(np.abs(frequencies - expected)) < 0.015  # 20,000 draws: 3 standard errors of the largest
    assert not np.allclose(frequencies, np.exp(logits[0]) / np.exp(logits[0]).sum(), atol=0.05)  # not at T = 1
    assert choose(logits, Sampling(), rng)[0] == 3  # greedy


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_an_encoder_decoder_generates_transformers_tokens(tmp_path, family, runner):
    if family == "t5":
        cfg = transformers.T5Config(
            vocab_size=97,
            d_model=32,
            d_kv=8,
            d_ff=40,
            num_layers=2,
            num_heads=4,
            decoder_start_token_id=0,
            dropout_rate=0.0,
        )
        model = transformers.T5ForConditionalGeneration(cfg)
    else:
        cfg = transformers.BartConfig(
            vocab_size=97,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=40,
            decoder_ffn_dim=40,
            max_position_embeddings=64,
            decoder_start_token_id=2,
            forced_bos_token_id=None,
            forced_eos_token_id=None,
        )
        model = transformers.BartForConditionalGeneration(cfg)
    torch.manual_seed(0)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.3 + (1.0 if "norm" in n else 0.0))
    model = model.double().eval()
    model.save_pretrained(tmp_path / "hf")
    np.save(tmp_path / "src.npy", PROMPT)
    result = runner.invoke(
        app,
        [
            "generate",
            str(tmp_path / "hf"),
            "--input",
            str(tmp_path / "src.npy"),
            "-k",
            str(NEW),
            "--dtype",
            "float64",
            "--json",
            "--stop",
            "96",
        ],
    )
    assert result.exit_code == 0, result.output
    ours = np.array(json.loads(result.stdout)["tokens"])
    for module in model.modules():
        if type(module).__name__ == "T5LayerNorm":
            module.forward = _float64_t5_norm.__get__(module)
    reference = theirs(model, PROMPT, NEW, eos_token_id=96)
    assert np.array_equal(ours, reference[:, 1:]), (ours, reference)  # (theirs begins with the start token)


def _float64_t5_norm(self, hidden):
    return self.weight * (hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def test_the_command_writes_the_sequences_and_says_what_is_wrong_in_one_line(tmp_path, runner):
    build("qwen2").save_pretrained(tmp_path / "hf")
    np.save(tmp_path / "ids.npy", PROMPT)
    result = runner.invoke(
        app,
        [
            "generate",
            str(tmp_path / "hf"),
            "-i",
            str(tmp_path / "ids.npy"),
            "-k",
            "4",
            "-o",
            str(tmp_path / "out.npy"),
            "--temperature",
            "0.7",
            "--top-p",
            "0.9",
            "--seed",
            "4",
        ],
    )
    assert result.exit_code == 0, result.output
    out = np.load(tmp_path / "out.npy")
    assert out.shape == (2, 11) and out.dtype == np.int64 and np.array_equal(out[:, :7], PROMPT)
    again = runner.invoke(
        app,
        [
            "generate",
            str(tmp_path / "hf"),
            "-i",
            str(tmp_path / "ids.npy"),
            "-k",
            "4",
            "-o",
            str(tmp_path / "out2.npy"),
            "--temperature",
            "0.7",
            "--top-p",
            "0.9",
            "--seed",
            "4",
        ],
    )
    assert again.exit_code == 0 and np.array_equal(np.load(tmp_path / "out2.npy"), out)  # (seeded: the same)
    np.save(tmp_path / "bad.npy", PROMPT + 200)
    bad = runner.invoke(app, ["generate", str(tmp_path / "hf"), "-i", str(tmp_path / "bad.npy")])
    assert bad.exit_code == 2 and "token ids must be in 0 .. 96" in bad.stderr and "Traceback" not in bad.output
    text = runner.invoke(app, ["generate", str(tmp_path / "hf"), "--prompt", "hello"])
    assert text.exit_code == 2 and "has no tokenizer.json" in text.stderr


def test_text_in_and_out_through_the_folders_tokenizer(tmp_path, runner):
    tokenizers = pytest.importorskip(
        "tokenizers", reason="the tokenizers library reads tokenizer.json (the text extra)"
    )

    build("llama").save_pretrained(tmp_path)
    vocab = {f"w{i}": i for i in range(97)}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="w0"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.decoder = tokenizers.decoders.WordPiece()  # (joins with spaces)
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    result = runner.invoke(
        app, ["generate", str(tmp_path), "--prompt", "w5 w17 w3", "-k", "4", "--json", "--dtype", "float64"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    spec = spec_from_config(tmp_path)
    expected = generate(Transformer(spec, load_weights(tmp_path, spec)), np.array([[5, 17, 3]]), 4).new_tokens
    assert data["tokens"] == expected.tolist()
    assert data["text"] == [" ".join(f"w{t}" for t in expected[0])]


def test_on_a_terminal_each_token_is_written_as_it_comes(tmp_path, runner, monkeypatch):
    """On a terminal, one prompt: each new token reaches the terminal (written and flushed) before the next step
    is computed; off a terminal (the control) nothing is written until the sequence is done."""
    import io

    from rich.console import Console

    import transformer_cli.cli.generate_command as command
    from transformer_cli.model.decoding import Decoder

    build("llama").save_pretrained(tmp_path / "hf")
    np.save(tmp_path / "ids.npy", PROMPT[:1])
    spec = spec_from_config(tmp_path / "hf")
    free = generate(Transformer(spec, load_weights(tmp_path / "hf", spec), np.dtype("float64")), PROMPT[:1], 5).tokens
    never = min(set(range(spec.V)) - set(free[0].tolist()))  # a stop token these 5 greedy tokens do not hold
    steps, seen = [0], []  # decoding steps so far; (steps, text) at each flush of the terminal

    class Terminal(io.StringIO):
        def flush(self) -> None:
            seen.append((steps[0], self.getvalue()))

    real_step = Decoder.step
    monkeypatch.setattr(
        Decoder, "step", lambda self, *a, **k: steps.__setitem__(0, steps[0] + 1) or real_step(self, *a, **k)
    )
    for terminal in (True, False):
        steps[0], seen[:] = 0, []
        screen = Terminal()
        monkeypatch.setattr(command, "out", Console(file=screen, force_terminal=terminal, width=200))
        result = runner.invoke(
            app,
            [
                "generate",
                str(tmp_path / "hf"),
                "-i",
                str(tmp_path / "ids.npy"),
                "-k",
                "5",
                "--stop",
                str(never),
                "--dtype",
                "float64",
            ],
        )
        assert result.exit_code == 0, result.output
        tokens = screen.getvalue().split()
        assert len(tokens) == 5
        written = [(step, text.split()) for step, text in seen if text.split()]
        if terminal:  # token j (from the prefill's logits, then after step j) flushed before step j + 1 starts
            assert [(step, len(words)) for step, words in written][:5] == [(j, j + 1) for j in range(5)]
        else:
            assert all(step == steps[0] for step, _ in written)  # only once every step had run
