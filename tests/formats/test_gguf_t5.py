"""GGUF T5 files (T5 1.0's tied ReLU, T5 1.1's and mT5's untied gated GELU) written as convert_hf_to_gguf.py's
T5Model writes them: the encoder-decoder's logits equal transformers' on the same dequantised weights (float64,
T5LayerNorm's float32 mean square recomputed in float64) within 1e-10. A tied head is read unscaled, as llama.cpp
runs it (the reference says so: scale_decoder_outputs false)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from gguf_files import dequantised_model, write_gguf

from transformer_cli.gguf.model import GGUFWeights, spec_from_gguf
from transformer_cli.model.encoder_decoder import EncoderDecoder

pytest.importorskip("gguf", reason="the gguf package reads and writes the files (a dependency of tfm)")
torch = pytest.importorskip("torch", reason="the references run on PyTorch")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

SIZES = dict(  # (more decoder blocks than encoder ones the converter cannot map: its map has num_layers)
    vocab_size=97,
    d_model=32,
    d_kv=8,
    d_ff=64,
    num_layers=3,
    num_decoder_layers=2,
    num_heads=4,
    relative_attention_num_buckets=8,
    dropout_rate=0.0,
    decoder_start_token_id=0,
    attn_implementation="eager",
)
VARIANTS = {
    "t5-tied-relu": ("T5", dict(feed_forward_proj="relu")),
    "t5-1.1-untied-gated-gelu": ("T5", dict(feed_forward_proj="gated-gelu")),
    "mt5-untied": ("MT5", dict(tie_word_embeddings=False)),
    "umt5-untied": ("UMT5", dict(tie_word_embeddings=False)),  # (a table in every block)
}  # (as the published files say)


def _float64_norm(self, hidden):  # T5LayerNorm takes the mean square in float32; the same in float64
    return self.weight * (hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def build(name: str):
    kind, keys = VARIANTS[name]
    cfg = getattr(transformers, f"{kind}Config")(**SIZES, **keys)
    torch.manual_seed(0)
    model = getattr(transformers, f"{kind}ForConditionalGeneration")(cfg).double().eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.3 + (1.0 if "layer_norm" in n else 0.0))
        if name != "t5-tied-relu":  # a head of its own, as the published T5 1.1 and mT5 files hold
            model.lm_head.weight = torch.nn.Parameter(torch.randn(97, 32, dtype=torch.float64) * 0.3)
    model.config.scale_decoder_outputs = False
    return model


def logits(model, src, tgt) -> np.ndarray:
    for module in model.modules():
        if type(module).__name__.endswith("T5LayerNorm"):  # (MT5LayerNorm too)
            module.forward = _float64_norm.__get__(module)
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(src), decoder_input_ids=torch.from_numpy(tgt)).logits
    return out.numpy().transpose(0, 2, 1)


@pytest.mark.parametrize("qtype", ["F32", "F16", "Q8_0", "Q4_0"])
@pytest.mark.parametrize("name", VARIANTS)
def test_a_t5_gguf_computes_transformers_logits(tmp_path, name, qtype):
    model = build(name)
    path = write_gguf(model, tmp_path / "m.gguf", qtype)
    spec = spec_from_gguf(path)
    assert (spec.N, spec.N_enc, spec.feedforward, spec.tie_embeddings) == (
        2,
        3,
        "plain" if name == "t5-tied-relu" else "gated",
        name == "t5-tied-relu",
    )
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(0, 97, size=(2, 25)), rng.integers(0, 97, size=(2, 23))  # past the exact buckets
    reference = logits(dequantised_model(copy.deepcopy(model), qtype), src, tgt)
    ours = EncoderDecoder(spec, GGUFWeights(path, spec))(src, tgt)
    assert np.max(np.abs(ours - reference)) / np.max(np.abs(reference)) < 1e-10


@pytest.mark.parametrize("name", VARIANTS)
def test_a_t5_gguf_converts_to_a_folder_transformers_loads(tmp_path, runner, name):
    from transformer_cli.cli import app

    model = build(name)
    path = write_gguf(model, tmp_path / "m.gguf", "Q8_0")
    result = runner.invoke(app, ["convert", str(path), "-o", str(tmp_path / "hf")])
    assert result.exit_code == 0, result.output
    loaded = transformers.AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "hf", dtype=torch.float64).eval()
    rng = np.random.default_rng(1)
    src, tgt = rng.integers(0, 97, size=(2, 25)), rng.integers(0, 97, size=(2, 23))
    spec = spec_from_gguf(path)
    ours = EncoderDecoder(spec, GGUFWeights(path, spec))(src, tgt)
    theirs = logits(loaded, src, tgt)
    assert np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)) < 1e-10  # (every dequantised value a float32)


@pytest.mark.parametrize("name", VARIANTS)
def test_tfm_writes_a_t5_folder_as_the_converter_does(tmp_path, runner, name):
    import json

    from helpers_gguf_write import _tensors

    from transformer_cli.cli import app

    model = build(name)
    model.save_pretrained(tmp_path / "hf")
    if name != "t5-tied-relu":  # as the published files' config.json says (transformers 5 writes true, tying it)
        config = json.loads((tmp_path / "hf" / "config.json").read_text())
        (tmp_path / "hf" / "config.json").write_text(json.dumps(config | {"tie_word_embeddings": False}))
    result = runner.invoke(app, ["convert", str(tmp_path / "hf"), "-o", str(tmp_path / "tfm.gguf"), "--type", "q8_0"])
    assert result.exit_code == 0, result.output
    ours, theirs = _tensors(tmp_path / "tfm.gguf"), _tensors(write_gguf(model, tmp_path / "ref.gguf", "Q8_0"))
    assert ours == theirs
