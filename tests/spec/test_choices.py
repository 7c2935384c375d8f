"""A component's kinds are named once, where each is implemented: the spec's choices are the registries the
component modules fill (transformer_cli/registry.py, spec/choices.py), so a kind registered is a valid spec value
and a name not registered is refused, listing the registry's names in the order they were registered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_cli import kernels
from transformer_cli.components import components
from transformer_cli.components.attention import MultiHeadAttention
from transformer_cli.components.feedforward import ACTIVATION_PER_ENTRY
from transformer_cli.components.positional import Sinusoidal
from transformer_cli.errors import SpecError
from transformer_cli.registry import Registry
from transformer_cli.spec import spec_from_mapping
from transformer_cli.spec.choices import ATTENTIONS, FEEDFORWARDS, NORMS, POSITIONALS
from transformer_cli.spec.schema import spec_schema
from transformer_cli.spec.validate import bad_key

ROOT = Path(__file__).resolve().parents[2]
BASE = {"N": 1, "H": 2, "m": 4, "d": 8, "r": 16}


class Shifted(Sinusoidal):
    """A position scheme the package does not have: the sinusoidal encodings one position on."""


@pytest.fixture
def shifted():
    POSITIONALS.register("shifted")(Shifted)
    yield
    del POSITIONALS["shifted"]


def test_a_kind_registered_by_a_component_is_a_valid_spec_value(shifted):
    spec = spec_from_mapping(BASE | {"positional": "shifted"}, "s.yaml")
    assert spec.positional == "shifted"
    assert any(type(c) is Shifted for c in components(spec))  # the registered class is what the model is made of
    assert spec_schema()["properties"]["positional"]["enum"][-1] == "shifted"


def test_a_name_not_registered_is_refused_in_one_line_listing_the_registry(shifted):
    with pytest.raises(SpecError) as refused:
        spec_from_mapping(BASE | {"positional": "spiral"}, "s.yaml")
    assert str(refused.value) == (
        "s.yaml: key 'positional': got 'spiral', expected one of none, sinusoidal, learned, sinusoidal_fairseq, rope, "
        "relative, learned_relative, alibi, disentangled, shifted"
    )


def test_a_kind_taken_out_of_its_registry_is_no_longer_a_spec_value(monkeypatch):
    spec_from_mapping(BASE | {"feedforward": "clamped"}, "s.yaml")  # the control: registered, accepted
    monkeypatch.delitem(FEEDFORWARDS, "clamped")
    with pytest.raises(SpecError, match="got 'clamped', expected one of plain, gated, limited, xielu, none$"):
        spec_from_mapping(BASE | {"feedforward": "clamped"}, "s.yaml")


def test_the_norm_placements_are_the_layouts_without_the_parallel_blocks_key():
    with pytest.raises(SpecError, match="got 'parallel', expected one of none, pre, post, sandwich, output$"):
        spec_from_mapping(BASE | {"norm": "parallel"}, "s.yaml")
    assert list(NORMS) == ["none", "pre", "post", "sandwich", "output"]


def test_a_kind_registered_twice_is_refused():
    kinds: Registry[int] = Registry("test")
    kinds.register("a")(1)
    with pytest.raises(ValueError, match="test: the kind 'a' is registered twice"):
        kinds.register("a")(2)


def test_a_spec_is_checked_against_the_full_registries_before_any_component_is_imported():
    """The spec may not import the components (tests/architecture): the package fills the registries on their first
    read, so a spec validated before anything imported the components still sees every kind."""
    code = (
        "import json, sys; from transformer_cli.spec import spec_from_mapping; "
        "before = 'transformer_cli.components' in sys.modules; "
        f"spec = spec_from_mapping({BASE!r} | {{'positional': 'rope', 'attention': 'latent', 'kv_rank': 4, "
        "'rope_m': 2, 'norm_type': 'rmsnorm', 'feedforward': 'gated', 'norm': 'sandwich'}, 's.yaml'); "
        "print(json.dumps([before, 'transformer_cli.components' in sys.modules]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [False, True]


def test_every_activation_kernel_has_its_flop_count():
    """The activations are the kernels' registry (spec/choices.py reads it); the costs count each one's FLOPs."""
    assert list(ACTIVATION_PER_ENTRY) == list(kernels.ACTIVATIONS)


class Windowless(MultiHeadAttention):
    """An attention kind of a test's own that refuses a window, as a kind's own check would."""

    @staticmethod
    def check_keys(spec, data, source):
        if spec.window is not None:
            raise bad_key(source, "window", spec.window, "no window with attention: windowless")


def test_the_spec_asks_the_attention_kind_it_names_what_it_needs_of_the_other_keys(monkeypatch):
    """spec/validate.py has no branch on an attention kind: it asks the registered class (latent attention's rules
    live in components/latent.py); the control: the same keys pass with the standard kind."""
    monkeypatch.setitem(ATTENTIONS, "windowless", Windowless)
    causal = BASE | {"mask": "causal", "window": 4}
    assert spec_from_mapping(causal, "s.yaml").window == 4
    with pytest.raises(SpecError) as refused:
        spec_from_mapping(causal | {"attention": "windowless"}, "s.yaml")
    assert str(refused.value) == "s.yaml: key 'window': got 4, expected no window with attention: windowless"
    with pytest.raises(SpecError, match="key 'rope_m': got 3, expected an even number below m = 4"):
        spec_from_mapping(BASE | {"attention": "latent", "positional": "rope", "kv_rank": 4, "rope_m": 3}, "s.yaml")
