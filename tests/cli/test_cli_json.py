"""One JSON shape per idea across commands: `name` and `spec`, snake_case keys, lists where there may be many;
and `tfm diff`'s exit code and comparison by effect."""

from __future__ import annotations

import json
import re

import pytest
from conftest import EXAMPLES

from transformer_cli.cli import app

TINY = next(p for p in EXAMPLES if p.name == "tiny-causal.yaml")
SEED = next(p for p in EXAMPLES if p.name == "seed-plain.yaml")

# Maps keyed by a name (a component, a dtype, a control), whose keys are data, not field names.
NAME_KEYED = (
    "components",
    "by_component",
    "flops_by_component",
    "weights",
    "training_adam",
    "spec",
    "controls",
    "weights_bytes",
)


def data_of(runner, *args, codes=(0,)):
    result = runner.invoke(app, [*map(str, args), "--json"])
    assert result.exit_code in codes, result.output
    return json.loads(result.stdout)


def keys_of(value):
    """Every key of every mapping in a JSON document, except in the maps keyed by names."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            if key not in NAME_KEYED:
                yield from keys_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys_of(item)


@pytest.mark.parametrize(
    "args",
    [
        ["count", TINY, "-n", 8],
        ["verify", TINY, "-n", 4],
        ["verify-equivariance", "-k", 1],
        ["verify-scaling", "--samples", 200],
        ["diff", TINY, SEED],
        ["check", TINY, "-n", 8],
        ["plan", TINY, "-n", 8, "--memory", "1G", "--hardware", "l4"],
    ],
)
def test_json_keys_are_snake_case(runner, args):
    keys = set(keys_of(data_of(runner, *args, codes=(0, 1))))
    assert keys and all(re.fullmatch(r"[a-z][a-z0-9_]*|[A-Z]|[a-z]", k) for k in keys), sorted(keys)


def test_count_has_one_shape_for_one_spec_or_many(runner):
    one, two = data_of(runner, "count", TINY), data_of(runner, "count", TINY, SEED)
    assert list(one) == list(two) == ["specs"] and len(one["specs"]) == 1 and len(two["specs"]) == 2


@pytest.mark.parametrize(
    "args",
    [
        ["count", TINY],
        ["verify", TINY, "-n", 4],
        ["verify-causality", TINY, "-n", 4],
        ["bench", TINY, "-n", 4, "-k", 1, "--no-torch"],
    ],
)
def test_spec_is_the_mapping_and_name_the_label(runner, args):
    data = data_of(runner, *args)
    data = data["specs"][0] if "specs" in data else data
    assert data["name"] == "tiny-causal" and data["spec"]["mask"] == "causal" and data["spec"]["N"] == 2


def test_cost_figures_default_to_float32_everywhere(runner):
    count = data_of(runner, "count", TINY, "-n", 8)["specs"][0]["costs"]["memory"]["forward_peak"]
    diff = data_of(runner, "diff", TINY, TINY, "-n", 8)
    assert count["dtype"] == diff["dtype"] == "float32"


def test_diff_exits_1_when_the_models_differ_and_0_when_they_are_the_same(runner, tmp_path):
    assert data_of(runner, "diff", TINY, SEED, codes=(1,))["differ"] is True
    renamed = tmp_path / "renamed.yaml"
    renamed.write_text(TINY.read_text().replace("name: tiny-causal", "name: other\ndescription: the same model"))
    assert data_of(runner, "diff", TINY, renamed)["differ"] is False


@pytest.mark.parametrize("a, b", [("scale: none", "scale: 1"), ("scale: sqrt", "scale: 0.125"), ("", "scale: 1.0")])
def test_diff_compares_keys_by_effect(runner, tmp_path, a, b):
    base = "N: 1\nH: 1\nm: 64\nd: 4\nr: 4\n"
    (tmp_path / "a.yaml").write_text(base + a + "\n")
    (tmp_path / "b.yaml").write_text(base + b + "\n")
    data = data_of(runner, "diff", tmp_path / "a.yaml", tmp_path / "b.yaml", "-n", 4)
    assert data["exit_code"] == 0 and not any(r["differs"] for r in data["rows"] if r["name"] != "name")


def test_diff_has_the_short_batch_option(runner):
    assert data_of(runner, "diff", TINY, TINY, "-b", 3, "-n", 4)["batch"] == 3
