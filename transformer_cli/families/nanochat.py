"""NanoChat (NanoChatForCausalLM, Karpathy's nanochat): LLaMA's attention turning its pairs the other way
(rotate_half as cat(x2, -x1): tfm's half_reversed), a plain MLP fc2(relu(fc1 x)^2) without biases, every norm an
RMS norm without a gain (the blocks', the queries' and keys' per head, the final one, which also normalises the
embedded tokens), the logits soft-capped at final_logit_softcapping (15), an untied head."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import _LLAMA_GLOBALS, _llama_names
from .config_keys import shared_keys
from .keys import Keys
from .layout import Family, linear_names
from .parts import llama_like
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec."""
    plain = llama_like(c, c.nullable_count("num_key_value_heads", None), None, 1e-6, False, 2048, act="relu2")
    cap = c.nullable_number("final_logit_softcapping", 15.0)
    out = plain | {
        "feedforward": "plain",
        "rope_pairing": "half_reversed",
        "attention_bias": c.flag("attention_bias", False),
    }
    out |= {"norm_affine": False, "qk_norm": True, "embed_norm": True}
    return out | ({"logit_softcap": cap} if cap is not None else {})


def config(spec: Spec) -> dict[str, Any]:
    """spec -> NanoChat's config.json."""
    out = shared_keys(spec) | {"attention_bias": spec.attention_bias, "hidden_act": spec.activation}
    return out | {"final_logit_softcapping": spec.logit_softcap}


NANOCHAT = Family(
    "model.layers.{i}.",
    {
        ours: theirs
        for ours, theirs in _llama_names().items()
        if ours.startswith("attention.W") or ours.startswith("attention.b")
    }
    | linear_names("ff.{}1", "mlp.fc1")
    | linear_names("ff.{}2", "mlp.fc2"),
    {k: v for k, v in _LLAMA_GLOBALS.items() if not k.startswith("final_norm")},
)
RECORD = Record("nanochat", "NanoChatForCausalLM", spec, NANOCHAT, config, config_alone=True)

__all__ = ["RECORD"]
