"""Mistral Large 4's text model (issue 45) against transformers' own, beyond the tests over every model (hidden
states, bfloat16, the cache, verify-decoding, its own steps, the folder there and back): its config.json read as
MistralLarge4TextConfig reads it, what tfm refuses, and the multimodal class its files are saved by (model_type
mistral_large4: the text model, a head and its soft cap, the image model not read)."""

from __future__ import annotations

import json

import pytest
from helpers_hf_transformers import multimodal_checked
from hf_models_mixers import INDEXED

from transformer_cli.errors import SpecError
from transformer_cli.hf.config import spec_from_config

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")

TEXT = {k: v for k, v in INDEXED["mistral_large4_text"][2].items() if k != "experts_implementation"}


def _config(tmp_path, **changes):
    base = TEXT | {"model_type": "mistral_large4_text"}
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in (base | changes).items() if v is not None}))
    return tmp_path


def test_its_config_is_read_as_mistrallarge4textconfig_reads_it(tmp_path):
    """Without no_rope_layers every fourth layer turns nothing (no_rope_layer_interval 4); without mlp_layer_types
    the first first_k_dense_replace dense; without rope_parameters its YaRN (factor 2048 over 512 positions)."""
    folder = _config(tmp_path, no_rope_layers=None, mlp_layer_types=None, rope_parameters=None,
                     first_k_dense_replace=3, indexer_types=None)  # fmt: skip
    spec = spec_from_config(folder)
    theirs_ = transformers.MistralLarge4TextConfig(**json.loads((folder / "config.json").read_text()))
    nope = [spec.positional_layers[i % len(spec.positional_layers)] == "nope" for i in range(spec.N)]
    assert nope == [not turn for turn in theirs_.no_rope_layers] and nope.count(True) == 2
    routed = [spec.feedforward_layers[i % len(spec.feedforward_layers)] == "routed" for i in range(spec.N)]
    assert routed == [kind == "sparse" for kind in theirs_.mlp_layer_types] and routed.count(False) == 3
    assert (spec.rope_scaling, spec.rope_factor, spec.rope_original_max_len) == ("yarn", 2048.0, 512)


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"kv_source_layers": [0, 0, 2, 1, 4, 4, 6, 7]}, "key 'kv_source_layers': got .*, expected 8 layers' sources"),
        ({"kv_source_layers": [0, 1, 1, 2, 4, 4, 6, 7]}, "key 'kv_source_layers': got .*, expected 8 layers' sources"),
        (
            {"kv_source_layers": [0, 0, 0, 3, 4, 4, 6, 7]},
            "key 'latent_layers': got .*, expected a store block of block 2",
        ),
        (
            {"num_key_value_heads": 2},
            "key 'num_key_value_heads': 2 is not supported: latent attention gives every one of the 4 heads",
        ),
        ({"no_rope_layers": [1, 0]}, "key 'no_rope_layers': got \\[1, 0\\], expected 8 layers' 1"),
    ],
)
def test_what_tfm_cannot_hold_is_refused_in_one_line(tmp_path, changes, said):
    with pytest.raises(SpecError, match=said) as raised:
        spec_from_config(_config(tmp_path, **changes))
    assert "\n" not in str(raised.value)


VISION = dict(model_type="pixtral", hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
              head_dim=8, patch_size=14, image_size=56, hidden_act="silu")  # fmt: skip


@pytest.mark.parametrize("tied", [False, True])
def test_the_multimodal_folder_is_its_text_model_its_head_and_its_cap(tmp_path, runner, tied):
    """A MistralLarge4ForConditionalGeneration folder: its text model's parameters and its head counted (not its
    image model's), its soft-capped logits transformers', to 1e-10; tfm's folder of it loads in transformers (its
    image model then made afresh) to the same logits."""
    from helpers_hf_transformers import _randomised

    config = transformers.MistralLarge4Config(
        text_config=TEXT | {"final_logit_softcapping": 1.0}, vision_config=VISION, tie_word_embeddings=tied,
        attn_implementation="sdpa", experts_implementation="eager",
    )  # fmt: skip
    model = transformers.MistralLarge4ForConditionalGeneration(config)
    _randomised(model)
    model = model.double().eval()
    skipped = ("model.vision_tower.", "model.multi_modal_projector.")
    spec = multimodal_checked(model, tmp_path, runner, skipped)
    assert spec.tie_embeddings == tied and spec.logit_softcap == 1.0
