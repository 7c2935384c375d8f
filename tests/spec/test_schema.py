"""The JSON Schema and `tfm diff`: the schema agrees with the loader, and diff shows what differs."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest
import yaml
from conftest import EXAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_cli import SpecError, load_spec, spec_from_mapping
from transformer_cli.cli import app
from transformer_cli.spec.schema import spec_schema

VALIDATOR = jsonschema.Draft202012Validator(spec_schema())
BASE = {"N": 2, "H": 4, "m": 8, "d": 32, "r": 64}


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(spec_schema())


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_is_valid(path):
    VALIDATOR.validate(yaml.safe_load(path.read_text()))


BAD = [
    {**BASE, "rr": 3},
    {k: v for k, v in BASE.items() if k != "r"},
    {**BASE, "N": 0},
    {**BASE, "N": True},
    {**BASE, "N": "2"},
    {**BASE, "scale": "cube"},
    {**BASE, "scale": -1},
    {**BASE, "mask": "future"},
    {**BASE, "positional": "learned"},
    {**BASE, "max_len": 8},
    {**BASE, "norm_eps": 1e-5},
    {**BASE, "norm": "pre", "norm_eps": 0},
    {**BASE, "attention_bias": 1},
    {**BASE, "activation": "tanh"},
    {**BASE, "rope_theta": 500000},
    {**BASE, "positional": "rope", "rope_fraction": 1.5},
    {**BASE, "positional": "rope", "rope_pairing": "gptj"},
    {**BASE, "positional": "rope", "rope_factor": 8},
    {**BASE, "positional": "rope", "rope_scaling": "ntk"},
]


@pytest.mark.parametrize("data", BAD, ids=range(len(BAD)))
def test_the_schema_rejects_what_the_loader_rejects(data):
    with pytest.raises(SpecError):
        spec_from_mapping(data)
    assert not VALIDATOR.is_valid(data)


values = st.one_of(
    st.integers(-3, 5),
    st.floats(-2, 5),
    st.booleans(),
    st.none(),
    st.sampled_from(
        [
            "none",
            "sqrt",
            "causal",
            "learned",
            "sinusoidal",
            "pre",
            "post",
            "gelu",
            "relu",
            "x",
            "rope",
            "half",
            "interleaved",
            "llama3",
        ]
    ),
)
# rope_fraction and the llama3 band factors are left out: what they must satisfy with m and each other is a known gap
keys = st.sampled_from(
    [
        "scale",
        "mask",
        "positional",
        "max_len",
        "norm",
        "norm_eps",
        "attention_bias",
        "activation",
        "N",
        "name",
        "zz",
        "rope_theta",
        "rope_pairing",
        "rope_scaling",
        "rope_factor",
        "rope_original_max_len",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, values, max_size=4))
def test_schema_and_loader_agree_on_random_specs(extra):
    """One set of declarations drives both, so they must agree (64.0 included: an integer in JSON Schema and here)."""
    data = {**BASE, **extra}
    try:
        spec_from_mapping(data)
        loader_ok = True
    except SpecError:
        loader_ok = False
    assert VALIDATOR.is_valid(data) == loader_ok, data


# -- YAML texts: what a YAML 1.2 reader makes of each spelling, against what the loader accepts ----------
# Each spelling is drawn beside the value the YAML 1.2 core schema gives it (yaml.org/spec/1.2.2, 10.3.2),
# written here from the spec's table, not from the loader: the test's oracle is independent of the code.


def _int_spellings(v: int) -> list[tuple[str, int]]:
    out = [(str(v), v), ("+" + str(v) if v >= 0 else str(v), v)]
    if v >= 0:
        out += [("00" + str(v), v), (f"0x{v:x}", v), (f"0x{v:X}", v), (f"0o{v:o}", v)]
    return out


def _float_spellings(x: float) -> list[tuple[str, float]]:
    return [(repr(x), x), (f"{x:e}", float(f"{x:e}")), (f"{x:E}", float(f"{x:E}")), (f"{x:.3f}", float(f"{x:.3f}"))]


STRINGS = [
    "1:30",
    "1_000",
    "0b101",
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "2001-12-14",
    "tRue",
    "0x",
    "1e",
    "e3",
    "0o8",
    "sqrt",
    "none",
    "causal",
    "learned",
    "pre",
    "post",
    "gelu",
    "relu",
    "x",
    ".5.",
    "1.2.3",
]
SPECIAL = [
    ("true", True),
    ("True", True),
    ("TRUE", True),
    ("false", False),
    ("FALSE", False),
    ("~", None),
    ("null", None),
    ("Null", None),
    ("NULL", None),
    ("", None),
    (".inf", math.inf),
    ("-.inf", -math.inf),
    ("+.inf", math.inf),
    ("'17'", "17"),
    ('"1e-6"', "1e-6"),
]

spellings = st.one_of(
    st.integers(-3, 5000).flatmap(lambda v: st.sampled_from(_int_spellings(v))),
    st.sampled_from([64, 1000, 2**40]).map(lambda v: (f"{float(v)!r}", float(v))),  # integral floats: 64.0
    st.sampled_from([1e-6, 1e-5, 0.125, 2.5, 1e3, 3e-300, -0.5, 0.0, 1e300]).flatmap(
        lambda x: st.sampled_from(_float_spellings(x))
    ),
    st.sampled_from([(s, s) for s in STRINGS] + SPECIAL),
)
spec_keys = st.sampled_from(
    [
        "N",
        "H",
        "m",
        "d",
        "r",
        "scale",
        "mask",
        "positional",
        "max_len",
        "norm",
        "norm_eps",
        "attention_bias",
        "activation",
        "name",
        "zz",
    ]
)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.dictionaries(spec_keys, spellings, max_size=4))
def test_schema_and_loader_agree_on_yaml_texts(tmp_path_factory, extra):
    """YAML 1.2 spellings (017, 0o17, 0x1f, 1e-6, 64.0, 1:30, yes, ~, .inf): the schema's verdict on the values
    a YAML 1.2 reader gives is the loader's verdict on the text, and the loader reads the same values."""
    spellings_ = {key: (str(value), value) for key, value in BASE.items()} | extra
    text = "".join(f"{key}: {spelling}\n" for key, (spelling, _) in spellings_.items())
    data = {key: value for key, (_, value) in spellings_.items()}
    path = tmp_path_factory.mktemp("corpus") / "spec.yaml"
    path.write_text(text)
    try:
        spec = load_spec(path)
    except SpecError:
        spec = None
    assert VALIDATOR.is_valid(data) == (spec is not None), (text, data)
    if spec is not None:
        for key, value in data.items():
            expected = spec.score_scale if key == "scale" and not isinstance(value, str) else getattr(spec, key)
            assert expected == value and isinstance(value, str) == isinstance(expected, str), (key, value)


def test_known_gaps_between_schema_and_loader():
    """What JSON Schema cannot say: NaN, a float too large to be an exact integer, integers past 1,000 digits, rotary
    dims int(m * rope_fraction) that are odd or under 2, llama3's high-frequency factor below the low one."""
    rope = {**BASE, "positional": "rope"}
    for data in (
        {**BASE, "norm": "pre", "norm_eps": math.nan},
        {**BASE, "r": 1e20},
        {**BASE, "r": 10**1000},
        {**rope, "m": 7},
        {**rope, "rope_fraction": 0.1},
        {**rope, "rope_scaling": "llama3", "rope_low_freq_factor": 5},
    ):
        assert VALIDATOR.is_valid(data)
        with pytest.raises(SpecError):
            spec_from_mapping(data)


def test_schema_command_prints_the_schema(runner):
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0 and json.loads(result.stdout) == spec_schema()


def test_diff_marks_what_differs(runner):
    a, b = EXAMPLES[0], EXAMPLES[1]
    result = runner.invoke(app, ["diff", str(a), str(b), "-n", "64", "--json"])
    assert result.exit_code == 1, result.output  # like diff(1): 1 when the models differ
    rows = {(r["section"], r["name"]): r for r in json.loads(result.stdout)["rows"]}
    assert rows[("spec", "N")]["differs"] and rows[("parameters", "total")]["differs"]
    assert rows[("spec", "m")]["differs"] is False  # both 64
    table = runner.invoke(app, ["diff", str(a), str(b), "-n", "64"])
    assert table.exit_code == 1 and "differs" in table.stdout and "FLOPs: total" in table.stdout


def test_diff_of_a_spec_with_itself_differs_nowhere(runner):
    result = runner.invoke(app, ["diff", str(EXAMPLES[0]), str(EXAMPLES[0]), "--json"])
    assert not any(r["differs"] for r in json.loads(result.stdout)["rows"])
