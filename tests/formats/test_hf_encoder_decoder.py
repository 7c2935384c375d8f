"""families/t5.py and families/bart.py: T5 and BART configs counted against the models
transformers 5.24 builds from them, and their checkpoints read both ways: tfm's own folders back exactly, and
folders saved by transformers itself (the published counts and presets are in test_hf_config.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import random_weights
from helpers_hf_config import _write, assert_refused_in_one_line
from typer.testing import CliRunner

from transformer_cli import ArrayError, count_params
from transformer_cli.cli import app
from transformer_cli.components.tensors import all_tensors
from transformer_cli.hf.config import read_config, spec_from_config
from transformer_cli.hf.weights import checkpoint_weights
from transformer_cli.tasks.conversions import write_folder

T5 = {"model_type": "t5", "vocab_size": 97, "d_model": 32, "d_kv": 6, "d_ff": 40, "num_layers": 2, "num_heads": 4}
BART = {
    "model_type": "bart",
    "vocab_size": 97,
    "d_model": 32,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 40,
    "decoder_ffn_dim": 40,
    "max_position_embeddings": 24,
}

# id: (the config's keys, "4.x" = written as JSON by hand, "5.x" = written by the config class's save_pretrained)
VARIANTS = {
    "t5-relu-tied": (T5, "4.x"),
    "t5-gated-gelu-untied": (T5 | dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False), "4.x"),
    "t5-3-enc-1-dec-buckets": (
        T5
        | dict(
            num_layers=3, num_decoder_layers=1, relative_attention_num_buckets=8, relative_attention_max_distance=20
        ),
        "4.x",
    ),
    "t5-gated-silu-5.x": (T5 | dict(feed_forward_proj="gated-silu", num_decoder_layers=3), "5.x"),
    "t5-untied-5.x": (T5 | dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False), "5.x"),
    "t5-aliases": (
        {
            "model_type": "t5",
            "vocab_size": 97,
            "hidden_size": 32,
            "head_dim": 6,
            "d_ff": 40,
            "num_hidden_layers": 2,
            "num_decoder_layers": 2,
            "num_attention_heads": 4,
        },
        "4.x",
    ),
    "bart": (BART, "4.x"),
    "bart-3-enc-1-dec-scaled-relu": (
        BART | dict(encoder_layers=3, decoder_layers=1, scale_embedding=True, activation_function="relu"),
        "4.x",
    ),
    "bart-5.x": (BART | dict(scale_embedding=True, decoder_layers=3), "5.x"),
    "mbart": (BART | dict(model_type="mbart", scale_embedding=True), "4.x"),
    "mbart-5.x": (BART | dict(model_type="mbart", decoder_layers=3), "5.x"),
}


def _library():
    torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
    transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")
    return torch, transformers


def _save(folder: Path, keys: dict, style: str) -> Path:
    if style == "5.x":
        _, transformers = _library()
        model_type, rest = keys["model_type"], {k: v for k, v in keys.items() if k != "model_type"}
        transformers.AutoConfig.for_model(model_type, **rest).save_pretrained(folder)
        return folder
    return _write(folder, keys)


def _build(folder: Path, device: str = "meta"):
    """The ...ForConditionalGeneration transformers builds from the folder's config.json."""
    torch, transformers = _library()
    config = transformers.AutoConfig.from_pretrained(folder)
    with torch.device(device):
        return transformers.AutoModelForSeq2SeqLM.from_config(config)


def _untied_t5(folder: Path, out: Path):
    """An untied T5 as transformers has it: 5.x builds every T5 tied (T5Config sets tie_word_embeddings), and
    from_pretrained unties lm_head when the file holds one that differs, as the untied releases' files do."""
    torch, transformers = _library()
    from safetensors.torch import load_file, save_file

    _build(folder, "cpu").save_pretrained(out)
    tensors = load_file(out / "model.safetensors")
    tensors["lm_head.weight"] = torch.randn_like(tensors["shared.weight"])
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(out)
    assert model.lm_head.weight is not model.shared.weight
    return model


def _their_count(folder: Path, tmp_path: Path) -> int:
    model = _build(folder)
    if model.config.model_type == "t5" and not model.config.scale_decoder_outputs:  # published untied
        model = _untied_t5(folder, tmp_path / "untied")
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("variant", VARIANTS)
def test_counts_equal_the_model_transformers_builds(variant, tmp_path):
    keys, style = VARIANTS[variant]
    folder = _save(tmp_path / variant, keys, style)
    spec = spec_from_config(folder)
    assert count_params(spec).total == _their_count(folder, tmp_path)
    config = _build(folder).config
    if config.model_type == "t5":  # the settings a count cannot see
        assert (spec.rel_buckets, spec.rel_max_distance) == (
            config.relative_attention_num_buckets,
            config.relative_attention_max_distance,
        )
        assert spec.head_scale == ("sqrt" if config.scale_decoder_outputs else "none")
        assert (spec.feedforward == "gated") == config.is_gated_act
    else:
        assert spec.embed_scale == ("sqrt" if config.scale_embedding else "none")


def test_the_variants_reach_the_settings_they_name(tmp_path):
    specs = {v: spec_from_config(_save(tmp_path / v, *VARIANTS[v])) for v in VARIANTS}
    assert specs["t5-relu-tied"].tie_embeddings and specs["t5-relu-tied"].head_scale == "sqrt"
    untied = specs["t5-gated-gelu-untied"]
    assert not untied.tie_embeddings and untied.head_scale == "none" and untied.activation == "gelu"
    assert specs["t5-untied-5.x"].model_keys() == untied.model_keys()  # 5.x writes tie: true, scale: false
    assert (specs["t5-3-enc-1-dec-buckets"].N_enc, specs["t5-3-enc-1-dec-buckets"].N) == (3, 1)
    assert specs["t5-gated-silu-5.x"].activation == "silu" and specs["t5-gated-silu-5.x"].N == 3
    assert specs["t5-aliases"].model_keys() == specs["t5-relu-tied"].model_keys()
    scaled = specs["bart-3-enc-1-dec-scaled-relu"]
    assert scaled.embed_scale == "sqrt" and scaled.activation == "relu" and (scaled.N_enc, scaled.N) == (3, 1)


@pytest.mark.parametrize(
    ("keys", "flip"),
    [
        (T5 | {"tie_word_embeddings": False}, {"tie_embeddings": True}),  # untied: lm_head of its own
        (T5 | {"num_layers": 3}, {"N": 3, "N_enc": 2}),  # num_decoder_layers null: num_layers for both
        (T5 | {"feed_forward_proj": "gated-relu"}, {"feedforward": "plain"}),
        (BART, {"position_offset": None}),  # the position table has P + 2 rows
    ],
    ids=["t5-untied", "t5-decoder-layers", "t5-gated", "bart-offset"],
)
def test_a_wrong_reading_would_change_the_count(keys, flip, tmp_path):
    """The control: the same check fails when one setting the file implies is read the other way."""
    folder = _write(tmp_path / "model", keys)
    spec, total = spec_from_config(folder), _their_count(folder, tmp_path)
    assert count_params(spec).total == total
    assert count_params(replace(spec, **flip)).total != total


BAD = {
    "bart-heads-differ": (
        BART | {"decoder_attention_heads": 8},
        "key 'decoder_attention_heads': 8 is not supported:"
        " encoder_attention_heads is 4; tfm's encoder and decoder have the same number of heads H",
    ),
    "bart-ffn-differ": (BART | {"encoder_ffn_dim": 48}, "key 'decoder_ffn_dim': 40 is not supported"),
    "bart-untied": (BART | {"tie_word_embeddings": False}, "key 'tie_word_embeddings': false is not supported"),
    "bart-heads-do-not-divide": (
        BART | {"encoder_attention_heads": 5, "decoder_attention_heads": 5},
        "key 'decoder_attention_heads': got 5, expected a divisor of d_model = 32",
    ),
    "t5-proj-form": (T5 | {"feed_forward_proj": "a-b-c"}, "key 'feed_forward_proj': got \"a-b-c\", expected 'ACT'"),
    "t5-activation": (
        T5 | {"feed_forward_proj": "gated-quick_gelu"},
        "key 'feed_forward_proj': \"gated-quick_gelu\" is not supported: tfm implements the activations",
    ),
    "t5-distance": (T5 | {"relative_attention_max_distance": 16}, "key 'relative_attention_max_distance': got 16,"),
    "t5-alias-layers": (
        {k: v for k, v in T5.items() if k != "num_layers"} | {"num_hidden_layers": 2},
        "key 'num_hidden_layers': 2 is not supported: transformers 5.24 gives the decoder",
    ),
    "t5-no-d_kv": ({k: v for k, v in T5.items() if k != "d_kv"}, "key 'd_kv': missing, expected a positive integer"),
}


@pytest.mark.parametrize("case", BAD)
def test_what_tfm_cannot_hold_is_one_line_naming_the_key(case, tmp_path):
    assert_refused_in_one_line(tmp_path, *BAD[case])


# ---- checkpoints


@pytest.mark.parametrize(
    "keys",
    [
        T5 | {"num_layers": 3, "num_decoder_layers": 2},
        T5 | {"feed_forward_proj": "gated-gelu", "tie_word_embeddings": False},
        BART | {"encoder_layers": 3},
        BART | {"model_type": "mbart"},
    ],
    ids=["t5", "t5-gated-untied", "bart", "mbart"],
)
def test_tfm_writes_both_stacks_and_reads_them_back_exactly(keys, tmp_path):
    spec = spec_from_config(_write(tmp_path / "config", keys))
    weights = random_weights(spec)
    write_folder(tmp_path / "model", spec, keys, weights, np.float64)
    read = checkpoint_weights(tmp_path / "model", spec, keys)
    assert sorted(read) == sorted(weights) and any(name.startswith("encoder.1.") for name in read)
    for name, array in weights.items():
        assert np.array_equal(read[name], array), name


def _saved(tmp_path: Path, keys: dict) -> tuple[Path, object]:
    """A small random model saved by transformers itself (every parameter drawn, so none is zero by chance)."""
    torch, _ = _library()
    model = _build(_write(tmp_path / "config", keys), "cpu").double()
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p))
    model.save_pretrained(tmp_path / "model")
    return tmp_path / "model", model


def _tensor(model, name: str) -> np.ndarray:
    return model.state_dict()[name].numpy()


T5_FILES = {  # tfm's name: the tensor transformers saves it as
    "encoder.0.attention.W_Q": "encoder.block.0.layer.0.SelfAttention.q.weight",
    "blocks.1.cross.W_O": "decoder.block.1.layer.1.EncDecAttention.o.weight",
    "encoder_positional.rel_bias": "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
    "positional.rel_bias": "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
    "blocks.0.ff.W3": "decoder.block.0.layer.2.DenseReluDense.wi_1.weight",
    "blocks.0.cross_norm.gamma": "decoder.block.0.layer.1.layer_norm.weight",
    "embedding.E": "shared.weight",
}
BART_FILES = {
    "encoder.0.attention.W_Q": "model.encoder.layers.0.self_attn.q_proj.weight",
    "blocks.1.cross.b_K": "model.decoder.layers.1.encoder_attn.k_proj.bias",
    "encoder_positional.P": "model.encoder.embed_positions.weight",
    "embedding.norm.beta": "model.decoder.layernorm_embedding.bias",
    "blocks.0.norm2.gamma": "model.decoder.layers.0.final_layer_norm.weight",
    "embedding.E": "model.shared.weight",
}


MBART_FILES = BART_FILES | {
    "encoder_final_norm.gamma": "model.encoder.layer_norm.weight",
    "final_norm.beta": "model.decoder.layer_norm.bias",
}  # mBART's pre-norm stacks' last norms


@pytest.mark.parametrize(
    ("keys", "files"),
    [
        (T5 | {"feed_forward_proj": "gated-gelu"}, T5_FILES),
        (BART, BART_FILES),
        (BART | {"model_type": "mbart"}, MBART_FILES),
    ],
    ids=["t5", "bart", "mbart"],
)
def test_a_folder_saved_by_transformers_is_read_tensor_by_tensor(keys, files, tmp_path):
    folder, model = _saved(tmp_path, keys)
    spec = spec_from_config(folder)
    weights = checkpoint_weights(folder, spec, read_config(folder / "config.json"))
    shapes = {t: np.shape(weights[t]) for t in weights}
    from transformer_cli import all_tensors

    assert shapes == {t.name: t.shape for t in all_tensors(spec)}  # every tensor found, in its shape
    H, m, d = spec.H, spec.m, spec.d
    q = _tensor(model, files["encoder.0.attention.W_Q"])
    assert np.array_equal(weights["encoder.0.attention.W_Q"], q.reshape(H, m, d))  # head h: rows h*m .. h*m + m
    assert not np.array_equal(weights["encoder.0.attention.W_Q"], q.reshape(m, H, d).transpose(1, 0, 2))
    for ours, theirs in files.items():
        stored = _tensor(model, theirs)
        if ours.endswith(".W_O"):
            stored = stored.reshape(d, H, m).transpose(1, 0, 2)
        elif ours.endswith((".E", ".P")):
            stored = stored.T
        assert np.array_equal(weights[ours], stored.reshape(np.shape(weights[ours]))), ours


def test_t5_files_with_their_per_stack_embeddings_and_old_tables_are_read(tmp_path):
    """Older T5 files hold encoder/decoder.embed_tokens beside shared, a tied lm_head, and an unused table in the
    decoder's first cross-attention: accepted and not read. A misshapen copy is still refused."""
    folder, model = _saved(tmp_path, T5)
    spec, config = spec_from_config(folder), read_config(folder / "config.json")
    from safetensors.numpy import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    shared = tensors["shared.weight"]
    extra = {
        "encoder.embed_tokens.weight": shared,
        "decoder.embed_tokens.weight": shared,
        "lm_head.weight": shared,
        "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight": np.ones((32, 4)),
    }
    save_file(tensors | extra, folder / "model.safetensors", metadata={"format": "pt"})
    assert np.array_equal(checkpoint_weights(folder, spec, config)["embedding.E"], shared.T)
    save_file(tensors | {"encoder.embed_tokens.weight": shared[:5]}, folder / "model.safetensors")
    with pytest.raises(ArrayError, match=r"wrong shape encoder.embed_tokens.weight \(5, 32\)"):
        checkpoint_weights(folder, spec, config)


def test_bart_final_logits_bias_is_skipped_when_zero_and_refused_when_not(tmp_path):
    folder, model = _saved(tmp_path, BART)
    spec, config = spec_from_config(folder), read_config(folder / "config.json")
    from safetensors.numpy import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    assert not tensors["final_logits_bias"].any()  # transformers saves its zero buffer
    checkpoint_weights(folder, spec, config)
    tensors["final_logits_bias"][0, 3] = 0.5
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ArrayError, match=r"final_logits_bias \(model.safetensors\) is not all zero"):
        checkpoint_weights(folder, spec, config)


@pytest.mark.parametrize("keys", [T5, BART], ids=["t5", "bart"])
def test_tfm_count_checks_a_transformers_folder(keys, tmp_path):
    folder, model = _saved(tmp_path, keys)
    result = CliRunner().invoke(app, ["count", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["specs"][0]
    theirs = sum(p.numel() for p in model.parameters())
    assert data["total"] == data["checkpoint"]["parameters"] == theirs
    from safetensors.numpy import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    name = next(n for n in tensors if "layers.1." in n or "block.1." in n)
    save_file({n: t for n, t in tensors.items() if n != name}, folder / "model.safetensors")
    broken = CliRunner().invoke(app, ["count", str(folder)])
    assert broken.exit_code != 0 and f"missing {name}" in broken.output


@pytest.mark.parametrize(
    "keys",
    [T5 | {"feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}, BART, BART | {"model_type": "mbart"}],
    ids=["t5-untied", "bart", "mbart"],
)
def test_tfm_converts_a_folder_and_back_and_transformers_loads_the_same_tensors(keys, tmp_path):
    torch, transformers = _library()
    from transformer_cli.tasks.conversions import to_hugging_face, to_tfm

    if keys.get("tie_word_embeddings") is False:
        folder, model = tmp_path / "model", _untied_t5(_write(tmp_path / "config", keys), tmp_path / "model")
    else:
        folder, model = _saved(tmp_path, keys)
    to_tfm(folder, tmp_path / "tfm.safetensors")
    to_hugging_face(tmp_path / "tfm.safetensors", tmp_path / "back")
    theirs, back = (
        model.state_dict(),
        transformers.AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "back").state_dict(),
    )
    assert sorted(back) == sorted(theirs)
    assert all(torch.equal(back[name].to(theirs[name].dtype), theirs[name]) for name in theirs)


def test_a_t5_saved_by_transformers_5_from_an_untied_config_reads_tied(tmp_path):
    """Issue 24: 5.x builds an untied config's T5 tied and saves no lm_head: tfm read the config as the untied
    releases are and refused the folder ("missing lm_head.weight"); it now reads it as transformers does, the head
    the shared embedding (unscaled), counted once. A file that holds an lm_head of its own is still read untied."""
    folder = tmp_path / "model"
    _build(_write(tmp_path / "config", T5 | {"tie_word_embeddings": False}), "cpu").save_pretrained(folder)
    spec, config = spec_from_config(folder), read_config(folder / "config.json")
    assert spec.tie_embeddings and spec.head_scale == "none"
    weights = checkpoint_weights(folder, spec, config)
    assert count_params(spec).total == sum(np.size(weights[t.name]) for t in all_tensors(spec))
    from safetensors.numpy import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    save_file(tensors | {"lm_head.weight": tensors["shared.weight"] + 1.0}, folder / "model.safetensors")
    untied = spec_from_config(folder)
    assert not untied.tie_embeddings
    assert np.array_equal(checkpoint_weights(folder, untied, config)["head.W"], tensors["shared.weight"] + 1.0)
