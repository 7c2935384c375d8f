"""A model as stacks of blocks, and the blocks of a stack as groups of layers alike.

A spec describes one stack (a decoder-only model's or an encoder's N blocks) or two: an encoder-decoder's
encoder (N_enc blocks of unmasked self-attention) and its decoder (N blocks, each with a cross-attention to the
encoder's output). The blocks of a stack may differ per layer: `attention_layers` says which blocks attend
through the sliding window and which see every earlier key (Gemma 2/3, gpt-oss, Qwen's layer_types),
`feedforward_layers` which blocks route to experts and which are dense (DeepSeek's first layers, Qwen-MoE's
mlp_only_layers), `positional_layers` which blocks turn by the rotary positions and which attend without positions
(SmolLM3's and Llama 4's NoPE layers), `mixer_layers` which blocks mix their columns with attention and which with
another mixer (LFM2's short convolutions), `norm_layers` which normalise before each sublayer and which after it
(OLMo-Hybrid's). Each is a list of N kinds, or a shorter pattern repeated over the blocks.

Everything that counts, costs or runs a stack walks its `groups()`: the layers alike, each group a spec of its
own whose N is its number of blocks, so a component's figures over a group are its figures for that spec.
A uniform stack is one group, the stack's own spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .choices import (
    ATTENTIONS,
    DENSE,
    FIRST,
    FULL,
    HASHED,
    LATER,
    NO_FEEDFORWARD,
    NOPE,
    OWN_KV,
    REUSED_KV,
    ROTARY,
    ROUTED,
    SLIDING,
)
from .definition import Spec
from .expert_keys import EXPERT_FIELDS

# what may differ between blocks: their kinds, their feedforwards' sizes and sparsity (Gemma 3n's: "r=64", "sparse=0.9")
LAYER_KEYS: tuple[str, ...] = ("attention_layers", "feedforward_layers", "positional_layers", "r_layers")
LAYER_KEYS += ("sparsity_layers", "mixer_layers", "norm_layers", "latent_layers")
SIZE, SPARSE, NORM, LATENTS, NGRAM = "r=", "sparse=", "norm=", "latents=", "ngram="


def encoder_spec(spec: Spec) -> Spec:
    """The encoder stack as a spec of its own: N_enc blocks of unmasked self-attention, no vocabulary or head, the
    decoder's keys but where the spec's `encoder` sets its own (T5Gemma's stacks of their own sizes)."""
    assert spec.N_enc is not None, "only an encoder-decoder has an encoder"
    return replace(
        spec,
        **dict(spec.encoder or ()),
        encoder=None,
        cross_G=None,
        N=spec.N_enc,
        mask="none",
        N_enc=None,
        V=None,
        V_src=None,
        tie_embeddings=False,
        head_bias=False,
        head=True,
        embed_scale="none",
        head_scale="none",
        logit_scale=1.0,
        cross_H=None,
        cross_m=None,
        cross_bias=None,
    )


def kind_of(pattern: tuple[str, ...] | None, i: int, default: str) -> str:
    """Layer i's kind in a pattern repeated over the blocks (None: every layer is `default`)."""
    return default if pattern is None else pattern[i % len(pattern)]


@dataclass(frozen=True)
class Group:
    """Blocks of one stack that are alike: their spec (N = how many they are), their indices, their kinds."""

    spec: Spec
    layers: Sequence[int]  # a range for a uniform stack (N may be 10**100)
    kinds: tuple[str, ...]  # what sets them apart from the stack's other groups: () in a uniform stack

    @property
    def label(self) -> str:
        return ", ".join(self.kinds)


@dataclass(frozen=True)
class Stack:
    """One stack of blocks: its name, its spec (N its blocks), and the prefixes of its tensors.

    Block i's tensors are named f"{prefix}{i}."; what the stack has outside its blocks, `outside` + name.
    """

    name: str  # "blocks" (a decoder-only model, an encoder, an encoder-decoder's decoder) or "encoder"
    spec: Spec
    prefix: str
    outside: str
    reads_memory: bool = False  # each block has a cross-attention to an encoder's output

    def kinds(self, i: int) -> tuple[str, ...]:
        """Block i's kinds, one per per-layer key the stack sets (() when its blocks are alike)."""
        spec = self.spec
        out = []
        if spec.attention_layers is not None:
            out.append(kind_of(spec.attention_layers, i, SLIDING))
        if spec.feedforward_layers is not None:
            out.append(kind_of(spec.feedforward_layers, i, ROUTED))
        if spec.positional_layers is not None:
            out.append(kind_of(spec.positional_layers, i, ROTARY))
        if spec.r_layers is not None:
            out.append(f"{SIZE}{spec.r_layers[i % len(spec.r_layers)]}")
        if spec.sparsity_layers is not None:
            out.append(f"{SPARSE}{spec.sparsity_layers[i % len(spec.sparsity_layers)]!r}")
        if spec.norm_layers is not None:  # (OLMo-Hybrid's: its norms before or after each sublayer, by block)
            out.append(f"{NORM}{kind_of(spec.norm_layers, i, spec.norm)}")
        if spec.latent_layers is not None:  # (Mistral Large 4's: its latents its own, or an earlier block's)
            out.append(f"{LATENTS}{kind_of(spec.latent_layers, i, 'own')}")
        if spec.ngram_blocks is not None:  # (Qwen4's n-gram inputs: each block its own table, or none)
            out.append(f"{NGRAM}{spec.ngram_blocks.index(i) if i in spec.ngram_blocks else None}")
        if spec.mixer_layers is not None:
            out.append(kind_of(spec.mixer_layers, i, spec.attention))
        if not spec.first_attn_norm:  # (block 0 without a norm before its attention: ModernBERT's)
            out.append(FIRST if i == 0 else LATER)
        if spec.kv_shared:  # (Gemma 4's last blocks: an earlier block's keys and values)
            out.append(REUSED_KV if i >= spec.N - spec.kv_shared else OWN_KV)
        return tuple(out)

    @property
    def uniform(self) -> bool:
        keys = all(getattr(self.spec, key) is None for key in LAYER_KEYS) and self.spec.ngram_blocks is None
        return keys and self.spec.first_attn_norm and not self.spec.kv_shared

    def _spec_of(self, kinds: tuple[str, ...], N: int) -> Spec:
        """The spec of `N` blocks of these kinds: the stack's, with the window or the experts where they have them."""
        mixer = kinds[-1] if self.spec.mixer_layers is not None else None  # (kinds() puts the mixer's last)
        kinds = kinds[:-1] if mixer is not None else kinds  # (the others: a mixer's name may be a kind of theirs)
        changes: dict = dict.fromkeys(LAYER_KEYS) | {"N": N, "rope_local_theta": None, "rope_local_fraction": None}
        if FULL in kinds:
            changes["window"] = None
            changes |= {"m": self.spec.full_m} if self.spec.full_m else {}  # (Gemma 4's heads of global_head_dim)
        elif SLIDING in kinds and self.spec.rope_local_theta is not None:  # Gemma 3's local layers
            changes |= {"rope_theta": self.spec.rope_local_theta, "rope_scaling": "none"}
        if SLIDING in kinds and self.spec.rope_local_fraction is not None:  # (Laguna's turn all of each head)
            changes["rope_fraction"] = self.spec.rope_local_fraction
        if SLIDING in kinds:  # (MiMo-V2-Flash's: twice the key/value heads, and sinks; Gemma 4's own W_V)
            changes |= {
                "v_from_k": False,
                "G": self.spec.local_G or self.spec.G,
                "attn_sinks": self.spec.attn_sinks or self.spec.local_sinks,
            }
        changes |= {"local_G": None, "local_sinks": False, "full_m": None}
        if NOPE in kinds:  # no rotary: no positions at all in its attention, no chunks (Llama 4)
            changes |= {"positional": "none", "rope_scaling": "none", "chunk": None}
            changes |= {"rope_m": None, "rope_learned": False}  # (latent attention: its heads all their own)
            if not self.spec.qk_norm_nope:
                changes["qk_norm"] = False
        elif ROTARY in kinds:  # (Llama 4's temperature is its NoPE blocks' alone)
            changes |= {"nope_query_beta": None, "nope_query_len": None}
        if LATER in kinds:
            changes["first_attn_norm"] = True
        changes |= {"kv_shared": None, "kv_shared_r": None}
        if REUSED_KV in kinds:  # (no keys or values of its own; Gemma 4's double-wide MLP)
            wide = self.spec.kv_shared_r or self.spec.r
            changes |= {"kv_reused": True, "r": wide}
            changes |= {"shared_r": wide} if self.spec.expert_norms else {}  # (Gemma 4's MLP beside its experts)
        for kind in kinds:  # (Gemma 3n's feedforwards, each of its own size and sparsity)
            if kind.startswith(SIZE):
                changes["r"] = int(kind.removeprefix(SIZE))
            elif kind.startswith(SPARSE):
                changes["sparsity_layers"] = (float(kind.removeprefix(SPARSE)),)
            elif kind.startswith(NORM):
                changes["norm"] = kind.removeprefix(NORM)
            elif kind.startswith(NGRAM):
                changes["ngram_table"] = None if kind == f"{NGRAM}None" else int(kind.removeprefix(NGRAM))
            elif kind.startswith(LATENTS):  # (the block's own kind, as a pattern of one; reuse: no latents of its own)
                own = kind.removeprefix(LATENTS)
                changes |= {"latent_layers": (own,), "kv_reused": own == "reuse"}
        if mixer is not None:  # (LFM2's short convolutions beside its attention blocks; the kind's own changes)
            changes["attention"] = mixer
            changes |= getattr(ATTENTIONS[mixer], "layer_changes", lambda spec: {})(self.spec)
        if HASHED in kinds:  # (DeepSeek-V4's first blocks: their experts chosen by the token's id)
            changes["router_hash"] = True
        if DENSE in kinds or NO_FEEDFORWARD in kinds:  # one feedforward of size r (or none): no experts
            changes |= {"E": None, "k": None} | {key: f.default for key, f in EXPERT_FIELDS.items()}
        if NO_FEEDFORWARD in kinds:  # (Nemotron-H's blocks of a mixer alone)
            changes["feedforward"] = "none"
        return replace(self.spec, **changes)

    def groups(self) -> list[Group]:
        """The stack's blocks, alike ones together, in the order each kind first appears."""
        if self.uniform:
            return [Group(self.spec, range(self.spec.N), ())]
        layers: dict[tuple[str, ...], list[int]] = {}
        for i in range(self.spec.N):
            layers.setdefault(self.kinds(i), []).append(i)
        return [Group(self._spec_of(kinds, len(found)), tuple(found), kinds) for kinds, found in layers.items()]

    def layer(self, i: int) -> Spec:
        """Block i's spec, N = 1: its shapes and kinds (its tensors, its window, its feedforward)."""
        if self.uniform:
            return self.spec
        return self._spec_of(self.kinds(i), 1)


def stacks(spec: Spec) -> list[Stack]:
    """The spec's stacks in weights-file order: an encoder-decoder's encoder first, then the blocks."""
    blocks = Stack("blocks", spec, "blocks.", "", reads_memory=spec.N_enc is not None)
    if spec.N_enc is None:
        return [blocks]
    return [Stack("encoder", encoder_spec(spec), "encoder.", "encoder_"), blocks]


def source_len(spec: Spec, n: int, n_src: int | None = None) -> int | None:
    """The source's length an encoder-decoder reads beside targets of n (default: n), None for one stack."""
    return (n_src or n) if spec.N_enc is not None else None


def without_encoder(spec: Spec) -> Spec:
    """An encoder-decoder's decoder as a one-stack spec: its blocks without the cross-attention."""
    return replace(spec, N_enc=None, cross_H=None, cross_m=None, cross_G=None, cross_bias=None, encoder=None)


def decoder(spec: Spec) -> Stack:
    """The stack that makes the output: the blocks (an encoder-decoder's decoder)."""
    return stacks(spec)[-1]


def encoder(spec: Spec) -> Stack | None:
    """An encoder-decoder's encoder, or None."""
    found = stacks(spec)
    return found[0] if len(found) > 1 else None


__all__ = ["Group", "Stack", "decoder", "encoder", "encoder_spec", "source_len", "stacks", "without_encoder"]
