"""GraniteMoeHybrid (GraniteMoeHybridForCausalLM, IBM's Granite 4): GraniteMoeShared's block (its four multipliers,
the experts of intermediate_size with the softmax of the top k router logits, the shared MLP of
shared_intermediate_size beside them) whose mixer is Mamba-2's state space (components/mamba2.py, under `mamba.`,
its keys Bamba's mamba_*) in the linear_attention layers of layer_types and attention in the full_attention ones.
Its attention turns by rotary positions only where position_embedding_type is "rope" (else it has none, as
Granite 4's published configs). With num_local_experts 0 the block's feedforward is the shared MLP alone, its gate
and up projections in one input_linear. rms_norm_eps is every norm's, the mixer's gated one's too. Its GGUF files
(granitehybrid) are families/hybrid_gguf.py's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..spec.definition import Spec
from ..spec.stacks import kind_of
from .bamba import DEFAULTS, NAMES, state_space
from .checkpoints import _LLAMA_GLOBALS
from .config_keys import shared_keys
from .expert_checkpoints import GRANITE_MOE_SHARED
from .gguf_layout import LLAMA_PERMUTED, LLAMA_REDO
from .granite import moe_shared, moe_shared_config
from .granite import spec as granite_spec
from .hybrid_gguf import GRANITE_HYBRID, GRANITE_HYBRID_EXPERTS, granite_hybrid_metadata, granite_hybrid_spec
from .keys import Keys
from .layout import Family
from .mamba2 import mixer_config, mixer_names
from .mamba_gguf import A_MADE, A_UNDONE
from .record import Gguf, Record

KINDS = {"linear_attention": "mamba2", "mamba": "mamba2", "full_attention": "standard", "attention": "standard"}


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (GraniteMoeHybridConfig's defaults: 8 experts, 2 chosen, a shared MLP of 1,024, every
    layer a state space's)."""
    N = c.count("num_hidden_layers", 32)
    experts = c.index("num_local_experts", 8)
    if experts:
        shared = Keys(c.data | {"shared_intermediate_size": c.count("shared_intermediate_size", 1024)}, c.source)
        out = moe_shared(shared) | {"expert_r": c.count("intermediate_size", 11008)}
    else:  # (the shared MLP alone: a gated feedforward of its size)
        out = granite_spec(c) | {"r": c.count("shared_intermediate_size", 1024)}
    if c.data.get("position_embedding_type") != "rope":
        out = {key: value for key, value in out.items() if not key.startswith("rope_")} | {"positional": "none"}
    kinds = c.data.get("layer_types", c.data.get("layers_block_type")) or ["linear_attention"] * N
    if not isinstance(kinds, list) or len(kinds) != N or not set(kinds) <= set(KINDS):
        raise c.fail("layer_types", kinds, f"a list of {N} 'linear_attention' or 'full_attention'")
    mixers = [KINDS[kind] for kind in kinds]
    layers = {} if set(mixers) == {"standard"} else {"mixer_layers": mixers}
    return out | state_space(c, NAMES, DEFAULTS) | layers


def config(spec: Spec) -> dict[str, Any]:
    """spec -> GraniteMoeHybrid's config.json (the experts' width as intermediate_size, the shared MLP's)."""
    kinds = [kind_of(spec.mixer_layers, i, spec.attention) for i in range(spec.N)]
    out = shared_keys(spec) | mixer_config(spec, NAMES)
    out["layer_types"] = ["linear_attention" if kind == "mamba2" else "full_attention" for kind in kinds]
    out["position_embedding_type"] = "rope" if spec.positional == "rope" else None
    if spec.E:
        return out | moe_shared_config(spec) | {"shared_intermediate_size": spec.shared_r or 0}
    dense = {"num_local_experts": 0, "shared_intermediate_size": spec.r, "intermediate_size": spec.r}  # (unread)
    return out | moe_shared_config(spec) | dense


_MAMBA = mixer_names("mamba.", "mamba.")
_GLOBALS = _LLAMA_GLOBALS
HYBRID = Family(
    GRANITE_MOE_SHARED.block,
    GRANITE_MOE_SHARED.names | _MAMBA,
    _GLOBALS,
    GRANITE_MOE_SHARED.fused,
    stacked=GRANITE_MOE_SHARED.stacked,
)
DENSE = Family(
    GRANITE_MOE_SHARED.block,
    {ours: theirs for ours, theirs in GRANITE_MOE_SHARED.names.items() if not ours.startswith("ff.")}
    | {"ff.W2": "shared_mlp.output_linear.weight"}
    | _MAMBA,
    _GLOBALS,
    fused=(("shared_mlp.input_linear.weight", ("ff.W1", "ff.W3"), lambda spec: 1),),
)


def _layout(config: Mapping[str, Any]) -> Family:
    return HYBRID if config.get("num_local_experts", 8) else DENSE


GGUF = Gguf(
    "granitehybrid",
    GRANITE_HYBRID,
    granite_hybrid_spec,
    granite_hybrid_metadata,
    base="none",
    transforms=LLAMA_PERMUTED | A_UNDONE,
    redo=LLAMA_REDO | A_MADE,
    experts=GRANITE_HYBRID_EXPERTS,
)
RECORD = Record(
    "granitemoehybrid",
    "GraniteMoeHybridForCausalLM",
    spec,
    HYBRID,
    config,
    GGUF,
    checkpoint_for=_layout,
)

__all__ = ["DENSE", "HYBRID", "RECORD"]
