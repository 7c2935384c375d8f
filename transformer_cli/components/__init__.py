"""The components a spec is made of, from the registry of each kind.

Order matters and is the weights file's: the block's components in the order of the pass (attention,
feedforward, residuals, norms), then the input's (embedding, positions) and the output's (final norm, head).
"""

from __future__ import annotations

from ..errors import SpecError
from ..spec.definition import Spec
from .attention import MultiHeadAttention
from .base import Component, Pairs, Tensor, Term
from .embedding import embedding, head, pooler
from .encoder import decoder_extras, encoder_block_components, encoder_model_components
from .experts import block_feedforward
from .norm import block_norm, final_norm
from .positional import POSITIONALS
from .residual import Residuals


def components(spec: Spec) -> list[Component]:
    """Every component of `spec`: the block's, then the input's and the output's."""
    return [
        MultiHeadAttention(spec),
        *decoder_extras(spec),
        block_feedforward(spec),
        Residuals(spec),
        block_norm(spec),
        embedding(spec),
        POSITIONALS[spec.positional](spec),
        final_norm(spec),
        head(spec),
        pooler(spec),
    ]


def block_components(spec: Spec) -> list[Component]:
    return [c for c in components(spec) if c.where == "block"]


def model_components(spec: Spec) -> list[Component]:
    """The components outside the blocks: the input's first, then the output's."""
    outside = [c for c in components(spec) if c.where != "block"]
    return sorted(outside, key=lambda c: c.where != "input")


def check_one_stack(spec: Spec, what: str) -> None:
    """Refuse an encoder-decoder where tfm handles one stack only so far (estimates, verify, attention maps)."""
    if spec.N_enc:
        raise SpecError(
            f"{spec.label}: {what} of encoder-decoders (N_enc) come next; tfm count, init, run --target and verify "
            "take them"
        )


def is_causal(spec: Spec) -> bool:
    """Whether some component makes column t independent of the columns after it (theory for verify)."""
    return any(c.causal() for c in components(spec))


def reach(spec: Spec) -> int | None:
    """The receptive field: output column t depends on input columns t - reach .. t only (None: on all of them)."""
    reaches = [r for c in components(spec) if (r := c.reach()) is not None]
    return min(reaches) if reaches else None


__all__ = [
    "Component",
    "block_feedforward",
    "Pairs",
    "Tensor",
    "Term",
    "block_components",
    "check_one_stack",
    "components",
    "encoder_block_components",
    "encoder_model_components",
    "is_causal",
    "model_components",
    "reach",
]
