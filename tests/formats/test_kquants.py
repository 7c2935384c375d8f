"""`tfm convert --type q4_k_m`: llama.cpp's Q4_K and Q6_K quantisers (gguf/kquants.py) give llama.cpp's own bytes,
and a folder written as Q4_K_M holds each tensor in the type llama-quantize gives it.

References: tests/data/kquants.npz, the bytes of ggml_quantize_chunk (the function llama-quantize calls for each
tensor) for 48 rows with the hard cases (scripts/record_kquants.py says how they were made); the gguf package's
dequantisers; and tests/data/llama_quantize_types.json, the types llama-quantize gave each tensor of a file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import transformer_cli as tfm
from transformer_cli.gguf import kquants
from transformer_cli.spec import spec_from_mapping

gguf = pytest.importorskip("gguf")
DATA = Path(__file__).parents[1] / "data"
SIZES = {"Q4_K": 144, "Q5_K": 176, "Q6_K": 210}


@pytest.fixture(scope="module")
def recorded():
    return np.load(DATA / "kquants.npz")


@pytest.mark.parametrize("kind", ["Q4_K", "Q5_K", "Q6_K"])
def test_each_super_block_is_llama_cpps_own_bytes(recorded, kind):
    got = kquants.quantize(recorded["rows"], kind)
    assert got.shape == recorded[kind].shape and got.dtype == np.uint8
    blocks, expected = got.reshape(-1, SIZES[kind]), recorded[kind].reshape(-1, SIZES[kind])
    differ = np.flatnonzero((blocks != expected).any(axis=1))
    assert differ.size == 0, f"super-blocks {differ.tolist()} differ from llama.cpp's"


@pytest.mark.parametrize("kind", ["Q4_K", "Q5_K", "Q6_K"])
def test_numpys_pairwise_sum_in_place_of_cs_order_gives_other_bytes(recorded, kind, monkeypatch):
    """The control: the bytes are exact only with llama.cpp's order of additions."""
    monkeypatch.setattr(kquants, "_sum", lambda values: values.sum(axis=-1, dtype=np.float32))
    assert not np.array_equal(kquants.quantize(recorded["rows"], kind), recorded[kind])


@pytest.mark.parametrize("kind, worst", [("Q4_K", 0.13), ("Q5_K", 0.07), ("Q6_K", 0.035)])
def test_the_gguf_packages_dequantiser_reads_the_values_back_within_the_types_step(recorded, kind, worst):
    rows = recorded["rows"][12:24]  # (0.02 x normal: a trained model's weights)
    back = gguf.quants.dequantize(kquants.quantize(rows, kind), gguf.GGMLQuantizationType[kind])
    error = np.abs(back - rows).max() / np.abs(rows).max()
    assert 0 < error < worst


def test_rows_that_are_no_whole_super_blocks_are_refused():
    with pytest.raises(ValueError, match="rows of 320 are no whole blocks of 256"):
        kquants.quantize(np.zeros((2, 320), dtype=np.float32), "Q4_K")


def _llama_folder(root: Path, case: dict) -> Path:
    """A LLaMA folder of the recorded case's spec, seeded."""
    spec = spec_from_mapping(case["spec"], case["file"])
    config = {
        "model_type": "llama",
        "num_hidden_layers": spec.N,
        "num_attention_heads": spec.H,
        "num_key_value_heads": spec.H // (spec.G or 1),
        "head_dim": spec.m,
        "hidden_size": spec.d,
        "intermediate_size": spec.r,
        "vocab_size": spec.V,
        "rms_norm_eps": spec.norm_eps,
        "max_position_embeddings": 64,
        "tie_word_embeddings": bool(case["spec"].get("tie_embeddings", False)),
    }
    (root / "config.json").write_text(json.dumps(config))
    tfm.init(root / "config.json", root / "folder", seed=5)
    return root / "folder"


@pytest.mark.parametrize("file", ["llama8-Q4_K_M", "tied16-Q4_K_M"])
def test_a_folder_written_as_q4_k_m_holds_each_tensor_as_llama_quantize_types_it(tmp_path, file):
    case = next(c for c in json.loads((DATA / "llama_quantize_types.json").read_text())["cases"] if c["file"] == file)
    folder = _llama_folder(tmp_path, case)
    tfm.convert(folder, tmp_path / "m.gguf", gguf_type="q4_k_m")
    reader = gguf.GGUFReader(tmp_path / "m.gguf")
    assert {t.name: t.tensor_type.name for t in reader.tensors} == case["types"]
    assert reader.fields["general.file_type"].contents() == 15  # LLAMA_FTYPE_MOSTLY_Q4_K_M
    f32 = tfm.convert(folder, tmp_path / "m-f32.gguf", gguf_type="f32")
    source = {t.name: np.asarray(t.data) for t in gguf.GGUFReader(f32.files[0]).tensors}
    for tensor in reader.tensors:  # each tensor is the quantiser's bytes of the F32 file's values
        if tensor.tensor_type.name in SIZES:
            expected = kquants.quantize(source[tensor.name], tensor.tensor_type.name)
            assert np.array_equal(np.asarray(tensor.data).reshape(expected.shape), expected), tensor.name
    same = tfm.compare(folder, tmp_path / "m.gguf", np.arange(32) % case["spec"]["V"], dtype="float32")
    assert 0 < same.figures["kld"]["mean"] < 0.05 and same.first_divergent_block == 0


def test_a_mixture_of_8_written_as_q4_k_m_has_llama_quantizes_q5_k_attention_outputs(tmp_path):
    """llama-quantize gives a mixture of 8 experts' attention outputs Q5_K in Q4_K_M: tfm's file holds every
    tensor in llama-quantize's type (recorded by llama.cpp: tests/data/llama_quantize_types_2.json.gz), Q5_K's
    bytes tfm's quantiser's (held above to llama.cpp's own)."""
    import gzip

    recorded = json.loads(gzip.decompress((DATA / "llama_quantize_types_2.json.gz").read_bytes()))
    case = next(
        c
        for c in recorded["cases"]
        if c["model"] == "mixtral4-8experts" and c["ftype"] == "Q4_K_M" and not c.get("imatrix")
    )
    spec = spec_from_mapping(recorded["models"]["mixtral4-8experts"], "mixtral4")
    config = {
        "model_type": "mixtral",
        "num_hidden_layers": spec.N,
        "num_attention_heads": spec.H,
        "num_key_value_heads": spec.kv_heads,
        "head_dim": spec.m,
        "hidden_size": spec.d,
        "intermediate_size": spec.expert_r or spec.r,
        "num_local_experts": spec.E,
        "num_experts_per_tok": spec.k,
        "vocab_size": spec.V,
        "rms_norm_eps": spec.norm_eps,
        "max_position_embeddings": 64,
        "tie_word_embeddings": False,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    tfm.init(tmp_path / "config.json", tmp_path / "folder", seed=5)
    tfm.convert(tmp_path / "folder", tmp_path / "m.gguf", gguf_type="q4_k_m")
    reader = gguf.GGUFReader(tmp_path / "m.gguf")
    assert {t.name: t.tensor_type.name for t in reader.tensors} == case["types"]
    assert "Q5_K" in case["types"].values()
