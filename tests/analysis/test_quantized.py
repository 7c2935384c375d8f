"""Weights in deployed element types (issue 14, item 2): what is packed, what stays bfloat16, and the scales."""

from __future__ import annotations

from transformer_cli import Spec, count_params
from transformer_cli.analysis.quantized import tensor_bytes, weight_bytes

# one block: W_Q, W_K, W_V (2, 4, 8), W_O (2, 8, 4), W1 (12, 8), W2 (8, 12); norms; E (8, 10), head (10, 8)
SPEC = Spec(N=1, H=2, m=4, d=8, r=12, V=10, norm="pre", ff_bias=False)


def test_the_plain_types_are_the_count_times_the_element_size():
    total = count_params(SPEC).total
    assert weight_bytes(SPEC)["float32"] == 4 * total and weight_bytes(SPEC)["bfloat16"] == 2 * total


def test_block_matrices_are_packed_with_their_scales_and_the_rest_stays_bfloat16():
    packed = 4 * 2 * 4 * 8 + 2 * 12 * 8  # the four attention matrices and the two feedforward ones: 448 entries
    kept = count_params(SPEC).total - packed  # embedding, head, norms
    rows = 3 * 8 + 8 + 12 + 8  # output rows: Q, K, V (2 heads x 4 each), O (d = 8), W1 (r = 12), W2 (d = 8)
    assert weight_bytes(SPEC)["int8"] == packed + 2 * rows + 2 * kept
    assert weight_bytes(SPEC)["float8"] == packed + 4 * 6 + 2 * kept  # a float32 scale per tensor
    # int4: half a byte an element, a float16 scale and zero point per group of 128 inputs (one group per row
    # here: every row has 8 or 12 inputs)
    assert weight_bytes(SPEC)["int4"] == packed // 2 + 4 * rows + 2 * kept


def test_int4_groups_split_long_rows_and_the_output_projection_reads_its_heads_as_inputs():
    # W_O (H = 3, d = 5, m = 100): 5 rows of 300 inputs, each in 3 groups of at most 128
    assert tensor_bytes("blocks.0.attention.W_O", (3, 5, 100))["int4"] == 1500 // 2 + 4 * 5 * 3
    assert tensor_bytes("blocks.0.ff.router", (8, 64))["int4"] == 2 * 8 * 64  # routers stay bfloat16
    assert tensor_bytes("embedding.E", (64, 1000))["int8"] == 2 * 64 * 1000  # the embedding too


def test_counting_a_huge_model_is_instant():
    big = Spec(N=10**6, H=96, m=128, d=12288, r=49152, V=50000)
    assert weight_bytes(big)["int4"] > 0  # one block counted and multiplied, never a million tensors listed
