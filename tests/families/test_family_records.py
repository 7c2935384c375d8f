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
from transformer_cli.hf.config import spec_of_config
from transformer_cli.spec.definition import Spec

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
        assert arch.skipped == record.gguf.skipped and arch.alternatives == record.gguf.alternatives


def test_model_type_is_the_inverse_of_arch_of():
    also = {gguf.arch: kind for kind, record in RECORDS.items() for gguf in record.gguf_also}  # (nemotron_h_moe)
    assert set(MODEL_TYPE) == set(ARCH_OF.values()) | set(also) and also["nemotron_h_moe"] == "nemotron_h"
    assert all(ARCH_OF[kind] == arch or also.get(arch) == kind for arch, kind in MODEL_TYPE.items())
    # each architecture's model_type is the first written to it (llama's files are llama's, not Mistral's)
    assert MODEL_TYPE["llama"] == "llama" and MODEL_TYPE["deepseek2"] == "deepseek_v2" and MODEL_TYPE["t5"] == "t5"
    assert {arch for arch, record in GGUF_ARCHS.items() if not record.gguf.read_only} <= set(MODEL_TYPE)


# names that are no family where a format's code writes them: the tokenizer model "gpt2" (byte-level BPE) and
# llama.cpp's pre-tokenizer of Qwen2's split regex
NOT_FAMILIES = {("gguf/tokenizer.py", "gpt2"), ("gguf/vocab.py", "gpt2"), ("gguf/vocab.py", "qwen2")}


def _names(text: str, name: str) -> bool:
    """Whether `text` has `name` as a table's key or value, in a tuple (`kind in ("a", "b")`, BIASED = (...)), or in a
    comparison (`== "name"`, `!= "name"`)."""
    quoted = rf"""["']{re.escape(name)}["']"""
    literal = rf"{quoted}\s*:(?!\s*$)|:\s*{quoted}|[!=]=\s*{quoted}|\([^()]*{quoted}[^()]*\)"
    return re.search(literal, text, re.MULTILINE) is not None


def _named(name: str) -> list[str]:
    """The files of hf/ and gguf/ that name `name` as a table or a branch would (`_names`), but NOT_FAMILIES."""
    found = (
        str(path.relative_to(PACKAGE))
        for folder in ("hf", "gguf")
        for path in (PACKAGE / folder).rglob("*.py")
        if _names(path.read_text(), name)
    )
    return sorted(f for f in found if (f, name) not in NOT_FAMILIES)


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_a_registered_family_is_named_only_in_its_record(kind):
    record = RECORDS[kind]
    assert _named(kind) == []
    assert _named(record.hf_class) == []
    if record.gguf is not None:
        assert _named(record.gguf.arch) == []


@pytest.mark.parametrize("kind", ["llama", "mistral", "mixtral", "qwen2", "qwen3", "olmo2", "phi3", "falcon"])
def test_the_llama_likes_are_records_named_nowhere_else(kind):
    """LLaMA, Mistral, Mixtral (GGUF llama, with experts), Qwen2, Qwen3, OLMo 2, Phi-3, Falcon: one record each, and
    no table or branch of hf/ or gguf/ names them (gguf/hf_config.py's BIASED tuple and `kind in (...)` branches
    did)."""
    assert kind in RECORDS
    assert _named(kind) == []
    assert _named(RECORDS[kind].hf_class) == []


def test_a_llama_file_with_experts_is_mixtral():
    """The GGUF llama architecture's model_type is the record's choice by the spec: Mixtral's with experts."""
    choose = GGUF_ARCHS["llama"].gguf.model_type
    assert MODEL_TYPE["llama"] == "llama" and choose is not None
    assert choose(Spec(N=1, H=2, m=4, d=8, r=16, V=10)) == "llama"
    assert choose(Spec(N=1, H=2, m=4, d=8, r=16, V=10, E=4, k=2)) == "mixtral"


def test_the_scan_finds_each_way_of_naming_a_family():
    """The control: a table's key or value, a tuple of names, a comparison; not a list such as __all__, nor prose."""
    for text in (
        'T = {"llama": 1}',
        'T = {1: "llama"}',
        'B = ("qwen3", "llama")',
        'if kind in ("llama",):',
        'if kind == "llama":',
        'if arch != "llama":',
        "m = f(x, 'llama')",
    ):
        assert _names(text, "llama"), text
    for text in ('__all__ = ["llama", "sizes"]', "LLaMA's block, llama.cpp's rotary", 'T = {"llama_like": f}'):
        assert not _names(text, "llama"), text


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


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_the_record_fields_the_moved_mixtures_brought_are_read_from_the_record(kind):
    """What a record says beyond its layout and keys reaches the formats: its skipped checkpoint tensors, its GGUF
    file's skipped tensors and tensors held in pieces."""
    record = RECORDS[kind]
    assert weights.SKIPPED_BY_KIND.get(kind, ()) == record.skipped
    if record.gguf is not None:
        arch = ARCHITECTURES[record.gguf.arch]
        assert arch.skipped == record.gguf.skipped and arch.joined == dict(record.gguf.joined)


SMALL = {"vocab_size": 97, "hidden_size": 32, "intermediate_size": 40, "num_hidden_layers": 3}
DEEPSEEK = SMALL | {
    "num_attention_heads": 4,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 6,
    "first_k_dense_replace": 1,
    "kv_lora_rank": 10,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 6,
}


@pytest.mark.parametrize("kind", ["deepseek_v3", "deepseek_v2"])
def test_a_deepseek2_files_model_type_is_the_one_its_routing_says(kind):
    """deepseek2 serves V2 and V3: a file's config.json is V3's where the router scores by sigmoid (the record's
    Gguf.model_type), V2's otherwise (the control: the architecture's first record)."""
    spec = spec_of_config(DEEPSEEK | {"model_type": kind}, "config.json")
    assert (spec.router_score == "sigmoid") == (kind == "deepseek_v3")
    config = hf_config.hf_model_config(spec, "deepseek2")
    assert config["model_type"] == kind and config["architectures"] == [RECORDS[kind].hf_class]
    assert MODEL_TYPE["deepseek2"] == "deepseek_v2"


def test_deepseek_v3s_multi_token_layer_is_skipped_and_v2_has_no_such_layer():
    assert weights.canonical("model.layers.61.eh_proj.weight", "deepseek_v3", {}) is None
    assert weights.canonical("model.layers.61.eh_proj.weight", "deepseek_v2", {}) == "model.layers.61.eh_proj.weight"


PHIMOE = SMALL | {"model_type": "phimoe", "num_attention_heads": 4, "num_key_value_heads": 2, "num_local_experts": 4}


def test_phimoes_file_says_its_window_and_its_layernorms_eps_as_the_converter_writes_them():
    """PhiMoE's record: attention.sliding_window written though there is none (0), the LayerNorms' eps under the
    rms key; the control, GPT-NeoX's LayerNorms, has neither."""
    meta = write._metadata(spec_of_config(PHIMOE, "config.json"), "phimoe")
    assert meta["attention.sliding_window"] == 0 and "attention.layer_norm_rms_epsilon" in meta
    assert "attention.layer_norm_epsilon" not in meta
    neox = SMALL | {"model_type": "gpt_neox", "num_attention_heads": 4, "hidden_act": "gelu"}
    control = write._metadata(spec_of_config(neox, "config.json"), "gptneox")
    assert "attention.sliding_window" not in control and "attention.layer_norm_epsilon" in control
