"""Issue 44's encoder-decoders against transformers 5.24: M2M-100 (NLLB), Marian (opus-mt) and Pegasus, each saved
by save_pretrained with every parameter random, read by tfm from the folder alone; counts equal, logits to 1e-10
in float64 (transformers' float32 sinusoid tables recomputed in float64 here), greedy tokens equal to generate's."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hf_exact import exact

from transformer_cli import count_params
from transformer_cli.cli import app

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

SIZES = dict(vocab_size=97, d_model=32, encoder_layers=2, decoder_layers=3, encoder_attention_heads=4)
SIZES |= dict(decoder_attention_heads=4, encoder_ffn_dim=40, decoder_ffn_dim=40, max_position_embeddings=64)
T5_SIZES = dict(vocab_size=97, d_model=32, d_kv=8, d_ff=40, num_layers=2, num_decoder_layers=3, num_heads=4)
T5_SIZES |= dict(relative_attention_num_buckets=8, relative_attention_max_distance=20, dropout_rate=0.0)
QUIET = dict(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, attn_implementation="eager")
MODELS = {  # name: (config class, model class, keys)
    "m2m_100": ("M2M100Config", "M2M100ForConditionalGeneration", SIZES),
    "m2m_100-unscaled-gelu-pad-0": (
        "M2M100Config",
        "M2M100ForConditionalGeneration",
        SIZES  # (odd d: the table's last row zero)
        | dict(scale_embedding=False, activation_function="gelu", pad_token_id=0, d_model=33)
        | dict(encoder_attention_heads=3, decoder_attention_heads=3),
    ),
    "marian": ("MarianConfig", "MarianMTModel", SIZES | dict(pad_token_id=96, decoder_start_token_id=96)),
    "marian-scaled-swish-odd": (  # (odd d: its table's last column a sine)
        "MarianConfig",
        "MarianMTModel",
        SIZES
        | dict(scale_embedding=True, activation_function="swish", d_model=33, encoder_attention_heads=3)
        | dict(decoder_attention_heads=3, pad_token_id=96, decoder_start_token_id=96),
    ),
    # (a bias table in every self-attention; stacks of one depth: transformers 5.24's UMT5 cache fails to generate
    # with more decoder than encoder layers)
    "umt5": ("UMT5Config", "UMT5ForConditionalGeneration", T5_SIZES | dict(num_decoder_layers=2)),
    "umt5-untied-relu": (
        "UMT5Config",
        "UMT5ForConditionalGeneration",
        T5_SIZES | dict(num_layers=3, tie_word_embeddings=False, feed_forward_proj="relu"),
    ),
    "pegasus": ("PegasusConfig", "PegasusForConditionalGeneration", SIZES),
    "pegasus-scaled-relu": (
        "PegasusConfig",
        "PegasusForConditionalGeneration",
        SIZES | dict(scale_embedding=True, activation_function="relu", encoder_layers=1),
    ),
}


def _model(name: str, folder):
    config_class, model_class, keys = MODELS[name]
    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**keys, **QUIET))
    torch.manual_seed(0)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "embed_positions" not in n:  # (Marian's and Pegasus' tables: sinusoids, as built)
                p.copy_(torch.randn_like(p) * 0.3 + (1.0 if "norm" in n and n.endswith("weight") else 0.0))
    model = model.double().eval()
    model.save_pretrained(folder)
    return exact(model)


def _ids(rng, n: int, pad: int) -> np.ndarray:
    ids = rng.integers(0, 97, size=(2, n))
    return np.where(ids == pad, pad + 1, ids)  # (unpadded: tfm refuses the padding token)


@pytest.mark.parametrize("name", MODELS)
def test_the_folder_counts_and_runs_as_transformers_does(tmp_path, name):
    from transformer_cli.hf.config import spec_from_config
    from transformer_cli.model.encoder_decoder import EncoderDecoder
    from transformer_cli.tasks.sources import load_weights

    model = _model(name, tmp_path)
    spec = spec_from_config(tmp_path)
    assert count_params(spec).total == sum(p.numel() for p in model.parameters())
    rng, pad = np.random.default_rng(0), model.config.pad_token_id
    src, tgt = _ids(rng, 11, pad), _ids(rng, 9, pad)
    with torch.no_grad():
        theirs = model(input_ids=torch.from_numpy(src), decoder_input_ids=torch.from_numpy(tgt)).logits
    theirs = theirs.numpy().transpose(0, 2, 1)
    ours = EncoderDecoder(spec, load_weights(tmp_path, spec))(src, tgt)
    assert np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)) < 1e-10


@pytest.mark.parametrize("name", MODELS)
def test_greedy_tokens_are_transformers_generate(tmp_path, name, runner):
    model = _model(name, tmp_path / "hf")
    pad = model.config.pad_token_id
    prompt = _ids(np.random.default_rng(1), 7, pad)
    np.save(tmp_path / "src.npy", prompt)
    args = ["generate", str(tmp_path / "hf"), "-i", str(tmp_path / "src.npy"), "-k", "6", "--dtype", "float64"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    ours = np.array(json.loads(result.stdout)["tokens"])
    with torch.no_grad():
        reference = model.generate(
            torch.from_numpy(prompt),
            max_new_tokens=6,
            do_sample=False,
            num_beams=1,
            eos_token_id=None,
            forced_bos_token_id=None,
            forced_eos_token_id=None,
        ).numpy()
    assert np.array_equal(ours, reference[:, 1:]), (ours, reference)  # (theirs begins with the start token)
