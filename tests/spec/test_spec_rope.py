"""The rotary keys of a spec: their defaults, and every bad value or combination as a one-line error naming the key."""

from __future__ import annotations

import pytest
from helpers_spec import BASE, error_of, write

from transformer_cli import load_spec

ROPE = BASE + "positional: rope\n"


def test_rope_keys_are_read_with_their_defaults(tmp_path):
    spec = load_spec(write(tmp_path, ROPE))
    assert (spec.rope_theta, spec.rope_fraction, spec.rope_pairing, spec.rope_scaling) == (10000, 1, "half", "none")
    assert (spec.rope_factor, spec.rope_low_freq_factor, spec.rope_high_freq_factor) == (8, 1, 4)
    assert spec.rope_original_max_len == 8192 and spec.rotated_dims == 8
    text = ROPE + "rope_theta: 500000\nrope_fraction: 0.25\nrope_pairing: interleaved\nrope_scaling: llama3\n"
    text += "rope_factor: 32\nrope_low_freq_factor: 2\nrope_high_freq_factor: 8\nrope_original_max_len: 4096\n"
    spec = load_spec(write(tmp_path, text))
    assert (spec.rope_theta, spec.rope_fraction, spec.rope_pairing, spec.rope_scaling) == (
        500000,
        0.25,
        "interleaved",
        "llama3",
    )
    assert (spec.rope_factor, spec.rope_low_freq_factor, spec.rope_high_freq_factor) == (32, 2, 8)
    assert spec.rope_original_max_len == 4096 and spec.rotated_dims == 2


@pytest.mark.parametrize(
    "text, message",
    [
        (
            BASE.replace("m: 8", "m: 7") + "positional: rope\n",
            "keys 'm', 'rope_fraction': int(m * rope_fraction) = int(7 * 1.0) = 7 rotated dims per head, "
            "expected an even number of at least 2",
        ),
        (
            ROPE + "rope_fraction: 0.1\n",
            "keys 'm', 'rope_fraction': int(m * rope_fraction) = int(8 * 0.1) = 0 rotated dims per head, "
            "expected an even number of at least 2",
        ),
        (
            ROPE + "rope_fraction: 0.4\n",
            "keys 'm', 'rope_fraction': int(m * rope_fraction) = int(8 * 0.4) = 3 rotated dims per head, "
            "expected an even number of at least 2",
        ),
        (ROPE + "rope_fraction: 1.5\n", "key 'rope_fraction': got 1.5, expected a number in (0, 1]"),
        (ROPE + "rope_fraction: 0\n", "key 'rope_fraction': got 0, expected a number in (0, 1]"),
        (ROPE + "rope_theta: 0\n", "key 'rope_theta': got 0, expected a positive number"),
        (
            ROPE + "rope_pairing: gptj\n",
            "key 'rope_pairing': got 'gptj', expected one of half, interleaved, half_reversed, proportional",
        ),
        (
            BASE + "rope_theta: 500000\n",
            "key 'rope_theta': got 500000, expected no rope_theta unless positional is rope",
        ),
        (
            BASE + "positional: learned\nmax_len: 8\nrope_fraction: 0.5\n",
            "key 'rope_fraction': got 0.5, expected no rope_fraction unless positional is rope",
        ),
        (
            BASE + "rope_scaling: llama3\n",
            "key 'rope_scaling': got 'llama3', expected no rope_scaling unless positional is rope",
        ),
        (
            ROPE + "rope_factor: 8\n",
            "key 'rope_factor': got 8, expected no rope_factor unless rope_scaling is llama3 or linear or dynamic "
            "or yarn or longrope",
        ),
        (
            ROPE + "rope_scaling: linear\nrope_original_max_len: 64\n",
            "key 'rope_original_max_len': got 64, expected no rope_original_max_len unless rope_scaling is llama3 "
            "or dynamic or yarn or longrope",
        ),
        (
            ROPE + "rope_scaling: longrope\nrope_long_factor: [1, 2, 3, 4]\n",
            "key 'rope_short_factor': missing, expected a list of positive numbers when rope_scaling is longrope",
        ),
        (
            ROPE + "rope_scaling: longrope\nrope_short_factor: [1, 2]\nrope_long_factor: [1, 2, 3, 4]\n",
            "key 'rope_short_factor': got 2 numbers, expected rot/2 = 4 (one per rotated pair)",
        ),
        (
            ROPE + "rope_scaling: longrope\nrope_short_factor: [1, 0, 1, 1]\nrope_long_factor: [1, 2, 3, 4]\n",
            "key 'rope_short_factor': got [1, 0, 1, 1], expected a list of positive numbers",
        ),
        (
            ROPE + "rope_scaling: yarn\nrope_long_factor: [1, 2, 3, 4]\n",
            "key 'rope_long_factor': got [1, 2, 3, 4], expected no rope_long_factor unless rope_scaling is longrope",
        ),
        (
            ROPE + "rope_scaling: dynamic\nrope_fraction: 0.25\n",
            "key 'rope_scaling': 'dynamic' needs more than 2 rotated dims per head (its base's exponent is rot / "
            "(rot - 2)), got rot = int(8 * 0.25) = 2",
        ),
        (
            ROPE + "rope_scaling: llama3\nrope_beta_fast: 16\n",
            "key 'rope_beta_fast': got 16, expected no rope_beta_fast unless rope_scaling is yarn",
        ),
        (
            ROPE + "rope_scaling: yarn\nrope_truncate: no\n",
            "key 'rope_truncate': got 'no', expected true or false (YAML 1.2 reads no as a string)",
        ),
        (
            ROPE + "rope_scaling: llama3\nrope_low_freq_factor: 5\n",
            "key 'rope_high_freq_factor': got 4.0, expected at least rope_low_freq_factor = 5 (equal: no band "
            "between, Llama 4's)",
        ),
    ],
)
def test_bad_rope_keys_are_one_line_errors(tmp_path, text, message):
    assert error_of(tmp_path, text).endswith("/spec.yaml: " + message)
