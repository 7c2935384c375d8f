"""The spec's choices and the registries that implement them name the same kinds.

The rope scalings and the activations are derived from their registries (spec/rope_scaling.py, kernels.py). The
component kinds cannot be: the spec sits below the components (tests/architecture/test_layers.py), so the
spec's lists are checked against the components' registries here instead.
"""

from __future__ import annotations

from transformer_cli import components
from transformer_cli.components.feedforward import ACTIVATION_PER_ENTRY, FEEDFORWARDS
from transformer_cli.components.norm import NORM_TYPES
from transformer_cli.components.positional import POSITIONALS
from transformer_cli.components.residual import LAYOUTS
from transformer_cli.spec import choices
from transformer_cli.spec.definition import FIELDS


def test_every_component_kind_the_spec_offers_is_registered_and_no_other():
    assert set(choices.POSITIONALS) == set(POSITIONALS)
    assert set(choices.FEEDFORWARDS) == set(FEEDFORWARDS)
    assert set(choices.NORM_TYPES) == set(NORM_TYPES)
    assert set(choices.NORMS) == set(LAYOUTS) - {"parallel"}  # parallel is its own key
    assert set(FIELDS["attention"].metadata["choices"]) == set(components.ATTENTIONS)
    assert set(choices.ACTIVATIONS) == set(ACTIVATION_PER_ENTRY)
