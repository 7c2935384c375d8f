"""GLM-5-Next's text model (issue 45) against transformers' own, beyond the tests over every model (hidden states,
bfloat16, the cache, verify-decoding, its own steps, the folder there and back): its config.json read as
Glm5NextTextConfig reads it, what tfm refuses where transformers cannot run it, a prompt past its chunks, and the
multimodal class its files are saved by (model_type glm5_next: the text model and a head, the image model not read)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers_hf_transformers import TOL, build, multimodal_checked, relative, theirs
from hf_exact import exact
from hf_models_mixers import INDEXED

from transformer_cli import Transformer
from transformer_cli.errors import SpecError
from transformer_cli.hf.config import spec_from_config
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch", reason="PyTorch is the transformers library's backend")
transformers = pytest.importorskip("transformers", reason="the test extra installs transformers")


def _config(tmp_path, **changes):
    base = dict(INDEXED["glm5_next_text"][2]) | {"model_type": "glm5_next_text"}
    base.pop("experts_implementation")
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in (base | changes).items() if v is not None}))
    return tmp_path


def test_its_config_is_read_as_glm5nexttextconfig_reads_it(tmp_path):
    """Without layer_types three linear layers, then one indexed; without mlp_layer_types the first three dense
    (first_k_dense_replace unread); GLM-5's pattern keys where indexer_types is absent."""
    folder = _config(tmp_path, num_hidden_layers=8, layer_types=None, mlp_layer_types=None, indexer_types=None,
                     first_k_dense_replace=1, index_topk_pattern="FFFFFFFF")  # fmt: skip
    spec = spec_from_config(folder)
    theirs_ = transformers.Glm5NextTextConfig(**json.loads((folder / "config.json").read_text()))
    kinds = [spec.mixer_layers[i % len(spec.mixer_layers)] for i in range(spec.N)]
    assert kinds == ["indexed_pool" if k == "indexed_attention" else "kda" for k in theirs_.layer_types]
    routed = [spec.feedforward_layers[i % len(spec.feedforward_layers)] for i in range(spec.N)]
    assert routed == ["routed" if k == "sparse" else "dense" for k in theirs_.mlp_layer_types]
    assert routed[:4] == ["dense", "dense", "dense", "routed"] and kinds[3] == "indexed_pool"


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        (
            {"indexer_types": ["full", "shared", "shared", "full", "full"], "layer_types": ["indexed_attention"] * 5},
            'a "shared" layer \\(2\\) right after',
        ),
        (
            {
                "indexer_types": ["full", "full", "full", "shared", "shared"],
                "layer_types": [
                    "indexed_attention",
                    "indexed_attention",
                    "indexed_attention",
                    "linear_attention",
                    "indexed_attention",
                ],
            },
            'a "shared" layer \\(4\\) right after',
        ),
        ({"qk_rope_head_dim": 4}, "key 'qk_rope_head_dim': 4 is not supported: 0"),
        ({"index_kpool_always_select_tail": False}, "key 'index_kpool_always_select_tail': false is not supported"),
        ({"linear_lower_bound": 2.0}, "key 'linear_lower_bound': got 2.0, expected a negative number"),
        ({"index_topk": 7}, "key 'index_pool': got 3, expected a divisor of index_topk = 7"),
    ],
)
def test_what_transformers_cannot_run_is_refused_in_one_line(tmp_path, changes, said):
    with pytest.raises(SpecError, match=said) as raised:
        spec_from_config(_config(tmp_path, **changes))
    assert "\n" not in str(raised.value)


@pytest.mark.slow
def test_a_prompt_past_its_linear_attentions_chunk_is_transformers(tmp_path):
    """70 tokens: transformers' KDA runs two chunks of 64; 23 pools of 3, 2 of them kept by each query."""
    model = build("glm5_next_text")
    model.save_pretrained(tmp_path)
    spec = spec_from_config(tmp_path)
    ids = np.random.default_rng(7).integers(0, 97, size=(1, 70))
    ours = Transformer(spec, load_weights(tmp_path, spec))(ids)
    assert relative(ours, theirs(exact(model), ids)) < TOL


VISION = dict(depth=1, hidden_size=16, num_heads=2, intermediate_size=16, out_hidden_size=32,
              projection_intermediate_size=16, patch_size=2, image_size=8, spatial_merge_size=1,
              temporal_patch_size=1)  # fmt: skip


def _multimodal(**changes):
    """Glm5NextForConditionalGeneration (the class of GLM-5-Next's files) of the text model's tiny config, random."""
    from helpers_hf_transformers import _randomised

    text = {k: v for k, v in INDEXED["glm5_next_text"][2].items() if k != "experts_implementation"}
    config = transformers.Glm5NextConfig(
        text_config=text, vision_config=VISION, attn_implementation="sdpa", experts_implementation="eager", **changes
    )
    model = transformers.Glm5NextForConditionalGeneration(config)
    _randomised(model)
    for name, buffer in model.named_buffers():
        if name.endswith("e_score_correction_bias"):
            buffer.copy_(torch.linspace(-0.5, 0.5, buffer.numel()).flip(0))
    return model.double().eval()


@pytest.mark.parametrize("tied", [False, True])
def test_the_multimodal_folder_is_its_text_model_and_head(tmp_path, runner, tied):
    """A Glm5NextForConditionalGeneration folder (model_type glm5_next): its text model's parameters and its head
    counted (not its image model's), its logits transformers', to 1e-10; tfm's folder of it loads in transformers
    (its image model then made afresh) to the same logits."""
    spec = multimodal_checked(_multimodal(tie_word_embeddings=tied), tmp_path, runner, ("model.visual.",))
    assert spec.tie_embeddings == tied
