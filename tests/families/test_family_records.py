"""One record per model family (transformer_cli/families/): the formats' tables take a registered family from its
record, the inverse tables are each other's inverse, and a registered family's names are written nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from transformer_cli.families import GGUF_ARCHS, RECORDS
from transformer_cli.gguf import hf_config, write
from transformer_cli.gguf.archs import ARCH_OF, ARCHITECTURES, MODEL_TYPE
from transformer_cli.hf import families, lora_modules, weights

PACKAGE = Path(__file__).resolve().parents[2] / "transformer_cli"


def test_granite_is_a_record():
    assert "granite" in RECORDS
    assert RECORDS["granite"].gguf is not None and RECORDS["granite"].gguf.arch == "granite"


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_the_tables_take_a_registered_family_from_its_record(kind):
    record = RECORDS[kind]
    assert families.FAMILIES[kind] == (record.hf_class, record.spec)
    assert hf_config.CLASSES[kind] == record.hf_class
    assert weights.FAMILIES[kind] is record.checkpoint
    assert weights.ALIASES.get(kind, ()) == record.aliases
    assert lora_modules.STACKED.get(kind) == record.lora_stacked
    assert lora_modules.LINEAR_ROUTER.get(kind) == record.lora_router
    assert weights.OPTIONAL.get(kind) == record.optional
    assert weights.SKIPPED_BY_KIND.get(kind, ()) == record.skipped
    if record.gguf is not None:
        assert ARCH_OF.get(kind) == (None if record.gguf.read_only else record.gguf.arch)
        assert write.ARCH_OF is ARCH_OF and hf_config.MODEL_TYPE is MODEL_TYPE
        arch = ARCHITECTURES[record.gguf.arch]
        assert arch.layout is record.gguf.layout
        assert arch.transforms == dict(record.gguf.transforms) and arch.redo == dict(record.gguf.redo)
        assert arch.skipped == record.gguf.skipped and arch.alternative == record.gguf.alternative


def test_model_type_is_the_inverse_of_arch_of():
    assert set(MODEL_TYPE) == set(ARCH_OF.values())
    assert all(ARCH_OF[kind] == arch for arch, kind in MODEL_TYPE.items())
    # each architecture's model_type is the first written to it (llama's files are llama's, not Mistral's)
    assert MODEL_TYPE["llama"] == "llama" and MODEL_TYPE["deepseek2"] == "deepseek_v2" and MODEL_TYPE["t5"] == "t5"
    assert {arch for arch, record in GGUF_ARCHS.items() if not record.gguf.read_only} <= set(MODEL_TYPE)


def _named(name: str) -> list[str]:
    """The files of hf/ and gguf/ with `name` as a table's key or value, or a branch on it (`== "name"`); the
    tokenizer's model "gpt2" (byte-level BPE) is no family."""
    quoted = rf"""["']{re.escape(name)}["']"""
    literal = re.compile(rf"{quoted}\s*:(?!\s*$)|:\s*{quoted}|==\s*{quoted}", re.MULTILINE)
    return sorted(
        str(path.relative_to(PACKAGE))
        for folder in ("hf", "gguf")
        for path in (PACKAGE / folder).rglob("*.py")
        if literal.search(path.read_text())
    )


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_a_registered_family_is_named_only_in_its_record(kind):
    record = RECORDS[kind]
    assert _named(kind) == []
    assert _named(record.hf_class) == []
    if record.gguf is not None:
        assert _named(record.gguf.arch) == []


def test_a_family_not_yet_registered_is_found_in_the_tables():
    """The control: the scan finds a family still spread over the formats' tables."""
    unregistered = "cohere" if "cohere" not in RECORDS else "llama"
    assert unregistered not in RECORDS
    assert {"hf/families.py", "hf/weights.py", "gguf/archs.py"} <= set(_named(unregistered))


ENCODERS = ("bert", "roberta", "xlm-roberta", "distilbert")
ENCODER_DECODERS = ("t5", "mt5", "bart", "mbart")


@pytest.mark.parametrize("kind", ENCODERS + ENCODER_DECODERS)
def test_the_encoders_and_encoder_decoders_are_records(kind):
    assert kind in RECORDS
    assert _named(kind) == [] and _named(RECORDS[kind].hf_class) == []


def test_bert_files_are_read_but_not_written():
    """GGUF bert (the four BERT families' files) is read; no family is written to it, nor a config.json made of it
    (read_only); the control: t5 is read and written."""
    assert "bert" in ARCHITECTURES and "bert" not in MODEL_TYPE
    assert [kind for kind in ENCODERS if kind in ARCH_OF] == []
    assert {RECORDS[kind].gguf.arch for kind in ENCODERS} == {"bert"}
    assert ARCH_OF["t5"] == ARCH_OF["mt5"] == "t5" and MODEL_TYPE["t5"] == "t5"


def test_a_gguf_t5_models_type_is_decided_by_its_head():
    """Gguf.model_type: a tied head is mT5's config (never scaled), its own head T5's."""
    from transformer_cli.spec.validate import spec_from_mapping

    keys = dict(N=2, N_enc=2, H=2, m=4, d=8, r=16, V=32, positional="relative", norm="pre", norm_type="rmsnorm")
    keys |= dict(scale="none", mask="causal", head_scale="none", attention_bias=False, ff_bias=False)
    for tied, kind in ((True, "mt5"), (False, "t5")):
        config = hf_config.hf_config(spec_from_mapping(keys | {"tie_embeddings": tied}), "t5")
        assert config["model_type"] == kind and config["architectures"] == [RECORDS[kind].hf_class]
        assert config["num_layers"] == 2 and "hidden_size" not in config  # (config_alone: T5's own names)


def test_a_t5_checkpoints_layout_is_decided_by_its_config():
    """Record.checkpoint_for: gated where feed_forward_proj says so, each family's default otherwise."""
    gated = "decoder.block.{i}.layer.2.DenseReluDense.wi_0.weight"
    has_gate = lambda config: gated.split("{i}.")[1] in weights.family_for(config).names.values()  # noqa: E731
    assert not has_gate({"model_type": "t5"}) and has_gate({"model_type": "t5", "feed_forward_proj": "gated-gelu"})
    assert has_gate({"model_type": "mt5"}) and not has_gate({"model_type": "mt5", "feed_forward_proj": "relu"})


def test_a_familys_own_skipped_tensors_are_skipped_for_it_alone():
    """Record.skipped: RobertaForMaskedLM's lm_head is no parameter of a roberta model; a bert file's is unexpected
    (the control)."""
    assert weights.canonical("lm_head.decoder.weight", "roberta", {}) is None
    assert weights.canonical("lm_head.decoder.weight", "bert", {}) == "lm_head.decoder.weight"
    assert weights.canonical("cls.predictions.bias", "bert", {}) is None
    assert weights.canonical("model.encoder.version", "bart", {}) is None
    assert weights.canonical("model.encoder.version", "t5", {}) == "model.encoder.version"
