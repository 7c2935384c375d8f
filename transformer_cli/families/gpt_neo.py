"""GPT-Neo (GPTNeoForCausalLM): GPT-2's block without score scaling, local and global layers; no GGUF
architecture."""

from __future__ import annotations

from typing import Any

from .checkpoints import GPT_NEO
from .keys import Keys
from .parts import CAUSAL_PRE, activation, whole_heads
from .record import Record


def spec(c: Keys) -> dict[str, Any]:
    """GPTNeoForCausalLM: GPT-2's block without score scaling, q/k/v without biases (out_proj with one), and
    attention_types alternating global layers with local ones of window_size (tfm's window: keys t - w + 1 .. t)."""
    d, N, H = c.count("hidden_size"), c.count("num_layers"), c.count("num_heads")
    kinds = c.data.get("attention_types", [[["global", "local"], N // 2]])
    try:
        layers = [kind for pattern, times in kinds for _ in range(times) for kind in pattern]
    except (TypeError, ValueError):
        raise c.fail("attention_types", kinds, "a list of [[kinds...], times] pairs") from None
    if len(layers) != N or not set(layers) <= {"global", "local"}:
        raise c.fail("attention_types", kinds, f"{N} layers of 'global' or 'local' (num_layers)")
    window: dict[str, Any] = {} if "local" not in layers else {"window": c.count("window_size", 256)}
    if window and "global" in layers:
        window["attention_layers"] = ["full" if kind == "global" else "sliding" for kind in layers]
    return (
        CAUSAL_PRE
        | window
        | {
            "N": N,
            "H": H,
            "m": whole_heads(c, d, H, "hidden_size", "num_heads"),
            "d": d,
            "r": c.count("intermediate_size", 4 * d),
            "V": c.count("vocab_size"),
            "tie_embeddings": c.flag("tie_word_embeddings", True),
            "scale": "none",
            "positional": "learned",
            "max_len": c.count("max_position_embeddings", 2048),
            "norm_eps": c.number("layer_norm_epsilon", 1e-5),
            "out_bias": True,
            "activation": activation(c, "activation_function", "gelu_new"),
        }
    )


RECORD = Record("gpt_neo", "GPTNeoForCausalLM", spec, GPT_NEO)

__all__ = ["RECORD"]
