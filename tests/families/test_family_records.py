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
    if record.gguf is not None:
        assert ARCH_OF[kind] == record.gguf.arch
        assert write.ARCH_OF is ARCH_OF and hf_config.MODEL_TYPE is MODEL_TYPE
        arch = ARCHITECTURES[record.gguf.arch]
        assert arch.layout is record.gguf.layout
        assert arch.transforms == dict(record.gguf.transforms) and arch.redo == dict(record.gguf.redo)


def test_model_type_is_the_inverse_of_arch_of():
    assert set(MODEL_TYPE) == set(ARCH_OF.values())
    assert all(ARCH_OF[kind] == arch for arch, kind in MODEL_TYPE.items())
    # each architecture's model_type is the first written to it (llama's files are llama's, not Mistral's)
    assert MODEL_TYPE["llama"] == "llama" and MODEL_TYPE["deepseek2"] == "deepseek_v2" and MODEL_TYPE["t5"] == "t5"
    assert set(GGUF_ARCHS) <= set(MODEL_TYPE)


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
