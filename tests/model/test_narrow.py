"""A matrix kept narrow (model/narrow.py): bfloat16 values in 2 bytes an element, widened exactly in pieces, and the
head's product a slice of rows at a time equal to the whole product bit for bit, in either memory layout."""

from __future__ import annotations

import numpy as np
import pytest

from transformer_cli import kernels
from transformer_cli.model import narrow
from transformer_cli.model.narrow import Narrow

torch = pytest.importorskip("torch")


def _bfloat16_values(shape, seed=0) -> np.ndarray:
    """float32 values that are each a bfloat16 (rounded by PyTorch)."""
    values = torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
    return values.to(torch.bfloat16).float().numpy()


def test_bfloat16_values_are_held_in_two_bytes_and_widened_exactly():
    E = _bfloat16_values((32, 300))
    held = Narrow(E)
    assert held.nbytes == E.nbytes // 2 and held.shape == E.shape
    ids = np.array([[3, 299, 0], [7, 7, 150]])
    assert np.array_equal(held[:, ids], E[:, ids]) and held[:, ids].dtype == np.float32
    assert np.array_equal(held.widened((slice(None), ids), np.dtype(np.float64)), E[:, ids].astype(np.float64))
    assert np.array_equal(held.T[5:9], E.T[5:9])


def test_values_no_bfloat16_holds_are_kept_as_they_are():
    E = np.random.default_rng(1).standard_normal((16, 50)).astype(np.float32)  # the control: not bfloat16 values
    held = Narrow(E)
    assert held.nbytes == E.nbytes and np.array_equal(held[:, [1, 2]], E[:, [1, 2]])
    halves = E.astype(np.float16)
    assert Narrow(halves).nbytes == halves.nbytes and Narrow(halves)[:, [4]].dtype == np.float16
    one_bit_off = _bfloat16_values((4, 8))
    one_bit_off.view(np.uint32)[2, 3] |= 1  # one value below bfloat16's precision: the whole matrix stays float32
    assert Narrow(one_bit_off).nbytes == one_bit_off.nbytes and np.array_equal(Narrow(one_bit_off)[:, :], one_bit_off)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transposed", [False, True])
def test_the_head_a_slice_at_a_time_is_the_whole_product_bit_for_bit(monkeypatch, dtype, transposed):
    monkeypatch.setattr(narrow, "SLICE_BYTES", 1)  # slices of SLICE_ROWS (512) rows: six over 3000 rows
    W = _bfloat16_values((64, 3000)).T if transposed else _bfloat16_values((3000, 64))
    X = np.random.default_rng(2).standard_normal((64, 2, 7)).astype(dtype)
    whole = kernels.linear(W.astype(dtype), X)
    assert np.array_equal(narrow.linear(Narrow(W), X), whole)
    scaled = narrow.linear(Narrow(W) * 1e3, X)
    assert np.array_equal(scaled, kernels.linear(W.astype(dtype) * 1e3, X))
    assert not np.array_equal(scaled, whole)  # the control: the factor is applied


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("out", [False, True])
def test_bfloat16_widened_over_several_threads_is_each_bit_pattern_shifted_keeping_the_layout(
    monkeypatch, transposed, out
):
    """The widening's rows shared over threads (here from 64 elements up, on 3 parts): every float32 is the
    bfloat16 bits followed by 16 zero bits, computed here one by one in Python integers."""
    monkeypatch.setattr(kernels, "WIDEN_PART", 64)
    monkeypatch.setattr(kernels, "cores", lambda: 3)
    bits = np.random.default_rng(2).integers(0, 1 << 16, size=(37, 29), dtype=np.uint16)
    bits = bits.T if transposed else bits
    given = np.empty(bits.shape, np.float32) if out else None
    wide = kernels.bfloat16_to_float32(bits, given)
    expected = np.array([[int(b) << 16 for b in row] for row in bits.tolist()], dtype=np.uint32).view(np.float32)
    assert np.array_equal(wide.view(np.uint32), expected.view(np.uint32))
    assert wide.flags.f_contiguous == (transposed and not out)  # a new array keeps the bits' layout
    assert given is None or wide.base is given or wide is given
