"""LoRA's trainable parameters as peft counts them: `get_peft_model(model, LoraConfig(...))` on the meta device
(no weights made), its `get_nb_trainable_parameters()`, for each family's model as transformers builds it, beside
tfm's count from the config alone; and tfm specs by their own names, against the closed form."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "formats"))

from transformer_cli import Spec
from transformer_cli.analysis.lora import lora_parameters
from transformer_cli.errors import SpecError
from transformer_cli.hf.lora_modules import hf_linear_modules

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

FAMILIES = ["llama", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "gpt2", "gpt_neox", "falcon-7b", "falcon-40b",
            "bloom", "starcoder2", "olmo2", "stablelm", "gptj", "cohere", "granite", "phi", "opt-350m-projected",
            "bert", "t5", "bart"]  # fmt: skip


def _peft_count(model, targets, rank: int) -> int:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapped = peft.get_peft_model(model, peft.LoraConfig(r=rank, target_modules=targets))
    return wrapped.get_nb_trainable_parameters()[0]


ENCODER_DECODERS = {
    "t5": ("T5Config", "T5ForConditionalGeneration", dict(vocab_size=97, d_model=32, d_kv=8, d_ff=40, num_layers=2,
                                                          num_heads=4, decoder_start_token_id=0)),
    "bart": ("BartConfig", "BartForConditionalGeneration", dict(
        vocab_size=97, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=40, decoder_ffn_dim=40, max_position_embeddings=64)),
}  # fmt: skip


def _model_and_config(name: str, tmp_path):
    from hf_models import MODELS

    config_class, model_class, kwargs = (MODELS | ENCODER_DECODERS)[name]
    cfg = getattr(transformers, config_class)(**kwargs)
    with torch.device("meta"):
        model = getattr(transformers, model_class)(cfg)
    cfg.save_pretrained(tmp_path)
    return model, json.loads((tmp_path / "config.json").read_text())


@pytest.mark.parametrize("rank", [8, 16])
@pytest.mark.parametrize("name", FAMILIES)
def test_trainable_parameters_are_peft_s(tmp_path, name, rank):
    from transformer_cli.hf.config import spec_from_config

    model, config = _model_and_config(name, tmp_path)
    spec = spec_from_config(tmp_path)
    linear = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules()
                     if isinstance(m, (torch.nn.Linear, transformers.pytorch_utils.Conv1D))} - {"lm_head"})  # fmt: skip
    modules = hf_linear_modules(spec, config)
    assert lora_parameters(spec, rank, "all-linear", modules) == _peft_count(model, "all-linear", rank)
    two = linear[:2]  # (a list of module names, matched as peft matches them)
    model, _ = _model_and_config(name, tmp_path)  # (peft wrapped the first in place)
    assert lora_parameters(spec, rank, ",".join(two), modules) == _peft_count(model, two, rank)


def test_a_tfm_spec_counts_its_own_projections_by_the_closed_form():
    spec = Spec(N=3, H=4, G=2, m=8, d=32, r=40, feedforward="gated", activation="silu", norm="pre")
    r, d, H, G, m, ff = 4, 32, 4, 2, 8, 40
    per_block = r * ((d + H * m) * 2 + (d + G * m) * 2 + (d + ff) * 3)  # W_Q, W_O; W_K, W_V; W1, W3, W2
    assert lora_parameters(spec, r) == 3 * per_block
    assert lora_parameters(spec, r, "W_Q,W_V") == 3 * r * ((d + H * m) + (d + G * m))
    assert lora_parameters(spec, r, "W_Q,W_V") != lora_parameters(spec, r, "W_Q,W_K,W_V")  # (the control)


def test_what_lora_cannot_count_is_refused_in_one_line(tmp_path):
    spec = Spec(N=1, H=2, m=4, d=8, r=16)
    with pytest.raises(SpecError, match=r"--lora-targets q_proj: q_proj names no linear module of this model"):
        lora_parameters(spec, 8, "q_proj")
    with pytest.raises(SpecError, match="expected a positive rank"):
        lora_parameters(spec, 0)
    with pytest.raises(SpecError, match="LoRA on a mixture of experts is not counted yet"):
        lora_parameters(Spec(N=1, H=2, m=4, d=8, r=16, E=4, k=2, feedforward="gated", activation="silu"), 8)
