"""Spec loading: every valid key, and an error naming file, key, value and expectation for each bad one."""

from __future__ import annotations

import math

import pytest
from conftest import EXAMPLES

from transformer_cli import DEFAULT_SPEC, Spec, SpecError, load_spec, spec_from_mapping

BASE = "N: 2\nH: 4\nm: 8\nd: 32\nr: 64\n"


def write(tmp_path, text: str | bytes, name: str = "spec.yaml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def error_of(tmp_path, text: str | bytes) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, text))
    message = str(info.value)
    assert "spec.yaml" in message and "\n" not in message
    return message


def test_minimal_spec_defaults_to_the_seed(tmp_path):
    spec = load_spec(write(tmp_path, BASE))
    assert (spec.N, spec.H, spec.m, spec.d, spec.r) == (2, 4, 8, 32, 64)
    assert (spec.scale, spec.mask, spec.positional, spec.norm, spec.attention_bias, spec.activation) == (
        "none", "none", "none", "none", False, "relu",
    )  # fmt: skip
    assert spec.score_scale == 1.0 and spec.name == "spec"


def test_default_spec_is_the_documented_one():
    assert load_spec(None) == DEFAULT_SPEC
    assert (DEFAULT_SPEC.N, DEFAULT_SPEC.H, DEFAULT_SPEC.m, DEFAULT_SPEC.d, DEFAULT_SPEC.r) == (2, 4, 8, 32, 64)


def test_every_variant_key_is_read(tmp_path):
    text = BASE + "scale: sqrt\nmask: causal\npositional: learned\nmax_len: 12\nnorm: pre\nnorm_eps: 1.0e-6\n"
    text += "attention_bias: true\nactivation: gelu\nname: x\ndescription: y\n"
    spec = load_spec(write(tmp_path, text))
    assert spec.score_scale == pytest.approx(1 / math.sqrt(8))
    assert (spec.mask, spec.positional, spec.max_len, spec.norm, spec.norm_eps) == (
        "causal",
        "learned",
        12,
        "pre",
        1e-6,
    )
    assert spec.attention_bias and spec.activation == "gelu" and spec.name == "x"


def test_numeric_scale(tmp_path):
    assert load_spec(write(tmp_path, BASE + "scale: 0.25\n")).score_scale == 0.25
    assert load_spec(write(tmp_path, BASE + "scale: 2\n")).score_scale == 2.0


def test_m_need_not_be_d_over_h(tmp_path):
    assert load_spec(write(tmp_path, "N: 1\nH: 3\nm: 5\nd: 7\nr: 2\n")).m == 5


@pytest.mark.parametrize(
    "text, words",
    [
        ("N: [1, 2\n", ["invalid YAML", "line 2", "column"]),
        ("N: 1\n  H: 2\n", ["invalid YAML", "line 2"]),
        ("- 1\n- 2\n", ["expected a mapping", "list"]),
        ("", ["expected a mapping", "empty"]),
        ("# only a comment\n", ["expected a mapping", "empty"]),
        ("N: 2\nH: 4\nm: 8\nd: 32\n", ["missing required key r"]),
        ("H: 4\nm: 8\nd: 32\n", ["missing required keys N, r"]),
        (BASE + "rr: 3\n", ["unknown key 'rr'", "did you mean 'r'"]),
        (BASE + "sacle: sqrt\n", ["unknown key 'sacle'", "did you mean 'scale'"]),
        (BASE.replace("r: 64", "r: true"), ["key 'r'", "got true", "positive integer"]),
        (BASE.replace("r: 64", "r: '64'"), ["key 'r'", "'64'", "positive integer"]),
        (BASE.replace("r: 64", "r: 64.0"), ["key 'r'", "64.0", "positive integer"]),
        (BASE.replace("r: 64", "r: 1e3"), ["key 'r'", "'1e3'", "positive integer"]),
        (BASE.replace("N: 2", "N: 0"), ["key 'N'", "got 0", "positive integer"]),
        (BASE.replace("H: 4", "H: -4"), ["key 'H'", "got -4", "positive integer"]),
        (BASE.replace("d: 32", "d: ~"), ["key 'd'", "got null", "positive integer"]),
        (BASE + "scale: cube\n", ["key 'scale'", "'cube'", "none, sqrt or a positive number"]),
        (BASE + "scale: -1\n", ["key 'scale'", "-1", "positive number"]),
        (BASE + "mask: future\n", ["key 'mask'", "'future'", "one of none, causal"]),
        (BASE + "positional: rotary\n", ["key 'positional'", "one of none, sinusoidal, learned"]),
        (BASE + "positional: learned\n", ["key 'max_len'", "missing"]),
        (BASE + "max_len: 8\n", ["key 'max_len'", "unless positional is learned"]),
        (BASE + "norm: pre\nnorm_eps: 0\n", ["key 'norm_eps'", "positive number"]),
        (BASE + "norm_eps: 1.0e-5\n", ["key 'norm_eps'", "unless norm is pre or post"]),
        (BASE + "attention_bias: 1\n", ["key 'attention_bias'", "true or false"]),
        (BASE + "activation: tanh\n", ["key 'activation'", "one of relu, gelu"]),
        (BASE + "x: &a [1]\ny: *a\n", ["aliases"]),
        (BASE + "---\n" + BASE, ["2 YAML documents"]),
        (BASE + "n: !!python/object:os.system ls\n", ["invalid YAML"]),
    ],
)
def test_bad_specs_name_the_problem(tmp_path, text, words):
    message = error_of(tmp_path, text)
    for word in words:
        assert word in message, message


def test_bom_is_accepted_and_non_utf8_is_not(tmp_path):
    assert load_spec(write(tmp_path, b"\xef\xbb\xbf" + BASE.encode())).r == 64
    assert "not UTF-8" in error_of(tmp_path, b"N: 2\nname: \xff\xfe\n")


def test_hex_integers_are_integers(tmp_path):
    assert load_spec(write(tmp_path, BASE.replace("r: 64", "r: 0x40"))).r == 64


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(SpecError, match="no such spec file"):
        load_spec(tmp_path / "nope.yaml")
    with pytest.raises(SpecError, match="is a directory"):
        load_spec(tmp_path)


def test_oversized_file_is_refused_unread(tmp_path):
    with pytest.raises(SpecError, match="at most"):
        load_spec(write(tmp_path, BASE + "#" * (1 << 20)))


def test_mapping_api_names_its_source():
    with pytest.raises(SpecError, match="my-dict: key 'N'"):
        spec_from_mapping({"N": 0, "H": 1, "m": 1, "d": 1, "r": 1}, "my-dict")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_loads(path):
    assert isinstance(load_spec(path), Spec)


def test_to_dict_round_trips(tmp_path):
    text = BASE + "scale: sqrt\nmask: causal\npositional: learned\nmax_len: 12\nnorm: post\nactivation: gelu\n"
    spec = load_spec(write(tmp_path, text))
    assert spec_from_mapping(spec.to_dict(), "again") == spec
