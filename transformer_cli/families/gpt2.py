"""GPT-2 (GPT2LMHeadModel): learned positions, LayerNorms, biases everywhere, Conv1D layers stored (in, out); its
GGUF file stores them (out, in) as every GGUF weight is, the fused attn_qkv rows [Q; K; V] as Hugging Face has them,
and a feedforward of 4 d (the converter writes that, whatever n_inner said). GPTBigCode (StarCoder 1, SantaCoder):
GPT-2's block in linear layers with one key/value head (multi_query); its GGUF file (starcoder) is GPT-2's names.
The converter writes head_count_kv 1 and a feedforward of 4 d whatever the model's: tfm reads both from the
tensors (attn_qkv's rows, ffn_up's), so a file of many key/value heads or another n_inner, which llama.cpp refuses
to load, still reads as the model it holds."""

from __future__ import annotations

from typing import Any

from ..spec.definition import Spec
from .checkpoints import GPT2, GPT_BIGCODE
from .gguf_keys import rows
from .gguf_layout import GLOBALS_WITH_BIAS, PLAIN_BLOCK, QKV_FUSED
from .keys import REQUIRED, Keys
from .layout import Family, norm_names
from .parts import CAUSAL_PRE, activation, whole_heads
from .record import Gguf, Record


def spec(c: Keys) -> dict[str, Any]:
    """GPT2LMHeadModel: learned positions, LayerNorm, biases everywhere, Conv1D layers (same counts)."""
    d, N = c.count("n_embd", REQUIRED, "hidden_size"), c.count("n_layer", REQUIRED, "num_hidden_layers")
    H = c.count("n_head", REQUIRED, "num_attention_heads")
    if c.flag("scale_attn_by_inverse_layer_idx", False) and N > 1:
        raise c.refuse("scale_attn_by_inverse_layer_idx", True, "block i's scores times 1/(i+1); tfm's scale is one")
    if c.flag("add_cross_attention", False):
        raise c.refuse("add_cross_attention", True, "cross-attention layers; tfm's blocks attend to themselves")
    # reorder_and_upcast_attn only computes the same scores in float32: the same function, nothing to map
    return CAUSAL_PRE | {
        "N": N,
        "H": H,
        "m": whole_heads(c, d, H, "n_embd", "n_head"),
        "d": d,
        "r": c.count("n_inner", 4 * d),
        "V": c.count("vocab_size"),
        "tie_embeddings": c.flag("tie_word_embeddings", True),
        "scale": "sqrt" if c.flag("scale_attn_weights", True) else "none",
        "positional": "learned",
        "max_len": c.count("n_positions", 1024, "max_position_embeddings"),
        "norm_eps": c.number("layer_norm_epsilon", 1e-5),
        "attention_bias": True,
        "activation": activation(c, "activation_function", "gelu_new"),
    }


def bigcode(c: Keys) -> dict[str, Any]:
    """GPTBigCodeForCausalLM (StarCoder 1, SantaCoder): GPT-2's block in linear layers, its keys and values one head
    shared by every query head (multi_query), gelu (tanh) by default."""
    keys = {"activation_function": "gelu_pytorch_tanh"}
    base = spec(Keys(keys | c.data, c.source, notes=c.notes))
    return base | ({"G": 1} if c.flag("multi_query", True) and base["H"] > 1 else {})


def bigcode_config(spec: Spec) -> dict[str, Any]:
    """spec -> GPTBigCode's config.json."""
    return config(spec) | {"multi_query": spec.kv_heads == 1, "activation_function": "gelu_pytorch_tanh"}


def config(spec: Spec) -> dict[str, Any]:
    """Every key of its config.json (GPT-2 names its sizes its own way)."""
    return {
        "vocab_size": spec.V,
        "n_embd": spec.d,
        "n_layer": spec.N,
        "n_head": spec.H,
        "n_positions": spec.max_len,
        "n_inner": spec.r,
        "layer_norm_epsilon": spec.norm_eps,
        "activation_function": "gelu_new",
        "tie_word_embeddings": spec.tie_embeddings,
    }


def gguf_spec(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """GPT-2: learned positions (position_embd), LayerNorms with biases, biases everywhere, gelu (tanh)."""
    spec = spec | {
        "positional": "learned",
        "norm_eps": c.number("attention.layer_norm_epsilon", 1e-5),
        "attention_bias": True,
        "activation": "gelu",
    }
    return spec | {"max_len": rows(header, "position_embd.weight", "the positions")}


GGUF_LAYOUT = Family(
    "blk.{i}.",
    PLAIN_BLOCK | norm_names("norm1", "attn_norm") | norm_names("norm2", "ffn_norm"),
    GLOBALS_WITH_BIAS | {"positional.P": "position_embd.weight"},
    fused=QKV_FUSED,
)


def gguf_bigcode(c: Keys, header: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """GPT-2's reader; the key/value heads and the feedforward as the tensors hold them."""
    spec, d, m = gguf_spec(c, header, spec), spec["d"], spec["m"]
    G = (rows(header, "blk.0.attn_qkv.weight", "the key/value heads") - d) // (2 * m)
    spec = {key: value for key, value in spec.items() if key != "G"} | ({"G": G} if G != spec["H"] else {})
    return spec | {"r": rows(header, "blk.0.ffn_up.weight", "the feedforward size")}


# the converter does not reorder c_attn: a file of many key/value heads holds [q; k; v] head by head, as HF's
_HEADS = GPT_BIGCODE.fused[0][2]
BIGCODE_LAYOUT = Family(
    GGUF_LAYOUT.block,
    GGUF_LAYOUT.names,
    GGUF_LAYOUT.globals_,
    fused=tuple((t, ours, _HEADS) for t, ours, _ in QKV_FUSED),
)
RECORDS = (
    Record(
        "gpt2",
        "GPT2LMHeadModel",
        spec,
        GPT2,
        config,
        Gguf("gpt2", GGUF_LAYOUT, gguf_spec, base="sizes"),
        aliases=((r"^(?!transformer\.)", "transformer."),),  # the hub's GPT-2 files have no "transformer." prefix
        config_alone=True,
    ),
    Record(
        "gpt_bigcode",
        "GPTBigCodeForCausalLM",
        bigcode,
        GPT_BIGCODE,
        bigcode_config,
        Gguf("starcoder", BIGCODE_LAYOUT, gguf_bigcode, base="sizes"),
        config_alone=True,
    ),
)

__all__ = ["RECORDS"]
