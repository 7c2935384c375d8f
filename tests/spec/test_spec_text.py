"""Spec files as text: numbers as YAML 1.2 and JSON read them, and hostile text (deep nesting, huge integers,
surrogates, control characters, look-alike keys, a weights file given as the spec)."""

from __future__ import annotations

import pytest
from helpers_spec import BASE, error_of, write

from transformer_cli import SpecError
from transformer_cli.spec.load import load_spec  # the YAML reader (transformer_cli.load_spec takes any model)

# -- numbers as YAML 1.2 and JSON read them (issue 9, item 11) --------------------------------------


@pytest.mark.parametrize(
    "spelling, value",
    [
        ("1e-6", 1e-6),
        ("1.0e-6", 1e-6),
        ("1E-6", 1e-6),
        ("1e-05", 1e-5),
        (".5", 0.5),
        ("5.", 5.0),
        ("+2", 2),
        ("0.001", 0.001),
    ],
)
def test_floats_are_read_as_yaml_1_2_reads_them(tmp_path, spelling, value):
    spec = load_spec(write(tmp_path, BASE + f"norm: pre\nnorm_eps: {spelling}\nscale: {spelling}\n"))
    assert spec.norm_eps == value and spec.score_scale == value


@pytest.mark.parametrize(
    "spelling, value",
    [
        ("017", 17),
        ("0017", 17),
        ("0o17", 15),
        ("0x1f", 31),
        ("0x1F", 31),
        ("+64", 64),
        ("64.0", 64),
        ("1e3", 1000),
        ("6.4e1", 64),
    ],
)
def test_integers_are_read_as_yaml_1_2_reads_them(tmp_path, spelling, value):
    spec = load_spec(write(tmp_path, BASE.replace("r: 64", f"r: {spelling}")))
    assert spec.r == value and type(spec.r) is int


def test_a_json_spec_loads(tmp_path):
    text = '{"N": 2, "H": 4, "m": 8, "d": 32, "r": 64, "norm": "pre", "norm_eps": 1e-05, "attention_bias": true}'
    spec = load_spec(write(tmp_path, text, "spec.json"))
    assert spec.norm_eps == 1e-5 and spec.attention_bias is True


@pytest.mark.parametrize(
    "spelling, value", [("true", True), ("True", True), ("TRUE", True), ("false", False), ("FALSE", False)]
)
def test_only_true_and_false_are_booleans(tmp_path, spelling, value):
    assert load_spec(write(tmp_path, BASE + f"attention_bias: {spelling}\n")).attention_bias is value


def test_names_that_yaml_1_1_would_turn_into_numbers_stay_strings(tmp_path):
    for name in ("1:30", "2001-12-14", "yes", "on", "1_000", "0b101", "<<", "="):
        assert load_spec(write(tmp_path, BASE + f"name: {name}\n")).name == name


# -- hostile text (issue 10, items 8 and 10) ----------------------------------------------------------


def test_deep_nesting_is_refused_quickly(tmp_path):
    message = error_of(tmp_path, BASE + "name: " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert "line 6, column 26: key 'name': nested deeper than 20 levels" in message


def test_a_5000_digit_integer_names_the_key(tmp_path):
    message = error_of(tmp_path, BASE.replace("N: 2", "N: " + "7" * 5000))
    assert "key 'N': got an integer of 5,000 digits, expected a positive integer of at most 1,000 digits" in message


def test_a_1000_digit_integer_is_still_read_exactly(tmp_path):
    assert load_spec(write(tmp_path, BASE.replace("N: 2", "N: " + "7" * 1000))).N == int("7" * 1000)


def test_a_lone_surrogate_is_refused_and_shown_escaped(tmp_path):
    message = error_of(tmp_path, BASE + 'name: "a\\ud800b"\n')
    assert "key 'name': got 'a\\ud800b'" in message and "lone surrogate" in message
    message.encode("utf-8")  # printable: the crash was UnicodeEncodeError


@pytest.mark.parametrize("char, name", [("\x00", "U+0000"), ("\x07", "U+0007"), ("\x1b", "U+001B")])
def test_control_characters_give_one_line(tmp_path, char, name):
    message = error_of(tmp_path, BASE + f"name: a{char}b\n")
    assert f"{name} at line 6, column 8 is a control character" in message


def test_escaped_control_characters_are_shown_escaped(tmp_path):
    message = error_of(tmp_path, BASE + 'mask: "causal\\a\\e[31m\\n"\n')
    assert "got 'causal\\x07\\x1b[31m\\n'" in message  # escaped as repr does: one way everywhere


@pytest.mark.parametrize(
    "key, hint",
    [
        ("Ν", "looks like 'N' but is U+039D GREEK CAPITAL LETTER NU"),
        ("Н", "looks like 'H' but is U+041D CYRILLIC CAPITAL LETTER EN"),
        ("ｄ", "looks like 'd' but is U+FF44 FULLWIDTH LATIN SMALL LETTER D"),
        ("nοrm", "looks like 'norm' but holds U+03BF GREEK SMALL LETTER OMICRON"),
    ],
)
def test_look_alike_keys_are_named(tmp_path, key, hint):
    assert hint in error_of(tmp_path, BASE + f"{key}: 3\n")


@pytest.mark.parametrize(
    "name, head, words",
    [
        ("w.safetensors", b"\x10" + b"\x00" * 7 + b"{}", "is a weights file, expected a YAML spec (pass it with -w)"),
        ("w.bin", b"\x02\x00\x00\x00\x00\x00\x00\x00{}", "is a weights file"),
        ("w.npz", b"PK\x03\x04", "is a weights file"),
        ("x.yaml", b"\x93NUMPY\x01\x00", "is a .npy array, expected a YAML spec (pass an input with -i)"),
    ],
)
def test_a_weights_file_given_as_the_spec_is_named(tmp_path, name, head, words):
    path = write(tmp_path, head + b"\x00" * 20, name)
    with pytest.raises(SpecError, match=words.replace("(", r"\(").replace(")", r"\)")):
        load_spec(path)
