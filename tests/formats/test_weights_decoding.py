"""Issue 47: a block's tensors decoded once, into the arrays the pass uses. A bfloat16 file's tensors are decoded
from the file's bytes straight into their stacks (W_Q over W_K over W_V, W1 over W3) or into the memory of blocks
dropped, never into an array of their own first; a GGUF file's quantised embedding and head are kept as the file's
rows, dequantised as the pass asks. The numbers are the ones of the model made up front (test_weights_modes.py
checks every format bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_weights_modes import IDS, make_big, make_files, mode_figures

import transformer_cli as tfm
from transformer_cli.analysis.modes import Mode, build
from transformer_cli.tasks.sources import load_weights

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_files(tmp_path_factory.mktemp("decoding"))


@pytest.fixture(scope="module")
def big(files):
    return make_big(files / "big")


@pytest.mark.parametrize("name, in_place", [("hf-bf16", True), ("hf-sharded", True), ("hf-f16", False)])
def test_a_blocks_bfloat16_tensors_are_decoded_once_into_their_stacks_and_the_memory_of_blocks_dropped(
    files, monkeypatch, name, in_place
):
    """W_Q over W_K over W_V and W1 over W3: each bfloat16 tensor decoded from the file's bytes straight into its
    rows, never made as an array of its own first and copied (issue 47); the others into memory a dropped block
    held. The same numbers as stacking the tensors read one by one. W_O, which the file's layout makes a transposed
    view, is read as before; the control: float16 tensors are read and copied in (nothing to decode in place)."""
    from transformer_cli.hf.weights import CheckpointWeights

    path = files / name
    spec = tfm.load(path).spec
    asked = []
    original = CheckpointWeights.__getitem__
    monkeypatch.setattr(CheckpointWeights, "__getitem__", lambda self, key: asked.append(key) or original(self, key))
    model = build(spec, load_weights(path, spec), "float32", Mode("streamed", mode_figures(path)["streamed"], ""))
    W1 = model.weights.block(1)[1].W1
    read = {key for key in asked if key.startswith("blocks.1.")}
    if in_place:
        assert read == {"blocks.1.attention.W_O"}
    else:
        assert {"blocks.1.ff.W1", "blocks.1.ff.W3", "blocks.1.ff.W2", "blocks.1.attention.W_Q"} <= read
    plain = load_weights(path, spec)
    assert np.array_equal(W1, np.concatenate([plain["blocks.1.ff.W1"], plain["blocks.1.ff.W3"]]).astype(np.float32))


def test_the_memory_of_a_dropped_block_is_written_again_but_never_while_the_block_is_held(files):
    """A streamed model decodes each block into the memory of blocks dropped: after two passes it holds two blocks'
    arrays, not one per block made. A block someone still holds (a thread's part of the batch, a check) is not
    written over: its arrays are the same after the passes made and dropped every other block again."""
    path = files / "hf-bf16"
    spec = tfm.load(path).spec
    model = build(spec, load_weights(path, spec), "float32", Mode("streamed", mode_figures(path)["streamed"], ""))
    held = model.weights.block(1)  # held here, as a thread of the pass would
    before = [a.copy() for a in (held[0].W_qkv, held[1].W1, held[1].W2)]
    expected = tfm.load(path).transformer("float32").forward(IDS)
    for _ in range(2):
        assert np.array_equal(model.forward(IDS), expected)
    assert all(np.array_equal(a, b) for a, b in zip(before, (held[0].W_qkv, held[1].W1, held[1].W2), strict=True))
    buffers = model.weights.buffers
    per_block = sum(a.nbytes for a in (held[0].W_qkv, held[1].W1, held[1].W2))
    assert model.weights.prepared > 2 * spec.N and sum(b.nbytes for b in buffers.held) <= 3 * per_block + 2**20


@pytest.mark.parametrize("name", ["m-q8_0.gguf", "m-q4_0.gguf", "m-q4_k.gguf", "big/q8_0.gguf", "m-f16.gguf"])
def test_a_gguf_files_quantised_embedding_and_head_are_held_as_stored_and_dequantised_as_used(files, big, name):
    """Not all resident, a model keeps a GGUF file's quantised vocabulary matrices as the file's rows: the
    embedding's columns and the head's rows are the gguf package's dequantisation of the whole tensor (the
    embedding is (d, V) of the file's (V, d) rows, told apart by its layout, not its shape: big's d = V = 512), and
    the streamed estimate counts their stored bytes. The control: an f16 file's are kept as they are."""
    import gguf
    from gguf.quants import dequantize

    from transformer_cli.gguf.tensors import QuantisedRows

    path = files / name
    spec = tfm.load(path).spec
    weights = load_weights(path, spec)
    model = build(spec, weights, "float32", Mode("streamed", mode_figures(path)["streamed"], ""))
    tensors = {t.name: t for t in gguf.GGUFReader(path).tensors}
    quantised = name != "m-f16.gguf"
    assert isinstance(model.W_E.held, QuantisedRows) == quantised
    assert weights.held().rows == ({"embedding.E", "head.W"} if quantised else set())
    if quantised:
        E = dequantize(tensors["token_embd.weight"].data, tensors["token_embd.weight"].tensor_type)  # (V, d)
        ids = np.array([[3, 0, 3], [spec.V - 1, 7, 1]])
        assert np.array_equal(model.W_E[:, ids], E.T[:, ids])
        head = dequantize(tensors["output.weight"].data, tensors["output.weight"].tensor_type)
        assert np.array_equal(model.W_head[2 : spec.V - 1], head[2 : spec.V - 1])
        held = weights.held()
        vocabulary = held.tensors["embedding.E"] + held.tensors["head.W"]
        assert vocabulary <= 2 * spec.V * spec.d * 9 // 8  # (9 bits a weight at most: their float32, 32)


@pytest.mark.parametrize("kind, size", [(8, 34), (2, 18)])
def test_tfms_own_q8_0_and_q4_0_dequantisers_give_the_gguf_packages_numbers_bit_for_bit(kind, size):
    """Random blocks with random float16 scales (inf and NaN among them), and one block by hand."""
    import gguf
    from gguf.quants import dequantize

    from transformer_cli.gguf.tensors import dequantised

    rng = np.random.default_rng(kind)
    raw = rng.integers(0, 256, size=(3, 5, 4 * size), dtype=np.uint8)
    blocks = raw.reshape(-1, size)
    scales = rng.normal(scale=100, size=blocks.shape[0]).astype(np.float16)
    scales[:3] = [np.inf, np.nan, 0.0]
    blocks[:, :2] = scales.view(np.uint8).reshape(-1, 2)
    ours, theirs = dequantised(raw, kind), dequantize(raw, gguf.GGMLQuantizationType(kind))
    assert ours.shape == theirs.shape == (3, 5, 128) and np.array_equal(ours, theirs, equal_nan=True)
    block = np.zeros(size, np.uint8)
    block[:2] = np.array([0.5], np.float16).view(np.uint8)
    block[2:] = np.arange(size - 2, dtype=np.uint8) if kind == 8 else 0x1F  # Q4_0: low nibble 15, high 1
    expected = 0.5 * (np.arange(32) if kind == 8 else np.repeat([15 - 8, 1 - 8], 16))
    assert np.array_equal(dequantised(block.reshape(1, size), kind), expected.reshape(1, 32).astype(np.float32))
