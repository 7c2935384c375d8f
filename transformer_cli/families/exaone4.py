"""EXAONE 4.0 (Exaone4ForCausalLM, LG AI Research): OLMo 2's block (each sublayer's output normalised before its
residual), RMSNorms of each query and key head, three sliding layers to one full by default (sliding_window_pattern
or layer_types), and the full layers without positions when the model slides (its "global NoPE"). Its GGUF file
(exaone4) is OLMo 2's names with the window and a flag per layer; tfm reads it as transformers runs the model, the
full layers unturned while there is a window. llama.cpp's exaone4 graph slides only at 64 layers (EXAONE-4.0-32B):
at other depths it runs such a file with every layer full and turning."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import OLMO2
from .config_keys import layer_types, shared_keys
from .gguf_keys import sliding_pattern, sliding_turning
from .keys import Keys
from .olmo2 import GGUF_LAYOUT
from .parts import llama_like, typed_layers
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    plain = llama_like(c, c.count("num_key_value_heads", 32), None, 1e-5, False, 2048)
    return plain | {"norm": "output", "qk_norm": True} | layer_kinds(c, plain["N"])


def layer_kinds(c: Keys, N: int) -> dict[str, Any]:
    """The layers' windows and positions (EXAONE 4 and EXAONE MoE): sliding_window_pattern (or layer_types) says
    which slide; only the sliding ones turn while the model has a window."""
    window, kinds = c.nullable_count("sliding_window", 4096), c.data.get("layer_types")
    if window is None:  # no window: every layer full and turning (transformers needs layer_types then)
        if kinds is None:
            raise c.refuse("sliding_window", None, "without layer_types transformers 5.24 cannot build it")
        return {}
    if kinds is None:
        every = c.data.get("sliding_window_pattern", 4)
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise c.refuse("sliding_window_pattern", every, "transformers 5.24 builds a whole number of layers only")
        kinds = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(N)]
    layers = typed_layers(c, N, window, kinds)
    turning = ["rope" if kind == "sliding_attention" else "nope" for kind in kinds]
    return layers | {"positional_layers": turning}


def config(spec: Spec) -> dict[str, Any]:
    """spec -> EXAONE 4's config.json (the layers' kinds always, as layer_types)."""
    return shared_keys(spec) | {"sliding_window": spec.window, "layer_types": layer_types(spec), "hidden_act": "silu"}


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """LLaMA's sizes and rotary, the norms after each sublayer, a norm per query and key head, the layers' kinds:
    while there is a window, the sliding layers turn and the full ones do not."""
    return spec | {"norm": "output", "qk_norm": True} | sliding_turning(c, spec["N"], 4)


def gguf_metadata(spec: Spec) -> dict[str, Any]:
    """The window (a model without one: none) and each layer's flag."""
    return sliding_pattern(spec)


GGUF = Gguf("exaone4", GGUF_LAYOUT, gguf_spec, gguf_metadata)
RECORD = Record("exaone4", "Exaone4ForCausalLM", spec, OLMO2, config, GGUF, config_alone=True)

__all__ = ["RECORD"]
