"""What a spec says: the Spec and its keys (definition), the YAML 1.2 reader that loads it, and its JSON Schema."""

from .definition import DEFAULT_SPEC, Spec
from .load import load_spec
from .validate import spec_from_mapping

__all__ = ["DEFAULT_SPEC", "Spec", "load_spec", "spec_from_mapping"]
