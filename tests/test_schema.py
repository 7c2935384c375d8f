"""The JSON Schema and `tfm diff`: the schema agrees with the loader, and diff shows what differs."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml
from conftest import EXAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_cli import SpecError, spec_from_mapping
from transformer_cli.cli import app
from transformer_cli.schema import spec_schema

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
]


@pytest.mark.parametrize("data", BAD, ids=range(len(BAD)))
def test_the_schema_rejects_what_the_loader_rejects(data):
    with pytest.raises(SpecError):
        spec_from_mapping(data)
    assert not VALIDATOR.is_valid(data)


values = st.one_of(
    st.integers(-3, 5), st.floats(-2, 5).filter(lambda x: x != int(x)), st.booleans(), st.none(),
    st.sampled_from(["none", "sqrt", "causal", "learned", "sinusoidal", "pre", "post", "gelu", "relu", "x"]),
)  # fmt: skip
keys = st.sampled_from(["scale", "mask", "positional", "max_len", "norm", "norm_eps", "attention_bias", "activation",
                        "N", "name", "zz"])  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, values, max_size=4))
def test_schema_and_loader_agree_on_random_specs(extra):
    """One set of declarations drives both, so they must agree (floats like 64.0 aside, which JSON calls integers)."""
    data = {**BASE, **extra}
    try:
        spec_from_mapping(data)
        loader_ok = True
    except SpecError:
        loader_ok = False
    assert VALIDATOR.is_valid(data) == loader_ok, data


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
