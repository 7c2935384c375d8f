"""Hugging Face checkpoint folders read and written by tfm, without torch: every family's layout both ways,
sharded folders, bf16, and every malformed folder the issue names (each a one-line error, nothing opened
outside the folder). The logits against transformers itself are in test_hf_transformers.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from helpers_hf_checkpoint import FAMILIES, written

from transformer_cli import ArrayError, Spec
from transformer_cli.hf.checkpoint import INDEX, SINGLE, Checkpoint
from transformer_cli.hf.weights import checkpoint_weights


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_reads_back_exactly_what_was_written(tmp_path, family):
    folder, spec, weights = written(tmp_path, family)
    read = checkpoint_weights(folder, spec, FAMILIES[family][0])
    assert sorted(read) == sorted(weights)
    for name, array in weights.items():
        assert np.array_equal(read[name], array), name


def test_a_sharded_folder_reads_as_the_single_file_does(tmp_path):
    single, spec, weights = written(tmp_path / "a")
    sharded, _, _ = written(tmp_path / "b", shard_bytes=20_000)
    shards = sorted(p.name for p in sharded.glob("*.safetensors"))
    assert len(shards) > 3 and (sharded / INDEX).exists() and not (sharded / SINGLE).exists()
    config = FAMILIES["llama"][0]
    for name, array in checkpoint_weights(sharded, spec, config).items():
        assert np.array_equal(array, weights[name])


def test_the_fused_layouts_put_each_head_where_the_family_does(tmp_path):
    """Independent of the split: GPT-NeoX's query_key_value rows are [q_h | k_h | v_h] per head h."""
    folder, spec, weights = written(tmp_path, "gpt_neox")
    qkv = Checkpoint(folder).read("gpt_neox.layers.0.attention.query_key_value.weight")  # (3Hm, d)
    m = spec.m
    head1 = qkv[3 * m : 6 * m]  # head 1's block of rows
    assert np.array_equal(head1[:m], weights["blocks.0.attention.W_Q"][1])
    assert np.array_equal(head1[m : 2 * m], weights["blocks.0.attention.W_K"][1])
    assert np.array_equal(head1[2 * m :], weights["blocks.0.attention.W_V"][1])


# -- headers that do not fit the config -------------------------------------------------------------------


def _rewrite(folder: Path, change) -> None:
    """Re-save model.safetensors with its tensors changed by `change(dict) -> dict`."""
    from transformer_cli.io import safetensors_io
    from transformer_cli.io.arrays import Header

    tensors = change(safetensors_io.load(folder / SINGLE))
    layout = lambda: ((k, Header(v.shape, v.dtype)) for k, v in tensors.items())  # noqa: E731
    safetensors_io.save(folder / SINGLE, layout, tensors.items(), {"format": "pt"})


def test_missing_unexpected_and_misshapen_tensors_are_all_listed_with_their_file(tmp_path):
    folder, spec, _ = written(tmp_path)

    def change(t):
        del t["model.layers.1.mlp.up_proj.weight"]
        t["model.layers.0.extra.weight"] = np.zeros(3)
        t["model.norm.weight"] = np.zeros(31)
        return t

    _rewrite(folder, change)
    with pytest.raises(ArrayError) as err:
        checkpoint_weights(folder, spec, FAMILIES["llama"][0])
    message = str(err.value)
    assert "missing model.layers.1.mlp.up_proj.weight" in message
    assert "unexpected model.layers.0.extra.weight (model.safetensors)" in message
    assert "model.norm.weight (31,) in model.safetensors (expected (32,))" in message
    assert "\n" not in message


def test_integer_tensors_and_nan_are_refused_naming_the_tensor(tmp_path):
    folder, spec, _ = written(tmp_path)
    _rewrite(folder, lambda t: t | {"model.norm.weight": np.ones(32, dtype=np.int32)})
    with pytest.raises(ArrayError, match="not floating point model.norm.weight I32"):
        checkpoint_weights(folder, spec, FAMILIES["llama"][0])
    _rewrite(folder, lambda t: t | {"model.norm.weight": np.full(32, np.nan)})
    weights = checkpoint_weights(folder, spec, FAMILIES["llama"][0])  # the headers fit; the data is read later
    with pytest.raises(ArrayError, match=r"NaN or inf in model.norm.weight \(model.safetensors\)"):
        weights["final_norm.gamma"]


def test_a_tied_head_a_file_holds_anyway_is_accepted_and_an_untied_one_missing_is_not(tmp_path):
    folder, spec, _ = written(tmp_path, "gpt2")  # tied: no head in the file
    _rewrite(folder, lambda t: t | {"lm_head.weight": t["transformer.wte.weight"]})
    assert "embedding.E" in checkpoint_weights(folder, spec, FAMILIES["gpt2"][0])
    untied = Spec(**{**spec.to_dict(), "tie_embeddings": False})
    folder, _, _ = written(tmp_path / "b", "gpt2")
    with pytest.raises(ArrayError, match="missing lm_head.weight"):
        checkpoint_weights(folder, untied, FAMILIES["gpt2"][0])


def test_the_hub_names_of_gpt2_and_bert_are_read(tmp_path):
    """The hub's GPT-2 files have no 'transformer.' prefix and hold mask buffers; BERT's say bert. and gamma."""
    folder, spec, weights = written(tmp_path, "gpt2")
    _rewrite(
        folder,
        lambda t: {k.removeprefix("transformer."): v for k, v in t.items()} | {"h.0.attn.bias": np.ones((1, 1, 4, 4))},
    )
    assert np.array_equal(
        checkpoint_weights(folder, spec, {"model_type": "gpt2"})["embedding.E"], weights["embedding.E"]
    )
    folder, spec, weights = written(tmp_path, "bert")
    _rewrite(
        folder,
        lambda t: (
            {"bert." + k.replace("LayerNorm.weight", "LayerNorm.gamma"): v for k, v in t.items()}
            | {"cls.predictions.bias": np.zeros(97)}
        ),
    )
    read = checkpoint_weights(folder, spec, {"model_type": "bert"})
    assert np.array_equal(read["blocks.1.norm2.gamma"], weights["blocks.1.norm2.gamma"])


# -- malformed folders and indexes ------------------------------------------------------------------------


def sharded(tmp_path: Path) -> tuple[Path, Spec, dict]:
    folder, spec, _ = written(tmp_path, shard_bytes=20_000)
    return folder, spec, json.loads((folder / INDEX).read_text())


def _set_index(folder: Path, index: dict) -> None:
    (folder / INDEX).write_text(json.dumps(index))


@pytest.mark.parametrize("bad", ["../outside.safetensors", "/etc/passwd", "sub/x.safetensors", "..", ""])
def test_an_index_naming_a_file_outside_the_folder_is_refused_and_never_opened(tmp_path, bad):
    folder, spec, index = sharded(tmp_path)
    (tmp_path / "outside.safetensors").write_bytes(b"")  # exists, so only the rule can refuse it
    first = next(iter(index["weight_map"]))
    index["weight_map"][first] = bad
    _set_index(folder, index)
    with pytest.raises(ArrayError, match="is not a file name inside the folder; refused"):
        Checkpoint(folder)


def test_a_missing_shard_is_named(tmp_path):
    folder, spec, index = sharded(tmp_path)
    (folder / "model-00002-of-00011.safetensors").unlink()
    with pytest.raises(ArrayError, match="shard model-00002-of-00011.safetensors is missing"):
        Checkpoint(folder)


def test_two_shards_holding_one_tensor_are_refused(tmp_path):
    folder, spec, index = sharded(tmp_path)
    a, b = folder / "model-00001-of-00011.safetensors", folder / "model-00002-of-00011.safetensors"
    b.write_bytes(a.read_bytes())
    with pytest.raises(ArrayError, match="is in two shards"):
        Checkpoint(folder)


def test_an_index_that_misplaces_a_tensor_is_refused(tmp_path):
    folder, spec, index = sharded(tmp_path)
    name = "model.norm.weight"
    index["weight_map"][name] = next(f for f in index["weight_map"].values() if f != index["weight_map"][name])
    _set_index(folder, index)
    with pytest.raises(ArrayError, match="'model.norm.weight' is listed in model-0.* but is in"):
        Checkpoint(folder)


@pytest.mark.parametrize("text", ["[1, 2]", "{", '{"weight_map": {"a": 3}}', '{"metadata": {}}'])
def test_an_index_that_is_not_a_weight_map_is_one_line(tmp_path, text):
    folder, spec, index = sharded(tmp_path)
    (folder / INDEX).write_text(text)
    with pytest.raises(ArrayError) as err:
        Checkpoint(folder)
    assert str(err.value).startswith(str(folder / INDEX)) and "\n" not in str(err.value)


def test_a_folder_without_safetensors_says_what_it_reads(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(ArrayError, match="no model.safetensors or model.safetensors.index.json"):
        Checkpoint(tmp_path)


def test_a_shard_linked_to_a_device_is_refused_and_one_linked_to_a_regular_file_is_read(tmp_path):
    """The hub's cache links each file to a blob elsewhere: a link is followed, but only to a regular file."""
    folder, spec, weights = written(tmp_path)
    blob = tmp_path / "blobs" / "abc"
    blob.parent.mkdir()
    os.rename(folder / SINGLE, blob)
    (folder / SINGLE).symlink_to(blob)
    assert np.array_equal(checkpoint_weights(folder, spec, FAMILIES["llama"][0])["embedding.E"], weights["embedding.E"])
    (folder / SINGLE).unlink()
    (folder / SINGLE).symlink_to("/dev/zero")
    with pytest.raises(ArrayError, match="is a character device"):
        Checkpoint(folder)


def test_a_shard_whose_header_runs_past_the_file_is_refused(tmp_path):
    folder, spec, _ = written(tmp_path)
    data = bytearray((folder / SINGLE).read_bytes())
    data[:8] = (len(data) + 10).to_bytes(8, "little")
    (folder / SINGLE).write_bytes(bytes(data))
    with pytest.raises(ArrayError, match="runs past the end of the file"):
        Checkpoint(folder)


# -- bfloat16 ---------------------------------------------------------------------------------------------


def _bf16_file(path: Path, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A safetensors file of BF16 tensors (float32 rounded to nearest even), written by hand; returns the
    float32 values the file holds exactly."""
    header, blobs, offset, exact = {}, [], 0, {}
    for name, x in tensors.items():
        bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # round half to even
        exact[name] = (rounded.astype(np.uint32) << 16).view(np.float32)
        blob = rounded.astype("<u2").tobytes()
        header[name] = {"dtype": "BF16", "shape": list(x.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    head = json.dumps(header).encode()
    path.write_bytes(len(head).to_bytes(8, "little") + head + b"".join(blobs))
    return exact


def test_bfloat16_tensors_are_decoded_exactly(tmp_path):
    folder, spec, weights = written(tmp_path)
    from transformer_cli.io import safetensors_io

    stored = safetensors_io.load(folder / SINGLE)
    exact = _bf16_file(folder / SINGLE, stored)
    read = Checkpoint(folder)
    for name in stored:
        got = read.read(name)
        assert got.dtype == np.float32 and np.array_equal(got, exact[name])
        assert np.max(np.abs(got - stored[name])) <= 2**-8 * np.max(np.abs(stored[name]))  # bf16 keeps 8 bits


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_the_finite_check_finds_the_first_nan_or_inf_and_no_false_one_where_finite_values_overflow_the_sum(dtype, bad):
    """The check every read makes: its fast answer (the sum) and its exact one (entry by entry) agree."""
    from transformer_cli.io.arrays import first_nonfinite

    huge = np.full((6, 5), np.finfo(dtype).max, dtype=dtype)  # finite, but their sum is inf
    assert first_nonfinite(huge) is None and first_nonfinite(huge.T) is None
    huge[2, 3], huge[4, 1] = bad, bad
    assert first_nonfinite(huge) == (2, 3) and first_nonfinite(huge.T) == (1, 4)
    assert first_nonfinite(np.zeros((0, 3), dtype=dtype)) is None
