"""Zamba2 (Zamba2ForCausalLM): every layer a Mamba-2 mixer after an RMSNorm (components/mamba2.py); its "hybrid"
layers (layers_block_type) first run one of num_mem_blocks shared transformer blocks on [the stream; the token
embeddings], whose output goes through the layer's own linear into the mixer's norm (components/memory.py, mixer
kind mamba2_memory). The shared blocks' attention has H heads of 2d / H over the 2d rows (its scores scaled by
(m / 2)^-1/2, rotary positions only with use_mem_rope), its MLP a gated gelu of intermediate_size (default 4d),
and each use its own LoRA adapters of adapter_rank on the MLP's gate and up rows (and on q, k and v with
use_shared_attention_adapter). No feedforward outside the shared blocks, a final RMSNorm, a tied head.

As transformers 5.24 builds it: the mixer's convolution always has a bias (use_conv_bias is not read), its
activations are silu (hidden_act is the shared MLP's), a prefill's steps are clamped at time_step_min (tfm clamps
a decoding step's too: ssm_dt_min), and the use k >= num_mem_blocks shares block k mod num_mem_blocks' weights only
where the embeddings are tied; its files hold each shared block once, at its first use's layer, with every use's
adapters. Refused in one line: untied embeddings (every hybrid layer then has a block of its own, whose weights a
saved folder does not hold), and keys and values of fewer heads with the attention's adapters (transformers'
adapters are 2d wide: it fails). The mixer's gated norm's eps is 1e-5 whatever rms_norm_eps (linear_norm_eps)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..spec.definition import Spec
from .keys import Keys
from .layout import Family
from .mamba2 import mixer_keys, mixer_names
from .parts import activation, rope
from .record import Record

NAMES = {
    "heads": "n_mamba_heads",
    "head_dim": "mamba_headdim",
    "state": "mamba_d_state",
    "groups": "mamba_ngroups",
    "kernel": "mamba_d_conv",
    "expand": "mamba_expand",
    "bias": "add_bias_linear",
    "conv_bias": "use_conv_bias",
    "act": "mamba_hidden_act",  # (none: the mixer's activations are silu whatever hidden_act says)
}
DEFAULTS = {"heads": 8, "state": 64, "groups": 1, "kernel": 4, "expand": 2, "bias": False, "conv_bias": True}


def kinds(config: Mapping[str, Any]) -> list[str]:
    """Each layer's kind as Zamba2Config makes them: "hybrid" or not (legacy "mamba": a Mamba-2 layer)."""
    listed = config.get("layers_block_type", config.get("layer_types"))
    if listed is None:
        listed = ["m"] + (["m"] * 5 + ["hybrid"]) * 7 + ["m"] * 4 + ["hybrid"] + ["m"] * 3 + ["hybrid"] + ["m"] * 2
    return ["hybrid" if kind == "hybrid" else "linear_attention" for kind in listed]


def spec(c: Keys) -> dict[str, Any]:
    """config.json -> spec (Zamba2Config's defaults: Zamba2-2.7B's 54 layers of 2560, 9 of them hybrid)."""
    d, N, H = c.count("hidden_size", 2560), c.count("num_hidden_layers", 54), c.count("num_attention_heads", 32)
    layers = kinds(c.data)
    if len(layers) != N:
        raise c.fail("layers_block_type", c.data.get("layers_block_type"), f"{N} layers' kinds")
    if not c.flag("tie_word_embeddings", True):
        raise c.refuse("tie_word_embeddings", False, "transformers then gives each hybrid layer a block of its own")
    eps = c.number("rms_norm_eps", 1e-5)
    c.ignored("use_conv_bias", "gives the mixer's convolution a bias whatever it says", unless=True)
    defaults = DEFAULTS | {"head_dim": int(c.number("mamba_expand", 2) * d) // c.count("n_mamba_heads", 8)}
    keys = Keys({k: v for k, v in c.data.items() if k != "use_conv_bias"}, c.source, notes=c.notes)
    m = 2 * d // H
    G = c.nullable_count("num_key_value_heads", H) or H
    adapters = c.flag("use_shared_attention_adapter", False)
    if adapters and G != H:
        raise c.refuse("num_key_value_heads", G, f"{H} with use_shared_attention_adapter (its adapters are 2d wide)")
    positions = c.count("max_position_embeddings", 4096)
    rotary = rope(c, positions, m, 10000.0) if c.flag("use_mem_rope", False) else {"positional": "none"}
    out = mixer_keys(keys, d, NAMES, defaults) | rotary
    return out | {
        "N": N,
        "H": H,
        "G": G,
        "m": m,
        "d": d,
        "r": c.nullable_count("intermediate_size", 4 * d) or 4 * d,
        "V": c.count("vocab_size", 32000),
        "mask": "causal",
        "scale": (m / 2) ** -0.5,
        "norm": "pre",
        "norm_type": "rmsnorm",
        "norm_eps": eps,
        **({"linear_norm_eps": 1e-5} if eps != 1e-5 else {}),  # (the mixer's gated norm's, fixed)
        "attention": "mamba2",
        "mixer_layers": ["mamba2_memory" if kind == "hybrid" else "mamba2" for kind in layers],
        "feedforward": "none",
        "activation": activation(c, "hidden_act", "gelu"),
        "ff_bias": c.flag("add_bias_linear", False),
        "ssm_dt_min": c.number("time_step_min", 0.001),
        "mem_blocks": c.count("num_mem_blocks", 1),
        "mem_rank": c.count("adapter_rank", 128),
        "mem_qkv_adapters": adapters,
        "tie_embeddings": True,
    }


def config(spec: Spec) -> dict[str, Any]:
    """spec -> Zamba2's config.json."""
    layers = spec.mixer_layers or (spec.attention,)
    out: dict[str, Any] = {
        "hidden_size": spec.d,
        "num_hidden_layers": spec.N,
        "vocab_size": spec.V,
        "num_attention_heads": spec.H,
        "num_key_value_heads": spec.kv_heads,
        "intermediate_size": spec.r,
        "hidden_act": "gelu" if spec.activation == "gelu_exact" else spec.activation,
        "layers_block_type": [
            "hybrid" if layers[i % len(layers)] == "mamba2_memory" else "linear_attention" for i in range(spec.N)
        ],
        "n_mamba_heads": spec.ssm_heads,
        "mamba_d_state": spec.ssm_state,
        "mamba_ngroups": spec.ssm_groups,
        "mamba_d_conv": spec.conv_kernel,
        "mamba_expand": (spec.ssm_heads or 0) * (spec.ssm_head_dim or 0) // spec.d,
        "add_bias_linear": spec.ff_bias,
        "time_step_min": spec.ssm_dt_min,
        "num_mem_blocks": spec.mem_blocks,
        "adapter_rank": spec.mem_rank,
        "use_shared_attention_adapter": spec.mem_qkv_adapters,
        "use_mem_rope": spec.positional == "rope",
        "rms_norm_eps": spec.norm_eps,
        "tie_word_embeddings": True,
    }
    if spec.positional == "rope":
        out["rope_parameters"] = {"rope_type": "default", "rope_theta": spec.rope_theta}
    return out


BLOCK = mixer_names("mamba.", "mamba.") | {"norm1.gamma": "input_layernorm.weight"}
BLOCK |= mixer_names("memory.mamba.", "mamba_decoder.mamba.")
BLOCK |= {"memory.norm.gamma": "mamba_decoder.input_layernorm.weight", "memory.W_out": "linear.weight"}
GLOBALS = {
    "embedding.E": "model.embed_tokens.weight",
    "final_norm.gamma": "model.final_layernorm.weight",
    "head.W": "lm_head.weight",
}
SHARED = {  # a shared block's tensors under its first use's layer
    "norm_in.gamma": "input_layernorm.weight",
    "attention.W_Q": "self_attn.q_proj.weight",
    "attention.W_K": "self_attn.k_proj.weight",
    "attention.W_V": "self_attn.v_proj.weight",
    "attention.W_O": "self_attn.o_proj.weight",
    "norm_ff.gamma": "pre_ff_layernorm.weight",
    "ff.W_in": "feed_forward.gate_up_proj.weight",
    "ff.b_in": "feed_forward.gate_up_proj.bias",
    "ff.W2": "feed_forward.down_proj.weight",
    "ff.b2": "feed_forward.down_proj.bias",
}
ADAPTERS = {"ff": "feed_forward.gate_up_proj_adapter_list"}
ADAPTERS |= {x: f"self_attn.linear_{x}_adapter_list" for x in "qkv"}


def checkpoint(config: Mapping[str, Any]) -> Family:
    """The layout of a config's files: the blocks' names, and the shared blocks' and adapters' at the layers of
    their first uses (use k's adapters held by the block it runs, k mod num_mem_blocks)."""
    hybrid = [i for i, kind in enumerate(kinds(config)) if kind == "hybrid"]
    blocks = int(config.get("num_mem_blocks", 1) or 1)
    globals_ = dict(GLOBALS)
    for j, layer in enumerate(hybrid[:blocks]):
        globals_ |= {f"memory.{j}.{ours}": f"model.layers.{layer}.shared_transformer.{x}" for ours, x in SHARED.items()}
    for k in range(len(hybrid)):
        held = f"model.layers.{hybrid[k % blocks]}.shared_transformer."
        for part, name in ADAPTERS.items():
            globals_ |= {
                f"adapters.{k}.{part}.W_{x}": f"{held}{name}.{k}.{y}.weight" for x, y in (("down", 0), ("up", 1))
            }
    return Family("model.layers.{i}.", BLOCK, globals_)


RECORD = Record(
    "zamba2", "Zamba2ForCausalLM", spec, checkpoint({}), config, config_alone=True, checkpoint_for=checkpoint
)

__all__ = ["RECORD"]
