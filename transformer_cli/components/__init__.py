"""The components a spec is made of, from the registry of each kind.

Order matters and is the weights file's: the block's components in the order of the pass (attention,
feedforward, residuals, norms), then the input's (embedding, positions) and the output's (final norm, head).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import SpecError
from ..spec.choices import ATTENTIONS
from ..spec.definition import Spec
from ..spec.dependent import LATENT
from ..spec.stacks import decoder, stacks
from .altup import AltUpState, AltUpStreams, altup_parts
from .attention import MultiHeadAttention
from .base import Component, Pairs, Tensor, Term
from .compressed import SharedKVAttention  # noqa: F401 (registers `attention: shared_kv, compressed, ..._sparse`)
from .deltanet import GatedDeltaNet  # noqa: F401 (registers the spec's `attention: deltanet`)
from .disentangled import Disentangled  # noqa: F401 (registers the spec's `positional: disentangled`)
from .embedding import embedding, head, pooler
from .encoder import decoder_extras, encoder_block_components, encoder_model_components
from .experts import block_feedforward
from .hyper import GatedState, HyperHead, HyperState, hyper_parts
from .indexed import IndexedAttention  # noqa: F401 (registers the spec's `attention: indexed`)
from .kda import KimiDeltaAttention  # noqa: F401 (registers the spec's `attention: kda`)
from .latent import LatentAttention  # noqa: F401 (registers the spec's `attention: latent`)
from .mamba import Mamba  # noqa: F401 (registers the spec's `attention: mamba`)
from .mamba2 import Mamba2  # noqa: F401 (registers the spec's `attention: mamba2`)
from .memory import MemoryState, memory_parts  # (registers the spec's `attention: mamba2_memory`)
from .mixer import NoMixer  # noqa: F401 (registers the spec's `attention: none`)
from .moa import MixtureOfHeads  # noqa: F401 (registers the spec's `attention: mixture`)
from .ngram import ngram_parts
from .norm import block_norm, final_norm
from .parallel_mixer import AttentionMamba2  # noqa: F401 (registers the spec's `attention: attention_mamba2`)
from .per_layer import per_layer_input, per_layer_inputs
from .pooled import PooledIndexAttention  # noqa: F401 (registers the spec's `attention: indexed_pool`)
from .positional import POSITIONALS
from .qsa import BlockIndexAttention  # noqa: F401 (registers the spec's `attention: qsa`)
from .residual import Residuals
from .reused import ReusedAttention
from .short_conv import ShortConv  # noqa: F401 (registers the spec's `attention: short_conv`)
from .stream_experts import StreamExperts  # noqa: F401 (registers the spec's `expert_norms`)


def attention_component(spec: Spec) -> MultiHeadAttention:
    """The block's attention: heads of W_Q, W_K, W_V (standard), or keys and values from a latent (latent); a block
    of kv_shared's (Gemma 4's) its queries alone, the keys and values an earlier block's (reused.py)."""
    if spec.kv_reused and spec.attention not in LATENT:  # (a latent block reusing latents is its kind's own)
        return ReusedAttention(spec)
    return ATTENTIONS[spec.attention](spec)


def attends(spec: Spec, i: int) -> bool:
    """Whether block i's mixer is attention (weights to show), or holds one beside another mixer (Falcon-H1's),
    not another mixer alone (LFM2's convolutions)."""
    mixer = attention_component(decoder(spec).layer(i))
    return isinstance(mixer, MultiHeadAttention) or isinstance(getattr(mixer, "attention", None), MultiHeadAttention)


def block_components(spec: Spec) -> list[Component]:
    """One block's components, in the order of the pass, for a spec whose blocks are alike (a group's: stacks.py)."""
    return [
        attention_component(spec),
        *decoder_extras(spec),
        block_feedforward(spec),
        *per_layer_input(spec),
        *altup_parts(spec),
        *hyper_parts(spec),
        *ngram_parts(spec),
        Residuals(spec),
        block_norm(spec),
    ]


def stream_state(spec: Spec, get: Callable[[str], Any]) -> AltUpState | HyperState | GatedState | MemoryState | None:
    """The model's residual streams ready for the pass, where it carries several (AltUp's, hyper-connections', the
    embedded columns beside the stream for Zamba2's shared blocks)."""
    if spec.mem_blocks:
        return MemoryState(spec, get)
    if not spec.hc_streams:
        return AltUpState(spec, get) if spec.altup else None
    return GatedState(spec, get) if spec.hc_form == "gated" else HyperState(spec, get)


def outside_components(spec: Spec) -> list[Component]:
    """The components outside the blocks, in the order of the registry (the rows of the costs)."""
    return [
        embedding(spec),
        per_layer_inputs(spec),
        AltUpStreams(spec) if spec.altup else Component(spec),
        POSITIONALS[spec.positional](spec),
        HyperHead(spec) if spec.hc_streams else Component(spec),
        *memory_parts(spec),
        final_norm(spec),
        head(spec),
        pooler(spec),
    ]


def components(spec: Spec) -> list[Component]:
    """Every component of `spec`'s one stack: each group of alike blocks' (its spec's N its blocks), then the
    input's and the output's."""
    groups = [c for group in decoder(spec).groups() for c in block_components(group.spec)]
    return groups + outside_components(spec)


def model_components(spec: Spec) -> list[Component]:
    """The components outside the blocks: the input's first, then the output's."""
    return sorted(outside_components(spec), key=lambda c: c.where != "input")


def check_one_stack(spec: Spec, what: str) -> None:
    """Refuse an encoder-decoder where tfm handles one stack only so far (estimates, verify, attention maps)."""
    if len(stacks(spec)) > 1:
        raise SpecError(
            f"{spec.label}: {what} of encoder-decoders (N_enc) come next; tfm count, init, run --target and verify "
            "take them"
        )


def is_causal(spec: Spec) -> bool:
    """Whether some component makes column t independent of the columns after it (theory for verify)."""
    return any(c.causal() for c in components(spec))


def reach(spec: Spec) -> int | None:
    """The receptive field: output column t depends on input columns t - reach .. t only (None: on all of them).
    Each group of blocks reaches back as far as its components let it; a group that reaches every column (a block
    without a window) makes the whole stack reach every column."""
    total = 0
    for group in decoder(spec).groups():
        reaches = [r for c in block_components(group.spec) if (r := c.reach()) is not None]
        if not reaches:
            return None
        total += min(reaches)
    return total


__all__ = [
    "Component",
    "attends",
    "attention_component",
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
    "ngram_parts",
    "outside_components",
    "reach",
]
